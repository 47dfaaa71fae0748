"""Why a public name of PyTorch 2.13 is not in ember (yet): the exclusion list of tests/test_api_coverage.py.

Each entry maps a reason (a backend ember does not have, or the issue that will bring the name) to the names it
covers, per namespace ("torch", "Tensor", "nn", "nn.functional", ...). Names that are not API at all are left out
by the test itself: modules from outside torch that PyTorch's namespaces happen to import (``os``, ``typing``
helpers), docstring fragments (strings, dicts), ``torch`` inside its own submodules.

The test fails when PyTorch has a public name that ember lacks and no entry covers, and when an entry names
something ember now has (the list only shrinks). When a name lands in ember, delete it here.
"""
from __future__ import annotations

EXCLUDED: dict[str, dict[str, str]] = {
    'TorchScript, C++ internals and build tooling: not planned (torch.jit stubs: issue 15 item 8)': {
        'torch': """
            AggregationType AliasDb AnyType Argument ArgumentSpec AVG AwaitType BenchmarkConfig
            BenchmarkExecutionStats Block BoolType BufferDict CallStack Capsule classproperty ClassType Code
            CompilationUnit compiled_with_cxx11_abi CompleteArgumentSpec ComplexType ConcreteModuleType
            ConcreteModuleTypeBuilder cpp DeepCopyMemoTable DeserializationStorageContext DeviceObjType DictType
            EnumType ErrorReport ExecutionPlan FatalError FileCheck FloatType fork FunctionSchema Future
            FutureType get_file_path Gradient Graph GraphExecutorState hub import_ir_module
            import_ir_module_from_buffer InferredType init_num_threads InterfaceType IntType IODescriptor
            JITException ListType LiteScriptModule LockingLogger LoggerBase merge_type_from_type_comment
            ModuleDict monitor Node NoneType NoopLogger NumberType OperatorInfo OptionalType ParameterDict
            parse_ir parse_schema parse_type_comment prepare_multiprocessing_environment PRIVATE_OPS
            PyObjectType PyTorchFileReader PyTorchFileWriter RRefType ScriptClass ScriptClassFunction ScriptDict
            ScriptDictIterator ScriptDictKeyIterator ScriptFunction ScriptList ScriptListIterator ScriptMethod
            ScriptModule ScriptModuleSerializer ScriptObject ScriptObjectProperty SerializationStorageContext
            StaticModule StreamObjType StringType SUM TensorType ThroughputBenchmark TracingState TupleType Type
            TYPE_CHECKING unify_type_list UnionType Use USE_GLOBAL_DEPS USE_RTLD_GLOBAL_WITH_LIBTORCH Value wait
        """,
        'nn.functional': """
            DType ScalingType SwizzleType
        """,
        'autograd': """
            DeviceType
        """,
        'utils': """
            ThroughputBenchmark backcompat backend_registration collect_env cpp_backtrace
            generate_methods_for_privateuse1_backend get_cpp_backtrace rename_privateuse1_backend set_module
            throughput_benchmark
        """,
    },
    'symbolic shapes, __torch_function__ machinery and dispatcher guards: issues 17 and 18': {
        'torch': """
            ExcludeDispatchKeyGuard SymBool SymBoolType
            SymFloat SymInt SymIntType Tag sym_constrain_range sym_constrain_range_for_size sym_float
            sym_fresh_size sym_int sym_ite sym_max sym_min sym_not sym_sqrt sym_sum
        """,
    },
    'quantization: issue 20 (eager mode is in; quint4x2 / quint2x4, the quantized RNN ops, quantizable modules '
    'and FX graph mode are not)': {
        'torch': """
            QUInt2x4Storage QUInt4x2Storage choose_qparams_optimized empty_quantized
            fused_moving_avg_obs_fake_quant quantized_batch_norm
            quantized_gru quantized_gru_cell quantized_lstm quantized_lstm_cell quantized_max_pool1d
            quantized_max_pool2d quantized_max_pool3d quantized_rnn_relu_cell quantized_rnn_tanh_cell quint2x4
            quint4x2
        """,
        'nn': """
            quantizable
        """,
    },
    "sparse tensors: the *_copy variants, legacy products (smm, hspmm, sspaddmm, dsmm) and resizing are not in ember": {
        'torch': """
            ccol_indices_copy col_indices_copy crow_indices_copy dsmm hsmm hspmm indices_copy native_norm
            resize_as_sparse_ row_indices_copy saddmm smm spmm sspaddmm values_copy
        """,
        'Tensor': """
            resize_as_sparse_ smm sparse_resize_ sparse_resize_and_clear_ sspaddmm
        """,
    },
    'fx, compile, export, library, func: issues 17 and 18 (importable stubs: issue 15 item 8)': {
        'torch': """
            classes package slice_inverse
        """,
        'Tensor': """
            index slice_inverse
        """,
    },
    'backend-specific: cuDNN, MIOpen, oneDNN, fbgemm, MPS, XPU, MTIA, IPU, XLA, HPU, Vulkan': {
        'torch': """
            cudnn_affine_grid_generator cudnn_batch_norm cudnn_convolution cudnn_convolution_add_relu
            cudnn_convolution_relu cudnn_convolution_transpose cudnn_grid_sampler cudnn_is_acceptable
            fbgemm_linear_fp16_weight fbgemm_linear_fp16_weight_fp32_activation fbgemm_linear_int8_weight
            fbgemm_linear_int8_weight_fp32_activation fbgemm_linear_quantize_weight fbgemm_pack_gemm_matrix_fp16
            fbgemm_pack_quantized_matrix is_vulkan_available miopen_batch_norm miopen_convolution
            miopen_convolution_add_relu miopen_convolution_relu miopen_convolution_transpose miopen_ctc_loss
            miopen_depthwise_convolution miopen_rnn mkldnn_adaptive_avg_pool2d mkldnn_convolution
            get_autocast_ipu_dtype get_autocast_xla_dtype is_autocast_ipu_enabled is_autocast_xla_enabled
            set_autocast_ipu_dtype set_autocast_ipu_enabled set_autocast_xla_dtype set_autocast_xla_enabled
            mkldnn_linear_backward_weights mkldnn_max_pool2d mkldnn_max_pool3d mps mtia xpu
        """,
        'Tensor': """
            ipu is_mkldnn mtia to_mkldnn xpu
        """,
    },
    "SyncBatchNorm's CUDA-only kernels (PyTorch's CPU build refuses them; ember's SyncBatchNorm computes the "
    "same statistics with tensor ops) and the legacy is_distributed": {
        'torch': """
            batch_norm_backward_elemt batch_norm_backward_reduce batch_norm_elemt batch_norm_gather_stats
            batch_norm_gather_stats_with_counts batch_norm_stats batch_norm_update_stats is_distributed
        """,
        'Tensor': """
            is_distributed
        """,
    },
    'nested / jagged tensors: a later issue': {
        'torch': """
            jagged nested
        """,
        'Tensor': """
            is_nested to_padded_tensor
        """,
    },
    "the profiler: the C++ profiler's own classes and the legacy module; CUPTI (GPU) settings": {
        'torch': """
            profiler_allow_cudagraph_cupti_lazy_reinit_cuda12
        """,
        'autograd': """
            ProfilerConfig ProfilerEvent ProfilerState profiler_legacy
        """,
    },
    'datapipes: deprecated in PyTorch (torchdata), not planned': {
        'utils.data': """
            DFIterDataPipe DataChunk IterDataPipe MapDataPipe argument_validation datapipes functional_datapipe
            graph graph_settings guaranteed_datapipes_determinism non_deterministic runtime_validation
            runtime_validation_disabled
        """,
    },
    'sub-byte, bit-packed and complex32 dtypes (almost no operators in PyTorch, no NumPy array type): not planned': {
        'torch': """
            bit bits16 bits1x8 bits2x4 bits4x2 bits8 chalf complex32 float4_e2m1fn_x2 int1 int2 int3 int4 int5
            int6 int7 uint1 uint2 uint3 uint4 uint5 uint6 uint7
        """,
        'Tensor': """
            chalf
        """,
    },
    "prototype APIs (torch.masked's MaskedTensor, segment_reduce): not planned while in prototype": {
        'torch': """
            masked segment_reduce
        """,
    },
    'float8-scaled and grouped (mixture-of-experts) matrix products: issue 20': {
        'nn.functional': """
            grouped_mm scaled_grouped_mm scaled_mm
        """,
    },
    'the einops-style rearrange of torch.func (a wrapper of the einops package): not planned': {
        'func': """
            rearrange
        """,
    },
    'unusable in PyTorch 2.13 itself (NestedIOFunction: its legacy _do_forward machinery is gone): not planned': {
        'autograd': """
            NestedIOFunction
        """,
    },
}
