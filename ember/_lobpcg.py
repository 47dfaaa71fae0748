"""LOBPCG: a few extreme eigenpairs of a symmetric (generalized) eigenproblem ``A x = lambda B x`` without
factorising A (``torch.lobpcg``).

The method keeps a search space of three blocks of ``n`` columns: the current eigenvector estimates X, the
"conjugate" directions P (where the previous step moved X) and the residuals W = A X - B X diag(E) (times the
preconditioner iK). Each step is a Rayleigh-Ritz projection of A onto that space: the ``n`` extreme Ritz
pairs become the new X and E, and the part of the step not already spanned by X becomes the new P
(Knyazev 2001). Eigenpairs whose backward-stable residual ``|r| / (|x| (|A| + |lambda| |B|))`` is under
``tol`` are locked, in order: later steps leave them out of the projection.

``method="basic"`` is Knyazev's original iteration: the projected pencil ``(S^T A S, S^T B S)`` is reduced
with a diagonally scaled Cholesky factor of ``S^T B S``, which breaks down when the basis becomes nearly
dependent. ``method="ortho"`` (the default) keeps S B-orthonormal instead: the new residual block is made
B-orthogonal to [X, P] and B-orthonormal in itself by repeated projection and the SVQB orthonormalisation
(an eigendecomposition of the scaled Gram matrix with small eigenvalues lifted to a floor), after Stathopoulos
and Wu 2002 and Duersch, Shao, Yang and Gu 2018. Then each step only needs the eigendecomposition of
``S^T A S``.

The backward (B absent, real input) treats the k returned pairs as an invariant subspace of A: the in-span
part of dA follows from the eigenpair perturbation formulas, the part outside the span solves the Sylvester
equation ``A_perp Z - Z diag(E) = Q^T dU`` on an orthonormal basis Q of the complement.

The starting block X, when not given, is ``randn(m, n)`` on the default generator, drawn per batch entry,
so a seed gives PyTorch's starting point and PyTorch's iterates."""
from __future__ import annotations

import math
from typing import Any, Callable

import ember

__all__ = ["lobpcg", "LOBPCG"]


def _floating_dtype(A: Any) -> Any:
    return A.dtype if A.dtype in (ember.float16, ember.float32, ember.float64) else ember.float32


def _times(M: Any, X: Any) -> Any:
    """M @ X where an absent M (B or iK not given) is the identity."""
    return X if M is None else M @ X


def _gram(S: Any, M: Any = None) -> Any:
    """S^T M S."""
    return S.mT @ _times(M, S)


def _eigh_ordered(M: Any, largest: bool = False) -> tuple[Any, Any]:
    """Eigenpairs of the symmetric M (upper triangle read), ascending, or descending when ``largest``."""
    E, Z = ember.linalg.eigh(M, UPLO="U")
    return (E.flip(-1), Z.flip(-1)) if largest else (E, Z)


