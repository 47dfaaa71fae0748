"""Lazy modules (``torch/nn/modules/lazy.py`` and the ``Lazy*`` classes of linear, conv, batchnorm and
instancenorm): layers whose input size is read from the first input they see.

Until then their parameters are ``UninitializedParameter``s (buffers ``UninitializedBuffer``s). A forward
pre-hook calls ``initialize_parameters(input)``, which materializes them with the inferred shapes and runs the
layer's ``reset_parameters`` (so, for the same seed, the values are those of the eager layer built at that
moment); the module then becomes an instance of ``cls_to_become`` (``LazyLinear`` -> ``Linear``). Loading a
state dict into a lazy module materializes its parameters with the loaded shapes; saving keeps the uninitialized
ones as they are.
"""
from __future__ import annotations

import itertools
from typing import Any

import ember
from ember.nn.modules.batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from ember.nn.modules.conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ember.nn.modules.instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from ember.nn.modules.linear import Linear
from ember.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    """What every lazy module shares: the hooks that infer the parameters on the first forward and on loading."""

    cls_to_become: Any = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)  # type: ignore[attr-defined]
        self._initialize_hook = self.register_forward_pre_hook(  # type: ignore[attr-defined]
            _infer_parameters, with_kwargs=True)

    def _save_to_state_dict(self, destination: Any, prefix: Any, keep_vars: Any) -> None:
        for name, param in self._parameters.items():  # type: ignore[attr-defined]
            if param is not None:
                destination[prefix + name] = param if (keep_vars or is_lazy(param)) else param.detach()
        for name, buf in self._buffers.items():  # type: ignore[attr-defined]
            if buf is not None and name not in self._non_persistent_buffers_set:  # type: ignore[attr-defined]
                destination[prefix + name] = buf if (keep_vars or is_lazy(buf)) else buf.detach()

    def _lazy_load_hook(self, state_dict: Any, prefix: Any, local_metadata: Any, strict: Any, missing_keys: Any,
                        unexpected_keys: Any, error_msgs: Any) -> None:
        """Loading initialized values into a lazy module materializes its parameters with their shapes."""
        for name, param in itertools.chain(self._parameters.items(),  # type: ignore[attr-defined]
                                           self._buffers.items()):  # type: ignore[attr-defined]
            key = prefix + name
            if key in state_dict and param is not None and is_lazy(param) and not is_lazy(state_dict[key]):
                with ember.no_grad():
                    param.materialize(state_dict[key].shape)

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        return any(is_lazy(p) for p in itertools.chain(self._parameters.values(),  # type: ignore[attr-defined]
                                                        self._buffers.values()))  # type: ignore[attr-defined]

    def _replicate_for_data_parallel(self) -> Any:
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. Run a dummy "
                           "forward pass to correctly initialize the modules")


