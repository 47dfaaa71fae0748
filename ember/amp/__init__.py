"""``torch.amp``: automatic mixed precision -- ``autocast`` regions (Note [Autocast] in autocast_kernels.py) and
``GradScaler`` (Note [Loss scaling] in grad_scaler.py)."""
from ember.amp.autocast_mode import (_enter_autocast, _exit_autocast, autocast, custom_bwd,  # noqa: F401
                                     custom_fwd, is_autocast_available)
from ember.amp.grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]
