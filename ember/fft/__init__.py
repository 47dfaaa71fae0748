"""``ember.fft``: entries of native_functions.yaml with ``python_module: fft`` (written in the transform
kernels ``_fft_c2c`` / ``_fft_r2c`` / ``_fft_c2r``: ``ember/aten/composite/spectral.py``); ``Tensor`` as
``torch.fft`` has it."""
from ember._generated.fft import *  # noqa: F401,F403
from ember._tensor import Tensor  # noqa: F401
