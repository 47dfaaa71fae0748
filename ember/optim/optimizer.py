"""The optimizer base class (mirrors ``torch/optim/optimizer.py``).

``Optimizer`` keeps ``param_groups`` (dicts holding a ``params`` list and the hyper-parameters),
``defaults`` and ``state`` (a dict from parameter to its per-parameter state), and serialises them in
PyTorch's ``state_dict`` layout: parameters are replaced by integer ids in ``param_groups`` order, so
a checkpoint written by PyTorch loads here and the other way round.

The built-in optimizers derive from ``_ElementwiseOptimizer``: each declares its per-parameter state and
the fused op of the operator library that updates a list of parameters (``_fused_adam_``, ...; Note [Fused
optimizer steps] in ``ember/aten/arena.py``). The op runs once per parameter group (the default, over flat
buffers holding every parameter of the group) or once per parameter (``foreach=False``: PyTorch's single-tensor
implementation); both apply the same operations to the same elements, so they give identical numbers.
"""
from __future__ import annotations

import functools
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain
from typing import Any, Iterable, Union

import ember
from ember._generated import aten
from ember.autograd import profiler as _profiler
from ember.utils.hooks import RemovableHandle

__all__ = ["Optimizer", "register_optimizer_step_pre_hook", "register_optimizer_step_post_hook", "required"]


class _RequiredParameter:
    """Singleton class representing a required parameter for an Optimizer."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_global_optimizer_pre_hooks: dict = OrderedDict()
_global_optimizer_post_hooks: dict = OrderedDict()


def register_optimizer_step_pre_hook(hook) -> RemovableHandle:
    """A hook ``hook(optimizer, args, kwargs)`` run before every optimizer's ``step``."""
    handle = RemovableHandle(_global_optimizer_pre_hooks)
    _global_optimizer_pre_hooks[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook) -> RemovableHandle:
    """A hook ``hook(optimizer, args, kwargs)`` run after every optimizer's ``step``."""
    handle = RemovableHandle(_global_optimizer_post_hooks)
    _global_optimizer_post_hooks[handle.id] = hook
    return handle


# ------------------------------------------------------------------------------ helpers other optimizers import
# PyTorch's optimizers share these private helpers, and optimizers written outside PyTorch (timm's, among others)
# import them to follow the same paths: which implementation to take, how to run the step without autograd.
_foreach_supported_types = (ember.Tensor, ember.nn.parameter.Parameter)
ParamsT = Union[Iterable[ember.Tensor], Iterable[dict[str, Any]], Iterable[tuple[str, ember.Tensor]]]


def _use_grad_for_differentiable(func):
    """Run an optimizer's ``step`` with autograd on only when its ``differentiable`` default is set, restoring the
    caller's grad mode afterwards (and breaking a compiled graph around the step, as in PyTorch)."""
    @functools.wraps(func)
    def _use_grad(self, *args, **kwargs):
        prev = ember.is_grad_enabled()
        try:
            ember.set_grad_enabled(self.defaults["differentiable"])
            ember._dynamo.graph_break()
            return func(self, *args, **kwargs)
        finally:
            ember._dynamo.graph_break()
            ember.set_grad_enabled(prev)
    return _use_grad


def _get_value(x):
    """A 0-d tensor's Python number (while compiling, the tensor itself)."""
    if ember.compiler.is_compiling():
        return x
    return x.item() if isinstance(x, ember.Tensor) else x


def _stack_if_compiling(x):
    return ember.stack(x) if ember.compiler.is_compiling() else x


def _get_scalar_dtype(is_fused=None):
    return ember.float32 if is_fused else _scalar_dtype()


def _to_scalar(x):
    """A one-element hyper-parameter tensor as a 0-d tensor; anything else unchanged."""
    return x.squeeze() if isinstance(x, ember.Tensor) and x.dim() != 0 else x


def _view_as_real(params, *state_and_grads) -> None:
    """Complex parameters (and their states / gradients, in place in the lists) as real views."""
    for i, p in enumerate(params):
        if ember.is_complex(p):
            params[i] = ember.view_as_real(params[i])
            for s in state_and_grads:
                s[i] = ember.view_as_real(s[i])


