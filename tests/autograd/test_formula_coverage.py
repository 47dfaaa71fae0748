"""Every differentiable operator of native_functions.yaml has a derivative formula (PyTorch's rule for
derivatives.yaml): an op without one is listed below with the reason, and a listed op that gains a formula
must leave the list."""
from __future__ import annotations

from tools.codegen.gen import YAML_PATH
from tools.codegen.gen_autograd import formula_coverage
from tools.codegen.model import load_native_functions

_COMPARISONS = [f"{op}.{o}" for op in ("eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less",
                                       "less_equal", "not_equal") for o in ("Scalar", "Tensor")]
_BITWISE = [f"bitwise_{op}.{o}" for op in ("and", "or", "xor") for o in ("Scalar", "Tensor")] + \
    [f"bitwise_{op}.{o}" for op in ("left_shift", "right_shift") for o in ("Tensor_Scalar", "Tensor")] + ["bitwise_not"]

NO_FORMULA = {
    # bool or integer results: nothing to differentiate (the autograd fallback attaches no node to them)
    *_COMPARISONS, *_BITWISE, "logical_and", "logical_or", "logical_xor", "logical_not", "isinf", "isnan",
    "isneginf", "isposinf", "signbit", "all", "all.dim", "all.dims", "any", "any.dim", "any.dims", "argmax", "argmin",
    "nonzero", "bincount", "bucketize.Tensor", "searchsorted.Scalar",
    "searchsorted.Tensor", "count_nonzero", "count_nonzero.dim_IntList", "repeat_interleave.Tensor",
    "_nnz", "_dimI", "_dimV", "sparse_dim", "dense_dim", "is_coalesced",
    # a Python number, not a tensor (what Tensor.item() dispatches to under a mode; a size an exported graph reads)
    "_local_scalar_dense", "sym_size.int",
    # the only tensor argument is the bool condition
    "where.Scalar",
    # no derivative in PyTorch either: its autograd fallback attaches a NotImplemented node, and so does ember's
    # ("derivative for aten::floor_divide is not implemented" at backward)
    "floor_divide.Scalar", "floor_divide", "remainder.Scalar_Tensor", "scatter.reduce",
    "grid_sampler_2d_backward", "grid_sampler_3d_backward", "_ctc_loss_backward", "_sample_dirichlet",
    "_dirichlet_grad", "_histogramdd_bin_edges", "_histogramdd_from_bin_cts", "_histogramdd_from_bin_tensors",
    "linalg_ldl_factor_ex", "linalg_ldl_solve", "_sobol_engine_draw",
    # called only for a weight that needs no gradient (PyTorch has no formula either)
    "_embedding_bag_forward_only",
    # a bool result; no result at all (the error check after an *_ex operator)
    "equal", "allclose", "is_same_size", "_linalg_check_errors",
    # quantized tensors carry no gradient: PyTorch has no formulas for these either (a quantized result is not
    # floating point; dequantize of a float tensor that requires grad gets the NotImplemented node in both)
    "quantize_per_tensor", "quantize_per_tensor.tensor_qparams", "quantize_per_tensor.tensors",
    "quantize_per_tensor_dynamic", "quantize_per_channel", "dequantize.self", "dequantize.tensors", "int_repr",
    "q_scale", "q_zero_point", "q_per_channel_scales", "q_per_channel_zero_points", "q_per_channel_axis", "qscheme",
    "_make_per_tensor_quantized_tensor", "_make_per_channel_quantized_tensor", "_empty_per_channel_affine_quantized",
    "_quantized_linear", "_quantized_linear_dynamic", "_quantized_conv", "_quantized_add",
    "_quantized_rnn_layer_dynamic",
    # backward kernels, called by formulas with grad mode off; create_graph=True takes ops-level formulas
    # instead (batch norm, layer norm, the fused CPU attention). Double backward of convolution and of the fused
    # RNN layer is not written yet (README, "Not yet"): backward with create_graph=True reports it through the
    # fallback.
    "native_batch_norm_backward", "native_layer_norm_backward", "convolution_backward", "_rnn_layer_backward",
    "mkldnn_rnn_layer_backward",
    "_scaled_dot_product_flash_attention_for_cpu_backward",
    # sparse backward kernels (PyTorch has no double backward for them either)
    "_sparse_sum_backward", "_sparse_softmax_backward_data", "_sparse_log_softmax_backward_data",
}


def test_every_differentiable_op_has_a_formula():
    nfs = {nf.schema.full_name: nf for nf in load_native_functions(YAML_PATH)}
    _, missing = formula_coverage(list(nfs.values()))
    # factories (no tensor argument) have nothing to differentiate
    missing = {n for n in missing if any(a.type.base == "Tensor" for a in nfs[n].schema.arguments)}
    unexplained = sorted(missing - NO_FORMULA)
    assert not unexplained, f"differentiable ops without a formula in derivatives.yaml: {unexplained}"
    stale = sorted(NO_FORMULA - missing)
    assert not stale, f"these have a formula (or no longer exist): remove them from NO_FORMULA: {stale}"
