"""``torch.cuda.amp`` (deprecated spellings of ``ember.amp``'s autocast, GradScaler, custom_fwd / custom_bwd for
CUDA). Without a GPU, autocast and GradScaler warn and disable themselves, as PyTorch's do."""
from ember.amp._deprecated import autocast_class, custom_bwd, custom_fwd, grad_scaler_class
from ember.c10.dtype import float16


def amp_definitely_not_available() -> bool:
    from ember import cuda
    return not cuda.is_available()


autocast = autocast_class("cuda", float16)
GradScaler = grad_scaler_class("cuda")

__all__ = ["autocast", "custom_fwd", "custom_bwd", "GradScaler"]
