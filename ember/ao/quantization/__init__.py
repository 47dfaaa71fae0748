"""``torch.ao.quantization``: observers, fake quantization and qconfigs, and the eager-mode workflow built on them
(``fuse_modules``, ``prepare``, ``convert``, ``quantize_dynamic``: Note [Eager-mode quantization] in quantize.py).

Quantized tensors and their operators are in the core (``ember.quantize_per_tensor``, the QuantizedCPU key: Note
[Quantized dtypes] in ember/c10/dtype.py); this package chooses their parameters (Note [Choosing quantization
parameters] in observer.py) and simulates them during training (fake_quantize.py)."""
from ember.ao.quantization.fake_quantize import *  # noqa: F401,F403
from ember.ao.quantization.fuse_modules import *  # noqa: F401,F403
from ember.ao.quantization.observer import *  # noqa: F401,F403
from ember.ao.quantization.qconfig import *  # noqa: F401,F403
from ember.ao.quantization.quantization_mappings import *  # noqa: F401,F403
from ember.ao.quantization.quantize import *  # noqa: F401,F403
from ember.ao.quantization.stubs import *  # noqa: F401,F403
from ember.ao.quantization.utils import *  # noqa: F401,F403
from ember.ao.quantization.qconfig_mapping import *  # noqa: F401,F403,E402
from ember.ao.quantization import quantize_fx  # noqa: F401,E402