def _infer_parameters(module: Any, args: Any, kwargs: Any = None) -> None:
    """The forward pre-hook of a lazy module: materialize, then become the eager class."""
    module.initialize_parameters(*args, **(kwargs or {}))
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
    module._initialize_hook.remove()
    module._load_hook.remove()
    del module._initialize_hook
    del module._load_hook
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """``Linear`` whose ``in_features`` is the last dim of its first input."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Any) -> None:  # noqa: A002
        if self.has_uninitialized_params():
            with ember.no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvXdMixin(LazyModuleMixin):
    """Lazy convolutions: ``in_channels`` is the input's channel dim (dim 1, or 0 for an unbatched input)."""

    _nd: int

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:  # type: ignore[attr-defined]
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, input: Any, *args: Any, **kwargs: Any) -> None:  # noqa: A002
        if not self.has_uninitialized_params():
            return
        unbatched = input.dim() == self._nd + 1
        self.in_channels = input.shape[0] if unbatched else input.shape[1]
        if self.in_channels % self.groups != 0:  # type: ignore[attr-defined]
            raise ValueError("in_channels must be divisible by groups")
        k = tuple(self.kernel_size)  # type: ignore[attr-defined]
        if self.transposed:  # type: ignore[attr-defined]
            shape = (self.in_channels, self.out_channels // self.groups) + k  # type: ignore[attr-defined]
        else:
            shape = (self.out_channels, self.in_channels // self.groups) + k  # type: ignore[attr-defined]
        with ember.no_grad():
            self.weight.materialize(shape)  # type: ignore[attr-defined]
            if self.bias is not None:  # type: ignore[attr-defined]
                self.bias.materialize((self.out_channels,))  # type: ignore[attr-defined]
            self.reset_parameters()


def _lazy_conv(name: str, base: Any, nd: int) -> type:
    if base.__name__.startswith("ConvTranspose"):
        def __init__(self: Any, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                     output_padding: Any = 0, groups: int = 1, bias: bool = True, dilation: Any = 1,
                     padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
            LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False,
                                     dilation, padding_mode)
            _uninitialized_conv(self, out_channels, bias, device, dtype)
    else:
        def __init__(self: Any, out_channels: int, kernel_size: Any, stride: Any = 1,  # type: ignore[misc]
                     padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                     padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
            LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False,
                                     padding_mode)
            _uninitialized_conv(self, out_channels, bias, device, dtype)

    return type(name, (_LazyConvXdMixin, base), {"__init__": __init__, "cls_to_become": base, "_nd": nd,
                                                 "__doc__": f"``{base.__name__}`` whose ``in_channels`` is read "
                                                            "from the first input.", "__module__": __name__})


def _uninitialized_conv(self: Any, out_channels: int, bias: bool, device: Any, dtype: Any) -> None:
    """The eager layer was built with 0 channels (no memory): uninitialized parameters take its place."""
    self.weight = UninitializedParameter(device=device, dtype=dtype)
    self.out_channels = out_channels
    if bias:
        self.bias = UninitializedParameter(device=device, dtype=dtype)


LazyConv1d = _lazy_conv("LazyConv1d", Conv1d, 1)
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d, 2)
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d, 3)
LazyConvTranspose1d = _lazy_conv("LazyConvTranspose1d", ConvTranspose1d, 1)
LazyConvTranspose2d = _lazy_conv("LazyConvTranspose2d", ConvTranspose2d, 2)
LazyConvTranspose3d = _lazy_conv("LazyConvTranspose3d", ConvTranspose3d, 3)


class _LazyNormBase(LazyModuleMixin):
    """Lazy batch / instance norms: ``num_features`` is the input's dim 1 (as in PyTorch, also for an unbatched
    instance-norm input)."""

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:  # type: ignore[attr-defined]
            super().reset_parameters()  # type: ignore[misc]

    def initialize_parameters(self, input: Any) -> None:  # noqa: A002
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        with ember.no_grad():
            if self.affine:  # type: ignore[attr-defined]
                self.weight.materialize((self.num_features,))  # type: ignore[attr-defined]
                self.bias.materialize((self.num_features,))  # type: ignore[attr-defined]
            if self.track_running_stats:  # type: ignore[attr-defined]
                self.running_mean.materialize((self.num_features,))  # type: ignore[attr-defined]
                self.running_var.materialize((self.num_features,))  # type: ignore[attr-defined]
            self.reset_parameters()


def _lazy_norm(name: str, base: Any) -> type:
    def __init__(self: Any, eps: float = 1e-5, momentum: float = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None) -> None:
        LazyModuleMixin.__init__(self, 0, eps, momentum, False, False)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = ember.tensor(0, dtype=ember.long, device=device)

    return type(name, (_LazyNormBase, base), {"__init__": __init__, "cls_to_become": base, "__module__": __name__,
                                              "__doc__": f"``{base.__name__}`` whose ``num_features`` is read from "
                                                         "the first input."})


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", BatchNorm1d)
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", BatchNorm2d)
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", InstanceNorm3d)


def _home(cls: Any, module: Any) -> None:
    """Put ``cls`` in the module PyTorch defines it in (checkpoints of whole modules name classes by path)."""
    cls.__module__ = module.__name__
    setattr(module, cls.__name__, cls)


def _place_in_pytorchs_files() -> None:
    from ember.nn.modules import batchnorm, conv, instancenorm, linear
    _home(LazyLinear, linear)
    for c in (LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d):
        _home(c, conv)
    for c in (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d):
        _home(c, batchnorm)
    for c in (LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d):
        _home(c, instancenorm)


_place_in_pytorchs_files()