def _default_to_fused_or_foreach(params, differentiable: bool, use_fused: bool = False) -> tuple[bool, bool]:
    """(fused, foreach): the implementation an optimizer takes when the user chose none -- fused where asked and
    every parameter is a floating plain tensor on a device with fused kernels, else foreach where every parameter
    is on a device with foreach kernels (a GPU: CPU parameters take the single-tensor loop); neither when
    differentiable."""
    from ember.utils._foreach_utils import _get_foreach_kernels_supported_devices, _get_fused_kernels_supported_devices
    if ember.jit.is_scripting() or differentiable:
        return False, False
    fused_devices = _get_fused_kernels_supported_devices()
    foreach_devices = _get_foreach_kernels_supported_devices()
    fused = use_fused and all(p is None or (type(p) in _foreach_supported_types and p.device.type in fused_devices
                                            and ember.is_floating_point(p)) for p in params)
    foreach = not fused and all(p is None or (type(p) in _foreach_supported_types and p.device.type in foreach_devices)
                                for p in params)
    return fused, foreach


def _device_dtype_check_for_fused(p, cuda_unsupported: bool = False) -> None:
    from ember.utils._foreach_utils import _get_fused_kernels_supported_devices
    devices = _get_fused_kernels_supported_devices()
    if cuda_unsupported:
        devices.remove("cuda")
    if not (p.device.type in devices and ember.is_floating_point(p)):
        raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of supported devices: "
                           f"{devices} but {p.dtype} and {p.device.type}")


def _get_capturable_supported_devices(supports_xla: bool = True) -> list[str]:
    """The device types a ``capturable`` optimizer accepts (graph-capturable backends)."""
    devices = ["cuda", "xpu", "hpu", ember._C._get_privateuse1_backend_name()]
    return devices + ["xla"] if supports_xla else devices


def _disable_dynamo_if_unsupported(single_tensor_fn=None):
    """Decorator of an optimizer's functional form (PyTorch runs it eagerly where compiling cannot capture it;
    ember's compiler runs an optimizer step eagerly anyway)."""
    def wrapper(func):
        return func
    return wrapper


# argument descriptions the optimizers' docstrings share (libraries build their own docstrings from them)
_params_doc = r"""params (iterable): the parameters or named_parameters to optimize, or dicts defining
            parameter groups (with named_parameters, every group's parameters are named)"""
_foreach_doc = r"""foreach (bool, optional): use the multi-tensor (foreach) implementation; when None, it is
            taken where every parameter is on a GPU (default: None)"""
_fused_doc = r"""fused (bool, optional): use the fused implementation, for float64, float32, float16 and
            bfloat16 parameters (default: None)"""
_capturable_doc = r"""capturable (bool, optional): keep the step's state on the parameters' device so that the
            step can be captured in a graph; slower when not captured (default: False)"""
_differentiable_doc = r"""differentiable (bool, optional): let autograd record the step; otherwise the step runs
            under no_grad. Slower: leave it False unless differentiating through the step (default: False)"""
_maximize_doc = r"""maximize (bool, optional): maximize the objective instead of minimizing it (default: False)"""


def _typename(obj) -> str:
    from ember.nn.modules.module import typename
    return typename(obj)


def _scalar_dtype():
    """The dtype of ``step`` and the other 0-d state values (PyTorch's ``_get_scalar_dtype``)."""
    return ember.float64 if ember.get_default_dtype() == ember.float64 else ember.float32


def _to_float(value) -> float:
    return value.item() if isinstance(value, ember.Tensor) else value