class LOBPCG:
    """The iteration state of one (unbatched) LOBPCG run. A ``tracker`` passed to ``lobpcg`` is called with
    this object after every step; it may read ``iparams`` / ``fparams`` / ``bparams`` (the parameters),
    ``ivars`` / ``fvars`` / ``bvars`` / ``tvars`` (``istep``, ``converged_count``, ``tvars["rerr"]``...),
    ``A``, ``B``, ``iK`` and the iterates ``E``, ``X``, ``S``, ``R``, and stop the run by setting
    ``bvars["force_stop"] = True``. Tensors it wants to keep must be copied."""

    def __init__(self, A: Any, B: Any, X: Any, iK: Any, iparams: dict[str, int], fparams: dict[str, float],
                 bparams: dict[str, bool], method: str, tracker: Callable[[LOBPCG], None] | None) -> None:
        self.A, self.B, self.iK = A, B, iK
        self.iparams, self.fparams, self.bparams = iparams, fparams, bparams
        self.method = method
        self.tracker = tracker
        m, n = iparams["m"], iparams["n"]
        self.X = X
        self.E = ember.zeros(n, dtype=X.dtype, device=X.device)
        self.R = ember.zeros(m, n, dtype=X.dtype, device=X.device)
        self.S = ember.zeros(m, 3 * n, dtype=X.dtype, device=X.device)
        self.tvars: dict[str, Any] = {}
        self.ivars: dict[str, int] = {"istep": 0}
        self.fvars: dict[str, float] = {"_": 0.0}
        self.bvars: dict[str, bool] = {"_": False}

    def __str__(self) -> str:
        fields = ["iparams", "fparams", "bparams", "ivars", "fvars", "bvars", "tvars", "A", "B", "iK", "X", "E"]
        return "LOBPCG:\n" + "".join(f"  {name}={getattr(self, name)}\n" for name in fields)

    # -- the driver ---------------------------------------------------------------------------------------

    def run(self) -> None:
        """Step until ``k`` pairs have converged, ``niter`` steps were taken or the tracker asks to stop."""
        while True:
            self.update()
            if self.tracker is not None:
                self.tracker(self)
            if self.stop_iteration():
                return

    def stop_iteration(self) -> bool:
        return (self.bvars.get("force_stop", False) or self.ivars["iterations_left"] == 0
                or self.ivars["converged_count"] >= self.iparams["k"])

    def update(self) -> None:
        """One step (the first one also measures |A| and |B| on the starting block)."""
        if self.ivars["istep"] == 0:
            x_norm = float(ember.linalg.norm(self.X))
            self.fvars["X_norm"] = x_norm
            self.fvars["A_norm"] = float(ember.linalg.norm(self.A @ self.X)) / x_norm
            self.fvars["B_norm"] = float(ember.linalg.norm(_times(self.B, self.X))) / x_norm
            self.ivars["iterations_left"] = self.iparams["niter"]
            self.ivars["converged_count"] = 0
            self.ivars["converged_end"] = 0
        if self.method == "ortho":
            self._step_ortho()
        else:
            self._step_basic()
        self.ivars["iterations_left"] -= 1
        self.ivars["istep"] += 1

    def update_residual(self) -> None:
        self.R = self.A @ self.X - _times(self.B, self.X) * self.E

    def update_converged_count(self) -> int:
        """The length of the leading run of pairs whose backward-stable relative residual is under ``tol``
        (Duersch et al. 2018, section 4.3); pairs are locked in order, so the count never decreases."""
        before = self.ivars["converged_count"]
        X, R = self.X, self.R
        scale = self.fvars["A_norm"] + self.E[: X.shape[-1]].abs() * self.fvars["B_norm"]
        rerr = ember.linalg.vector_norm(R, dim=0) / (ember.linalg.vector_norm(X, dim=0) * scale)
        count = 0
        for ok in (rerr < self.fparams["tol"]).tolist():
            if not ok:
                break
            count += 1
        if count < before:
            raise AssertionError(f"the number of converged eigenpairs (was {before}, got {count}) cannot decrease")
        self.ivars["converged_count"] = count
        self.tvars["rerr"] = rerr
        return count

    # -- the two methods ----------------------------------------------------------------------------------

    def _extend_search_space(self, n_p: int, W: Any) -> None:
        """S = [X, P (already in place), W]; ``converged_end`` marks where the filled columns end."""
        n = self.iparams["n"]
        end = n + n_p + W.shape[-1]
        self.S[:, n + n_p:end] = W
        self.ivars["converged_end"] = end

    def _step_basic(self) -> None:
        n, largest = self.iparams["n"], self.bparams["largest"]
        if self.ivars["istep"] == 0:
            C = self._rayleigh_ritz_transform(self.X)
            E, Z = _eigh_ordered(_gram(self.X @ C, self.A), largest)
            self.X = self.X @ (C @ Z)  # a new tensor: the caller's starting block is left as it was
            self.E[:] = E
            n_p = 0
            self.update_residual()
            nc = self.update_converged_count()
            self.S[:, :n] = self.X
            self._extend_search_space(n_p, _times(self.iK, self.R))
            return
        nc, end = self.ivars["converged_count"], self.ivars["converged_end"]
        S = self.S[:, nc:end]
        C = self._rayleigh_ritz_transform(S)
        E, Z = _eigh_ordered(_gram(S @ C, self.A), largest)
        self.X[:, nc:] = S @ (C @ Z[:, :n - nc])
        self.E[nc:] = E[:n - nc]
        P = S @ (C @ Z[:, n:2 * n - nc])
        self.update_residual()
        nc = self.update_converged_count()
        self.S[:, :n] = self.X
        self.S[:, n:n + P.shape[-1]] = P
        self._extend_search_space(P.shape[-1], _times(self.iK, self.R[:, nc:]))

    def _step_ortho(self) -> None:
        # As in PyTorch, the preconditioner iK is not applied by this method, and the first step leaves E at
        # zero (its residual block A X spans the same space as A X - B X diag(E) once X is projected out).
        n, largest = self.iparams["n"], self.bparams["largest"]
        if self.ivars["istep"] == 0:
            C = self._rayleigh_ritz_transform(self.X)
            _, Z = _eigh_ordered(_gram(self.X @ C, self.A), largest)
            self.X = self.X @ (C @ Z)
            self.update_residual()
            self.update_converged_count()
            self.S[:, :n] = self.X
            self._extend_search_space(0, self._ortho(self.R, self.X))
            return
        nc, end = self.ivars["converged_count"], self.ivars["converged_end"]
        S = self.S[:, nc:end]  # B-orthonormal
        E, Z = _eigh_ordered(_gram(S, self.A), largest)
        active = n - nc
        self.X[:, nc:] = S @ Z[:, :active]
        self.E[nc:] = E[:active]
        # the conjugate directions: the rest of the Ritz basis, combined so that its X-block part is orthonormal
        P = S @ (Z[:, active:] @ ember.linalg.qr(Z[:active, active:].mT).Q)
        self.update_residual()
        nc = self.update_converged_count()
        self.S[:, :n] = self.X
        self.S[:, n:n + P.shape[-1]] = P
        self._extend_search_space(P.shape[-1], self._ortho(self.R[:, nc:], self.S[:, :n + P.shape[-1]]))

    # -- orthonormalisation -------------------------------------------------------------------------------

    def _rayleigh_ritz_transform(self, S: Any) -> Any:
        """An upper-triangular C with C^T (S^T B S) C = I: the inverse of the Cholesky factor of the Gram
        matrix scaled to a unit diagonal, scaled back (Duersch et al. 2018, Algorithm 2)."""
        G = _gram(S, self.B)
        d = G.diagonal(0, -2, -1) ** -0.5
        Rf = ember.linalg.cholesky(G * d * d.reshape(-1, 1), upper=True)
        return ember.linalg.solve_triangular(Rf, ember.diag_embed(d), upper=True, left=False)

    def _svqb(self, U: Any, drop: bool, tau: float) -> Any:
        """B-orthonormal columns spanning (nearly) U's span: the eigendecomposition of U's unit-diagonal Gram
        matrix, with eigenvalues under ``tau * max|eig|`` lifted to that floor, or (``drop``) their
        directions dropped. Exactly zero columns are dropped first."""
        if U.numel() == 0:
            return U
        G = _gram(U, self.B)
        d = G.diagonal(0, -2, -1)
        nonzero = (d != 0).nonzero().reshape(-1)
        if nonzero.numel() < d.numel():
            U = U[:, nonzero]
            if U.numel() == 0:
                return U
            G = _gram(U, self.B)
            d = G.diagonal(0, -2, -1)
        scale = d ** -0.5
        E, Z = _eigh_ordered(G * scale * scale.reshape(-1, 1))
        floor = tau * float(E.abs().max())
        if drop:
            keep = (E > floor).nonzero().reshape(-1)
            E, Z = E[keep], Z[:, keep]
        else:
            E = E.clamp(min=floor)
        return (U * scale) @ (Z * E ** -0.5)

    def _ortho(self, U: Any, V: Any) -> Any:
        """U made B-orthonormal and B-orthogonal to the B-orthonormal V: up to ``ortho_i_max`` rounds of
        projecting V out, each followed by up to ``ortho_j_max`` SVQB passes, until both relative errors
        ``|U^T B U - I| / (|B U| |U|)`` and ``|V^T B U| / (|B V| |U|)`` are under ``ortho_tol``
        (Duersch's thesis, Algorithm 3; with ``ortho_use_drop``, Algorithm 6, which drops directions
        instead of lifting them). The errors of each pass are left in ``fvars``."""
        fp, ip = self.fparams, self.iparams
        for key in [key for key in self.fvars if key.startswith("ortho_") and key.endswith("_rerr")]:
            del self.fvars[key]
        self.ivars.pop("ortho_i", None)
        self.ivars.pop("ortho_j", None)
        bv_norm = float(ember.linalg.norm(_times(self.B, V)))
        VBU = V.mT @ _times(self.B, U)
        i = j = 0
        for i in range(ip["ortho_i_max"]):
            U = U - V @ VBU
            drop, tau = False, fp["ortho_tol_drop"]
            for j in range(ip["ortho_j_max"]):
                if self.bparams["ortho_use_drop"]:
                    U = self._svqb(U, drop, tau)
                    drop, tau = True, fp["ortho_tol_replace"]
                else:
                    U = self._svqb(U, False, fp["ortho_tol_replace"])
                if U.numel() == 0:  # every column of U lay in V's span
                    self.ivars["ortho_i"], self.ivars["ortho_j"] = i, j
                    return U
                BU = _times(self.B, U)
                unit_err = ember.linalg.norm(U.mT @ BU - ember.eye(U.shape[-1], dtype=U.dtype, device=U.device))
                rerr = float(unit_err) / (float(ember.linalg.norm(BU)) * float(ember.linalg.norm(U)))
                self.fvars[f"ortho_UBUmI_rerr[{i}, {j}]"] = rerr
                if rerr < fp["ortho_tol"]:
                    break
            VBU = V.mT @ BU
            rerr = float(ember.linalg.norm(VBU)) / (bv_norm * float(ember.linalg.norm(U)))
            self.fvars[f"ortho_VBU_rerr[{i}]"] = rerr
            if rerr < fp["ortho_tol"]:
                break
            if ip["m"] < U.shape[-1] + V.shape[-1]:
                cols = ip["m"] if self.B is None else self.B.shape[-1]
                raise ValueError(f"Overdetermined shape of U: #B-cols(={cols}) >= #U-cols(={U.shape[-1]}) + "
                                 f"#V-cols(={V.shape[-1]}) must hold")
        self.ivars["ortho_i"], self.ivars["ortho_j"] = i, j
        return U


