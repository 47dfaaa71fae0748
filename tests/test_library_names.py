"""Private and rarely used names of PyTorch that libraries built on it import (torchvision, timm, ultralytics,
torchmetrics, lightning): each exists at PyTorch's path and behaves as PyTorch's does."""
import importlib
import warnings

import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

NAMES = {
    "nn.modules.conv": ["_ConvNd", "_ConvTransposeNd", "_LazyConvXdMixin"],
    "nn.modules.batchnorm": ["_BatchNorm", "_NormBase", "_LazyNormBase"],
    "nn.modules.padding": ["_ReflectionPadNd", "_ReplicationPadNd", "_CircularPadNd", "_ConstantPadNd"],
    "nn.modules.pooling": ["_MaxPoolNd", "_AvgPoolNd", "_AdaptiveAvgPoolNd", "_AdaptiveMaxPoolNd"],
    "nn.modules.loss": ["_Loss", "_WeightedLoss"],
    "nn.modules.utils": ["_pair", "_single", "_triple", "_quadruple", "_ntuple"],
    "optim.lr_scheduler": ["_LRScheduler", "LRScheduler", "_enable_get_lr_call", "_warn_get_lr_called_within_step"],
    "optim.optimizer": ["required", "ParamsT", "_use_grad_for_differentiable", "_get_value",
                        "_default_to_fused_or_foreach", "_get_capturable_supported_devices",
                        "_get_scalar_dtype", "_stack_if_compiling", "_view_as_real", "_to_scalar",
                        "_disable_dynamo_if_unsupported", "_foreach_doc", "_fused_doc", "_maximize_doc",
                        "_capturable_doc", "_differentiable_doc"],
    "utils.data.dataloader": ["_DatasetKind", "_BaseDataLoaderIter", "_SingleProcessDataLoaderIter",
                              "_MultiProcessingDataLoaderIter", "default_collate", "get_worker_info"],
    "utils._foreach_utils": ["_get_foreach_kernels_supported_devices", "_get_fused_kernels_supported_devices",
                             "_group_tensors_by_device_and_dtype"],
    "jit": ["TracerWarning", "script_if_tracing", "_overload_method", "is_scripting", "is_tracing"],
}


@pytest.mark.parametrize("module", sorted(NAMES))
def test_names_exist_where_pytorch_has_them(module):
    mine = importlib.import_module(f"ember.{module}")
    theirs = importlib.import_module(f"torch.{module}")
    for name in NAMES[module]:
        assert hasattr(theirs, name), f"torch.{module}.{name} (the list is PyTorch's names)"
        assert hasattr(mine, name), f"ember.{module}.{name}"


def test_lazy_bases_are_the_lazy_modules_bases():
    from ember.nn.modules.batchnorm import _LazyNormBase
    from ember.nn.modules.conv import _LazyConvXdMixin
    assert isinstance(ember.nn.LazyConv2d(4, 3), _LazyConvXdMixin)
    assert isinstance(ember.nn.LazyBatchNorm2d(), _LazyNormBase)
    assert not isinstance(ember.nn.Conv2d(1, 4, 3), _LazyConvXdMixin)


def test_lr_scheduler_private_names():
    for lib in (torch, ember):
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=1.0)
        sched = lib.optim.lr_scheduler.StepLR(opt, 1)
        m = lib.optim.lr_scheduler
        assert not isinstance(sched, m._LRScheduler) and issubclass(m._LRScheduler, m.LRScheduler)
        with pytest.warns(UserWarning, match="please use `get_last_lr"):
            m._warn_get_lr_called_within_step(sched)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with m._enable_get_lr_call(sched):
                m._warn_get_lr_called_within_step(sched)
        assert sched._get_lr_called_within_step is False


def test_optimizer_helpers_answer_as_pytorchs():
    for lib in (torch, ember):
        o = importlib.import_module(f"{lib.__name__}.optim.optimizer")
        p = lib.nn.Parameter(lib.ones(3))
        assert o._default_to_fused_or_foreach([p, None], differentiable=False) == (False, False)   # CPU: loop
        assert o._default_to_fused_or_foreach([p], differentiable=False, use_fused=True) == (True, False)
        assert o._default_to_fused_or_foreach([p], differentiable=True, use_fused=True) == (False, False)
        assert o._default_to_fused_or_foreach([lib.ones(2, dtype=lib.int64)], False, True) == (False, False)
        assert o._get_capturable_supported_devices() == ["cuda", "xpu", "hpu", "privateuseone", "xla"]
        assert o._get_capturable_supported_devices(supports_xla=False)[-1] == "privateuseone"
        assert o._get_value(lib.tensor(2.5)) == 2.5 and o._get_value(3) == 3
        assert o._get_scalar_dtype() == lib.float32 and o._get_scalar_dtype(is_fused=True) == lib.float32
        assert o._to_scalar(lib.tensor([2.0])).dim() == 0 and o._to_scalar(0.5) == 0.5
        params, grads = [lib.ones(2, dtype=lib.complex64), lib.ones(2)], [lib.ones(2, dtype=lib.complex64), lib.ones(2)]
        o._view_as_real(params, grads)
        assert tuple(params[0].shape) == (2, 2) and tuple(grads[0].shape) == (2, 2) and tuple(params[1].shape) == (2,)

        class Opt(o.Optimizer):
            def __init__(self, params, differentiable=False):
                super().__init__(params, dict(lr=0.1, differentiable=differentiable))

            @o._use_grad_for_differentiable
            def step(self):
                """The step."""
                return lib.is_grad_enabled()

        assert Opt([p]).step() is False and Opt([p], differentiable=True).step() is True
        assert lib.is_grad_enabled() and Opt.step.__doc__ == "The step."


def test_group_tensors_by_device_and_dtype():
    def groups(lib):
        a, b, c = lib.ones(2), lib.ones(3, dtype=lib.float64), lib.zeros(1)
        out = lib.optim.Optimizer._group_tensors_by_device_and_dtype([[a, b, c], [c, a, b]], with_indices=True)
        return {(str(dev), str(dt).split(".")[1]): ([[tuple(t.shape) for t in lst] for lst in lists], idx)
                for (dev, dt), (lists, idx) in out.items()}
    assert groups(ember) == groups(torch)
    assert groups(ember) == {("cpu", "float32"): ([[(2,), (1,)], [(1,), (3,)]], [0, 2]),
                             ("cpu", "float64"): ([[(3,)], [(2,)]], [1])}


def test_dataset_kind_and_fetchers():
    from ember.utils.data.dataloader import _DatasetKind
    data = ember.utils.data.TensorDataset(ember.arange(5.0))
    loader = ember.utils.data.DataLoader(data, batch_size=2)
    assert loader._dataset_kind == _DatasetKind.Map == 0 and iter(loader)._dataset_kind == 0
    fetcher = _DatasetKind.create_fetcher(_DatasetKind.Map, data, True, loader.collate_fn, False)
    assert fetcher.fetch([0, 3])[0].tolist() == [0.0, 3.0]

    class Stream(ember.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(3))
    assert ember.utils.data.DataLoader(Stream())._dataset_kind == _DatasetKind.Iterable == 1
