"""Named tuples returned by ops with several outputs (``torch.return_types``)."""
from __future__ import annotations

from collections import namedtuple


def _make(name, fields):
    cls = namedtuple(name, fields)
    cls.__module__ = "ember.return_types"
    cls.__repr__ = lambda self: f"ember.return_types.{name}(\n" + ",\n".join(
        f"{f}={getattr(self, f)!r}" for f in fields) + ")"
    return cls


_VI = ("values", "indices")
max = _make("max", _VI)  # noqa: A001
min = _make("min", _VI)  # noqa: A001
sort = _make("sort", _VI)
topk = _make("topk", _VI)
kthvalue = _make("kthvalue", _VI)
median = _make("median", _VI)
mode = _make("mode", _VI)
cummax = _make("cummax", _VI)
cummin = _make("cummin", _VI)
aminmax = _make("aminmax", ("min", "max"))
linalg_slogdet = _make("linalg_slogdet", ("sign", "logabsdet"))
slogdet = _make("slogdet", ("sign", "logabsdet"))
linalg_qr = _make("linalg_qr", ("Q", "R"))
linalg_eigh = _make("linalg_eigh", ("eigenvalues", "eigenvectors"))
linalg_svd = _make("linalg_svd", ("U", "S", "Vh"))
linalg_lstsq = _make("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
histogram = _make("histogram", ("hist", "bin_edges"))
frexp = _make("frexp", ("mantissa", "exponent"))