# -- the backward ----------------------------------------------------------------------------------------------

def _eigenpairs_backward(gE: Any, gX: Any, A: Any, E: Any, X: Any) -> Any:
    """dL/dA for k eigenpairs (E, X) of the symmetric A (X orthonormal, A X = X diag(E)).

    Inside span(X) this is the eigendecomposition's formula X (diag(gE) + (X^T gX) o F) X^T with
    F_ij = 1 / (E_j - E_i) off the diagonal. A perturbation dA moves each x_j out of the span by y_j with
    (A_perp - E_j) y_j = -Q^T dA x_j, where the columns of Q are an orthonormal basis of the complement and
    A_perp = Q^T A Q; that operator is self-adjoint, so the adjoint solves (A_perp - E_j) z_j = Q^T gX_j and
    contributes -Q Z X^T. A_perp's own eigendecomposition solves all k shifted systems at once."""
    gap = E.unsqueeze(-2) - E.unsqueeze(-1)
    F = ember.where(ember.eye(E.shape[-1], dtype=ember.bool, device=E.device), ember.zeros((), dtype=E.dtype),
                    1 / gap)
    Xt = X.mT
    grad = X @ ((ember.diag_embed(gE) + (Xt @ gX) * F) @ Xt)
    m, k = X.shape[-2:]
    if k == m:
        return grad
    Q = ember.linalg.qr(X, mode="complete").Q[..., k:]
    lam, V = ember.linalg.eigh(Q.mT @ A @ Q)
    coeff = (V.mT @ (Q.mT @ gX)) / (lam.unsqueeze(-1) - E.unsqueeze(-2))
    return grad - (Q @ (V @ coeff)) @ Xt


