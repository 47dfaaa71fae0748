"""Named tuples returned by ops with several outputs (``torch.return_types``)."""
from __future__ import annotations

from collections import namedtuple

from ember.c10 import naming


def _make(name, fields):
    cls = namedtuple(name, fields)
    cls.__module__ = "ember.return_types"
    cls.__repr__ = lambda self: f"{naming.prefix}.return_types.{name}(\n" + ",\n".join(
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
linalg_lu_factor_ex = _make("linalg_lu_factor_ex", ("LU", "pivots", "info"))
linalg_lu_factor = _make("linalg_lu_factor", ("LU", "pivots"))
linalg_lu = _make("linalg_lu", ("P", "L", "U"))
lu_unpack = _make("lu_unpack", ("P", "L", "U"))
_lu_with_info = _make("_lu_with_info", ("LU", "pivots", "info"))
linalg_inv_ex = _make("linalg_inv_ex", ("inverse", "info"))
linalg_cholesky_ex = _make("linalg_cholesky_ex", ("L", "info"))
linalg_solve_ex = _make("linalg_solve_ex", ("result", "info"))
linalg_eig = _make("linalg_eig", ("eigenvalues", "eigenvectors"))
geqrf = _make("geqrf", ("a", "tau"))
svd = _make("svd", ("U", "S", "V"))
qr = _make("qr", ("Q", "R"))
triangular_solve = _make("triangular_solve", ("solution", "cloned_coefficient"))
nanmedian = _make("nanmedian", _VI)
histogramdd = _make("histogramdd", ("hist", "bin_edges"))
linalg_ldl_factor_ex = _make("linalg_ldl_factor_ex", ("LD", "pivots", "info"))
linalg_ldl_factor = _make("linalg_ldl_factor", ("LD", "pivots"))