def _hooked_step(func):
    @functools.wraps(func)
    def step(*args, **kwargs):
        if _profiler.recorder is not None:      # Note [RecordFunction]
            with _profiler.record_function(f"Optimizer.step#{args[0].__class__.__name__}.step"):
                return _step(*args, **kwargs)
        return _step(*args, **kwargs)

    def _step(*args, **kwargs):
        self = args[0]
        for pre_hook in chain(_global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = pre_hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(f"{func} must return None or a tuple of (new_args, new_kwargs), but got "
                                       f"{result}.")
        out = func(*args, **kwargs)
        self._opt_called = True  # read by lr_scheduler's "step() before optimizer.step()" warning
        for post_hook in chain(self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()):
            post_hook(self, args, kwargs)
        return out
    step.hooked = True
    return step


class Optimizer:
    """Base class for all optimizers: ``params`` is an iterable of tensors, of ``(name, tensor)``
    pairs, or of dicts defining parameter groups; ``defaults`` holds the default hyper-parameters."""

    @staticmethod
    def _group_tensors_by_device_and_dtype(tensorlistlist, with_indices: bool = False):
        """The parallel lists grouped by device and dtype (``ember/utils/_foreach_utils.py``); one group of
        everything while compiling."""
        from ember.utils._foreach_utils import _group_tensors_by_device_and_dtype
        if ember.compiler.is_compiling():
            return {(None, None): (tensorlistlist, list(range(len(tensorlistlist[0]))))}
        return _group_tensors_by_device_and_dtype(tensorlistlist, with_indices)

    def __init__(self, params, defaults: dict) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: dict = OrderedDict()
        self._optimizer_step_post_hooks: dict = OrderedDict()
        self._optimizer_state_dict_pre_hooks: dict = OrderedDict()
        self._optimizer_state_dict_post_hooks: dict = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: dict = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: dict = OrderedDict()
        if isinstance(params, ember.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got " + _typename(params))
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "hooked", False):
            cls.step = _hooked_step(step)

    def __getstate__(self) -> dict:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for name in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_optimizer_state_dict_pre_hooks",
                     "_optimizer_state_dict_post_hooks", "_optimizer_load_state_dict_pre_hooks",
                     "_optimizer_load_state_dict_post_hooks"):
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self.defaults.setdefault("differentiable", False)

    def __repr__(self) -> str:
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    # -- parameter groups ------------------------------------------------------------------------
    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters (with its own hyper-parameters) to ``param_groups``."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, ember.Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")

        for param in param_group["params"]:
            if not isinstance(param, ember.Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will cause "
                          "an error; see github.com/pytorch/pytorch/issues/40967 for more information", stacklevel=3)

        seen: set = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not seen.isdisjoint(id(p) for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # -- gradients ---------------------------------------------------------------------------------
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized tensors (to ``None`` by default)."""
        if _profiler.recorder is not None:      # Note [RecordFunction]
            with _profiler.record_function(f"Optimizer.zero_grad#{self.__class__.__name__}.zero_grad"):
                return self._zero_grad(set_to_none)
        return self._zero_grad(set_to_none)

    def _zero_grad(self, set_to_none: bool) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def step(self, closure=None):
        """Perform a single optimization step (to be overridden by every optimizer)."""
        raise NotImplementedError

    # -- state_dict --------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """``{"state": {id: {...}}, "param_groups": [{..., "params": [ids]}]}`` with integer ids in
        ``param_groups`` order, as PyTorch writes it."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        param_mappings: dict = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update({id(p): i for i, p in enumerate(group["params"], start_index)
                                   if id(p) not in param_mappings})
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(param_mappings[id(k)] if isinstance(k, ember.Tensor) else k): v
                        for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    @staticmethod
    def _process_value_according_to_param_policy(param, value, param_id, param_groups, key=None):
        # Floating-point state follows the parameter's dtype and device; ``step`` keeps its dtype unless
        # the group is fused or capturable (PyTorch's note [special device hosting for step]).
        fused = capturable = False
        for pg in param_groups:
            if param_id in pg["params"]:
                fused = pg.get("fused", False)
                capturable = pg.get("capturable", False)
                break
        if key == "step":
            if capturable or fused:
                return value.to(dtype=ember.float32, device=param.device)
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)

    def load_state_dict(self, state_dict: dict) -> None:
        """Load state written by ``state_dict`` (here or by PyTorch); tensors are cast to their
        parameter's dtype and device."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def _cast(param, value, param_id=None, param_groups=None, key=None):
            if isinstance(value, ember.Tensor):
                return Optimizer._process_value_according_to_param_policy(param, value, param_id, param_groups, key)
            if isinstance(value, dict):
                return {k: _cast(param, v, param_id=param_id, param_groups=param_groups, key=k)
                        for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(_cast(param, v, param_id=param_id, param_groups=param_groups) for v in value)
            return value

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, v, param_id=k, param_groups=state_dict["param_groups"])
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    # -- hooks -------------------------------------------------------------------------------------
    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)`` before ``step``."""
        handle = RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """``hook(optimizer, args, kwargs) -> None`` after ``step``."""
        handle = RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    @staticmethod
    def _register(hooks: dict, hook, prepend: bool) -> RemovableHandle:
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)


def _zero_state(p, state, *keys) -> None:
    """``state["step"] = tensor(0.)`` and a zero tensor like ``p`` for each key (PyTorch's order)."""
    state["step"] = ember.tensor(0.0, dtype=_scalar_dtype())
    for key in keys:
        state[key] = ember.zeros_like(p, memory_format=ember.preserve_format)


def _check_fused_foreach(fused, foreach, differentiable, optimizer) -> None:
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        optimizer._step_supports_amp_scaling = True   # its step unscales and skips (Note [Loss scaling])


def _amp_arguments(optimizer, group) -> dict:
    """``grad_scale`` / ``found_inf`` as a GradScaler set them on a fused optimizer (empty otherwise)."""
    if not group.get("fused"):
        return {}
    return {"grad_scale": getattr(optimizer, "grad_scale", None), "found_inf": getattr(optimizer, "found_inf", None)}


