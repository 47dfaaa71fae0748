"""``torch.cpu.amp`` (deprecated spellings of ``ember.amp``'s autocast and GradScaler for the CPU)."""
from ember.amp._deprecated import autocast_class, grad_scaler_class
from ember.c10.dtype import bfloat16

autocast = autocast_class("cpu", bfloat16)
GradScaler = grad_scaler_class("cpu")

__all__ = ["autocast", "GradScaler"]
