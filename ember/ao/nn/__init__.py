"""``torch.ao.nn``: quantized (``quantized``, ``quantized.dynamic``) and fused (``intrinsic``) modules."""
from ember.ao.nn import intrinsic, qat, quantized  # noqa: F401
from ember.ao.nn.intrinsic import qat as _intrinsic_qat  # noqa: F401,E402