class _LOBPCGFunction(ember.autograd.Function):
    @staticmethod
    def forward(ctx: Any, A: Any, B: Any, *args: Any) -> Any:  # type: ignore[override]
        A = A.contiguous()
        B = None if B is None else B.contiguous()
        E, X = _lobpcg(A, B, *args)
        ctx.save_for_backward(A, B, E, X)
        return E, X

    @staticmethod
    def backward(ctx: Any, gE: Any, gX: Any) -> Any:  # type: ignore[override]
        A, B, E, X = ctx.saved_tensors
        if A.is_complex() or (B is not None and B.is_complex()):
            raise ValueError("lobpcg.backward does not support complex input yet. "
                             "Note that lobpcg.forward does though.")
        if B is not None:
            raise ValueError("lobpcg.backward does not support backward with B != I yet.")
        return (_eigenpairs_backward(gE, gX, A, E, X),) + (None,) * 13


# -- the front end ---------------------------------------------------------------------------------------------

def lobpcg(A: Any, k: int | None = None, B: Any = None, X: Any = None, n: int | None = None, iK: Any = None,
           niter: int | None = None, tol: float | None = None, largest: bool | None = None,
           method: str | None = None, tracker: Callable[[LOBPCG], None] | None = None,
           ortho_iparams: dict[str, int] | None = None, ortho_fparams: dict[str, float] | None = None,
           ortho_bparams: dict[str, bool] | None = None) -> tuple[Any, Any]:
    """The ``k`` largest (``largest=True``, the default) or smallest eigenvalues of the symmetric
    positive-definite problem ``A x = lambda B x`` (B the identity when absent) and their B-orthonormal
    eigenvectors: ``(E of shape (*, k), X of shape (*, m, k))``.

    ``X`` is the starting block (m x n, n >= k columns; default ``randn(m, n)`` with ``n`` defaulting to
    ``k``), ``iK`` a preconditioner (used by ``method="basic"``), ``niter`` the step limit (default 1000,
    -1 for none), ``tol`` the residual tolerance (default the square root of the dtype's epsilon),
    ``method`` ``"ortho"`` (default, robust) or ``"basic"``, ``tracker`` a callable given the ``LOBPCG``
    state after each step, ``ortho_*params`` overrides of ``ortho_i_max`` / ``ortho_j_max`` / ``ortho_tol``
    / ``ortho_tol_drop`` / ``ortho_tol_replace`` / ``ortho_use_drop``. The method needs m >= 3 n.

    A and B are symmetrised ((A + A^T) / 2) when they require grad, so that A's gradient is symmetric;
    the backward supports real A with B absent."""
    args = (k, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams, ortho_fparams, ortho_bparams)
    if A.requires_grad or (B is not None and B.requires_grad):
        A_sym = (A + A.mT) / 2
        B_sym = None if B is None else (B + B.mT) / 2
        return _LOBPCGFunction.apply(A_sym, B_sym, *args)  # type: ignore[no-any-return]
    return _lobpcg(A, B, *args)