def _undo_skipped_step(optimizer, group, steps) -> None:
    """A step the GradScaler skipped (``found_inf`` is 1) does not count: PyTorch's fused optimizers subtract it."""
    found_inf = getattr(optimizer, "found_inf", None) if group.get("fused") else None
    if found_inf is not None and steps:
        aten._foreach_sub__List(steps, [found_inf] * len(steps))


def _check_lr(lr) -> None:
    if isinstance(lr, ember.Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_betas(betas) -> None:
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def _check_nonnegative(**values) -> None:
    names = {"eps": "epsilon"}
    for name, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {names.get(name, name)} value: {value}")


class _ElementwiseOptimizer(Optimizer):
    """An optimizer whose step is one fused op of the operator library (``_fused_adam_``, ``_fused_sgd_``, ...;
    Note [Fused optimizer steps] in ``ember/aten/arena.py``).

    Subclasses set ``_op`` (the op of ``ember._generated.aten``), ``_lists(group)`` (the state names whose lists
    the op takes after the parameters and gradients, in its order; None for a list the group does not use, passed
    empty), ``_hyper(group)`` (the op's keyword arguments) and ``_init_state(p, group, state)``. Like PyTorch's
    foreach / fused paths, a step increments the ``step`` tensors with ``_foreach_add_`` and calls the op once per
    parameter group; ``foreach=False`` (PyTorch's single-tensor implementation) calls it once per parameter, which
    gives the same numbers."""

    _has_step = True
    _op = None

    def __init__(self, params, defaults: dict) -> None:
        if defaults.get("differentiable"):
            raise NotImplementedError(f"{type(self).__name__}(differentiable=True) is not supported by ember: the "
                                      "update runs outside autograd, so gradients cannot flow through step()")
        super().__init__(params, defaults)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            for name, default in self.defaults.items():
                if default is not required:
                    group.setdefault(name, default)
            for p in group["params"]:
                st = self.state.get(p)
                if st and "step" in st and not isinstance(st["step"], ember.Tensor):  # pre-1.12 checkpoints
                    st["step"] = ember.tensor(float(st["step"]), dtype=_scalar_dtype())

    def _lists(self, group) -> tuple:
        raise NotImplementedError

    def _hyper(self, group) -> dict:
        raise NotImplementedError

    def _init_state(self, p, group, state) -> None:
        raise NotImplementedError

    def _check_capturable(self, group, params) -> None:
        if group.get("capturable") and any(p.device.type != "cuda" for p in params):
            raise AssertionError("If capturable=True, params and state_steps must be on supported devices: "
                                 "['cuda', 'xpu', 'hpu', 'privateuseone', 'xla'].")

    def _run(self, group, params, states) -> None:
        """One call of the op for ``params``."""
        steps = [st["step"] for st in states] if self._has_step else []
        if steps:
            aten._foreach_add__Scalar(steps, 1)
        lists = [[st[k] for st in states] if k is not None else [] for k in self._lists(group)]
        self._op_for(group)(params, [p.grad for p in params], *lists, **self._hyper(group),
                            **_amp_arguments(self, group))
        _undo_skipped_step(self, group, steps)

    def _op_for(self, group):
        return type(self)._op

    def _keeps_state(self, group) -> bool:
        """Whether the group's parameters have per-parameter state (SGD without momentum has none, so its
        ``state_dict()['state']`` stays empty, as PyTorch's)."""
        return True

    def _group_step(self, group, params) -> None:
        states = [self.state[p] for p in params] if self._keeps_state(group) else [{} for _ in params]
        if group.get("foreach") is False and not group.get("fused"):
            for p, st in zip(params, states):
                self._run(group, [p], [st])
        else:
            self._run(group, params, states)

    @ember.no_grad()
    def step(self, closure=None):
        """Perform a single optimization step; ``closure`` re-evaluates the model and returns the loss."""
        loss = None
        if closure is not None:
            with ember.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            self._check_capturable(group, params)
            if self._keeps_state(group):
                for p in params:
                    st = self.state[p]
                    if len(st) == 0:
                        self._init_state(p, group, st)
            if any(p.grad.is_sparse for p in params):
                for p in params:
                    if p.grad.is_sparse:
                        self._sparse_step(group, p, self.state[p])
                params = [p for p in params if not p.grad.is_sparse]
                if not params:
                    continue
            self._group_step(group, params)
        return loss

    def _sparse_step(self, group, p, state) -> None:
        """The step of a parameter whose gradient is sparse (Note [Sparse tensors] in ember/aten/sparse/__init__.py):
        PyTorch's refusal, except for the optimizers that update only the gradient's rows (SGD, Adagrad)."""
        raise RuntimeError(f"{self._sparse_name} does not support sparse gradients{self._sparse_hint}")

    @property
    def _sparse_name(self) -> str:
        return type(self).__name__

    _sparse_hint = ""
