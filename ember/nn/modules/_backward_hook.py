"""Full backward hooks of modules (mirrors ``torch/utils/hooks.py`` ``BackwardHook``).

The module's tensor inputs and outputs pass through an identity ``Function``: the one on the outputs
sees ``grad_output`` in backward (and runs the backward pre-hooks), the one on the inputs sees
``grad_input`` and runs ``hook(module, grad_input, grad_output)``, whose result replaces ``grad_input``."""
from __future__ import annotations

from typing import Any

from ember._tensor import Tensor
from ember.autograd.function import Function


class BackwardHookFunction(Function):
    @staticmethod
    def forward(ctx: Any, fn: Any, *tensors: Any) -> Any:
        ctx.fn = fn
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        return tensors

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        return (None,) + tuple(ctx.fn(grads))


class BackwardHook:
    def __init__(self, module: Any) -> None:
        self.module = module
        self.grad_outputs = None
        self.n_inputs = 0
        self.input_idx = None

    def _hooks(self) -> Any:
        from ember.nn.modules.module import _global_backward_hooks
        return list(_global_backward_hooks.values()) + list(self.module._backward_hooks.values())

    @staticmethod
    def _wrap(values: Any, fn: Any) -> Any:
        """Pass the tensors of ``values`` that require grad through one BackwardHookFunction."""
        import ember
        single = isinstance(values, Tensor)
        seq = (values,) if single else values
        if not isinstance(seq, (tuple, list)) or not ember.is_grad_enabled():
            return values, None
        idx = [i for i, v in enumerate(seq) if isinstance(v, Tensor) and v.requires_grad]
        if not idx:
            return values, None
        new = BackwardHookFunction.apply(fn, *[seq[i] for i in idx])
        out = list(seq)
        for i, t in zip(idx, new):
            out[i] = t
        if single:
            return out[0], idx
        return type(seq)(out) if isinstance(seq, tuple) and type(seq) is tuple else (
            type(seq)(*out) if isinstance(seq, tuple) else out), idx

    def setup_input_hook(self, args: Any) -> Any:
        self.n_inputs = len(args)

        def fn(grads: Any) -> Any:
            grad_inputs = [None] * self.n_inputs
            for i, g in zip(self.input_idx, grads):
                grad_inputs[i] = g
            grad_inputs = tuple(grad_inputs)
            for hook in self._hooks():
                res = hook(self.module, grad_inputs, self.grad_outputs)
                if res is None:
                    continue
                if not isinstance(res, tuple):
                    res = (res,)
                if len(res) != len(grad_inputs):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(res)}, but "
                                       f"expected {len(grad_inputs)}")
                grad_inputs = res
            return [grad_inputs[i] for i in self.input_idx]

        new_args, self.input_idx = self._wrap(args, fn)
        return new_args

    def setup_output_hook(self, result: Any) -> Any:
        def fn(grads: Any) -> Any:
            grad_outputs = tuple(grads)
            for hook in self.module._backward_pre_hooks.values():
                res = hook(self.module, grad_outputs)
                if res is None:
                    continue
                if not isinstance(res, tuple):
                    res = (res,)
                if len(res) != len(grad_outputs):
                    raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got {len(res)}, "
                                       f"but expected {len(grad_outputs)}")
                grad_outputs = res
            self.grad_outputs = grad_outputs
            if self.input_idx is None:  # no input requires grad: the hooks run here, with grad_input all None
                grad_inputs = (None,) * self.n_inputs
                for hook in self._hooks():
                    res = hook(self.module, grad_inputs, self.grad_outputs)
                    if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                        raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                           "return None or None for all gradients.")
            return grad_outputs

        new, _ = self._wrap(result, fn)
        return new