def _lobpcg(A: Any, B: Any, k: int | None, X: Any, n: int | None, iK: Any, niter: int | None, tol: float | None,
            largest: bool | None, method: str | None, tracker: Callable[[LOBPCG], None] | None,
            ortho_iparams: dict[str, int] | None, ortho_fparams: dict[str, float] | None,
            ortho_bparams: dict[str, bool] | None) -> tuple[Any, Any]:
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and A.shape != B.shape:
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    dtype = _floating_dtype(A)
    if tol is None:
        if dtype not in (ember.float32, ember.float64):
            raise RuntimeError(f"lobpcg: no default tolerance for {dtype}; pass tol")
        tol = (1.2e-07 if dtype == ember.float32 else 2.23e-16) ** 0.5
    m = A.shape[-1]
    if k is None:
        k = 1 if X is None else X.shape[-1]
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than "
                         f"3 x the number of requested eigenpairs (={n})")
    method = "ortho" if method is None else method
    iparams = {"m": m, "n": n, "k": k, "niter": 1000 if niter is None else niter}
    fparams = {"tol": tol}
    bparams = {"largest": True if largest is None else largest}
    if method == "ortho":
        iparams.update(ortho_iparams or {})
        fparams.update(ortho_fparams or {})
        bparams.update(ortho_bparams or {})
        iparams.setdefault("ortho_i_max", 3)
        iparams.setdefault("ortho_j_max", 3)
        for key in ("ortho_tol", "ortho_tol_drop", "ortho_tol_replace"):
            fparams.setdefault(key, tol)
        bparams.setdefault("ortho_use_drop", False)

    def solve(A1: Any, B1: Any, X1: Any) -> tuple[Any, Any]:
        if X1 is None:
            X1 = ember.randn(m, n, dtype=dtype, device=A.device)
        if tuple(X1.shape) != (m, n):
            raise AssertionError(f"X shape mismatch: got {X1.shape}, expected {(m, n)}")
        worker = LOBPCG(A1, B1, X1, iK, iparams, fparams, bparams, method, tracker)
        worker.run()
        return worker.E[:k], worker.X[:, :k]

    if A.dim() == 2:
        return solve(A, B, X)
    batch = A.shape[:-2]
    count = math.prod(batch)
    bA = A.reshape(count, m, m)
    bB = None if B is None else B.reshape(count, m, m)
    bX = None if X is None else X.reshape((count,) + tuple(X.shape[-2:]))
    E_all = ember.empty(count, k, dtype=dtype, device=A.device)
    X_all = ember.empty(count, m, k, dtype=dtype, device=A.device)
    for i in range(count):
        iparams["batch_index"] = i
        E_all[i], X_all[i] = solve(bA[i], None if bB is None else bB[i], None if bX is None else bX[i])
    return E_all.reshape(batch + (k,)), X_all.reshape(batch + (m, k))
