"""``flex_attention`` (``torch/nn/attention/flex_attention.py``): attention whose scores a Python function may
change (``score_mod(score, b, h, q_idx, kv_idx)``) and whose mask a Python function describes
(``mask_mod(b, h, q_idx, kv_idx) -> bool``), summarised per block of 128 x 128 positions in a ``BlockMask``.

PyTorch compiles these functions into one fused kernel; without ``torch.compile`` it runs them eagerly over the
full score matrix. ember does the latter: the functions are called once on broadcastable index tensors (``b`` of
shape ``(B, 1, 1, 1)``, ``h`` ``(1, H, 1, 1)``, ``q_idx`` ``(1, 1, Q, 1)``, ``kv_idx`` ``(1, 1, 1, KV)``), which
gives every position's value for functions written with tensor ops (arithmetic, comparisons, ``where``,
indexing a tensor by them). The ``BlockMask`` keeps PyTorch's block summaries (which blocks are partly or fully
unmasked, in PyTorch's order), so code that reads them sees PyTorch's numbers.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import ember

__all__ = ["BlockMask", "create_block_mask", "create_mask", "flex_attention", "and_masks", "or_masks", "noop_mask",
           "AuxRequest", "AuxOutput"]

_DEFAULT_SPARSE_BLOCK_SIZE = 128
_mask_mod_signature = Callable[[Any, Any, Any, Any], Any]
_score_mod_signature = Callable[[Any, Any, Any, Any, Any], Any]


def noop_mask(batch: Any, head: Any, token_q: Any, token_kv: Any) -> Any:
    """The mask that keeps everything."""
    return batch.new_ones((), dtype=ember.bool)


def _identity(score: Any, batch: Any, head: Any, token_q: Any, token_kv: Any) -> Any:
    return score


def and_masks(*mask_mods: _mask_mod_signature) -> _mask_mod_signature:
    """Keep a position where every one of ``mask_mods`` keeps it."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def and_mask(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        result = b.new_ones((), dtype=ember.bool)
        for m in mask_mods:
            result = result & m(b, h, q_idx, kv_idx)
        return result
    return and_mask


def or_masks(*mask_mods: _mask_mod_signature) -> _mask_mod_signature:
    """Keep a position where any one of ``mask_mods`` keeps it."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def or_mask(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        result = b.new_zeros((), dtype=ember.bool)
        for m in mask_mods:
            result = result | m(b, h, q_idx, kv_idx)
        return result
    return or_mask


def _grids(B: int, H: int, Q: int, KV: int, device: Any) -> tuple[Any, Any, Any, Any]:
    def ar(n: int, shape: tuple[int, ...]) -> Any:
        return ember.arange(n, device=device).view(shape)
    return ar(B, (B, 1, 1, 1)), ar(H, (1, H, 1, 1)), ar(Q, (1, 1, Q, 1)), ar(KV, (1, 1, 1, KV))


def create_mask(mod_fn: Any, B: int | None, H: int | None, Q_LEN: int, KV_LEN: int, device: Any = None) -> Any:
    """The dense ``(B, H, Q_LEN, KV_LEN)`` boolean mask of a ``mask_mod`` (or the kept positions of a
    ``score_mod``: those not sent to -inf)."""
    B, H = B or 1, H or 1
    grids = _grids(B, H, Q_LEN, KV_LEN, device)
    if _is_score_mod(mod_fn):
        out = mod_fn(ember.zeros((), device=device), *grids)
        return (out != float("-inf")).expand(B, H, Q_LEN, KV_LEN)
    return ember.as_tensor(mod_fn(*grids)).bool().expand(B, H, Q_LEN, KV_LEN)


def _is_score_mod(fn: Any) -> bool:
    import inspect
    try:
        return len(inspect.signature(fn).parameters) == 5
    except (TypeError, ValueError):
        return False


def _ordered(dense: Any) -> tuple[Any, Any]:
    """Per row of a block-level 0/1 matrix: how many blocks are set, and the block indices set ones first
    (``_dense_to_ordered``)."""
    num = dense.sum(-1).to(ember.int32)
    idx = ember.argsort(dense.to(ember.int32), dim=-1, descending=True, stable=True).to(ember.int32)
    return num, idx


class BlockMask:
    """Which (query block, key block) pairs ``flex_attention`` must look at: partly unmasked blocks
    (``kv_num_blocks`` / ``kv_indices``, where ``mask_mod`` is applied) and fully unmasked ones
    (``full_kv_num_blocks`` / ``full_kv_indices``), per batch and head; the ``q_*`` fields are the same by key
    block. ``mask_mod`` is kept to mask within the partial blocks."""

    def __init__(self, seq_lengths: tuple[int, int], kv_num_blocks: Any, kv_indices: Any,
                 full_kv_num_blocks: Any, full_kv_indices: Any, q_num_blocks: Any, q_indices: Any,
                 full_q_num_blocks: Any, full_q_indices: Any, BLOCK_SIZE: Any = (128, 128),
                 mask_mod: _mask_mod_signature = noop_mask, **kwargs: Any) -> None:
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        self.seq_lengths = tuple(seq_lengths)
        self.kv_num_blocks, self.kv_indices = kv_num_blocks, kv_indices
        self.full_kv_num_blocks, self.full_kv_indices = full_kv_num_blocks, full_kv_indices
        self.q_num_blocks, self.q_indices = q_num_blocks, q_indices
        self.full_q_num_blocks, self.full_q_indices = full_q_num_blocks, full_q_indices
        self.BLOCK_SIZE = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)
        self.mask_mod = mask_mod

    @classmethod
    def from_kv_blocks(cls, kv_num_blocks: Any, kv_indices: Any, full_kv_num_blocks: Any = None,
                       full_kv_indices: Any = None, BLOCK_SIZE: Any = _DEFAULT_SPARSE_BLOCK_SIZE,
                       mask_mod: Any = None, seq_lengths: Any = None, **kwargs: Any) -> BlockMask:
        """A BlockMask from its key-block fields; the query-block fields are derived."""
        bs = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)
        partial = _to_dense(kv_num_blocks, kv_indices)
        q_num, q_idx = _ordered(partial.transpose(-2, -1))
        fq_num = fq_idx = None
        if full_kv_num_blocks is not None:
            fq_num, fq_idx = _ordered(_to_dense(full_kv_num_blocks, full_kv_indices).transpose(-2, -1))
        if seq_lengths is None:
            seq_lengths = (kv_num_blocks.shape[-1] * bs[0], kv_indices.shape[-1] * bs[1])
        return cls(seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices, q_num, q_idx,
                   fq_num, fq_idx, bs, mask_mod or noop_mask)

    def as_tuple(self, flatten: bool = True) -> tuple[Any, ...]:
        return (self.seq_lengths[0], self.seq_lengths[1], self.kv_num_blocks, self.kv_indices,
                self.full_kv_num_blocks, self.full_kv_indices, self.q_num_blocks, self.q_indices,
                self.full_q_num_blocks, self.full_q_indices, *self.BLOCK_SIZE, self.mask_mod)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.kv_indices.shape[:-2]) + self.seq_lengths

    def numel(self) -> int:
        return math.prod(self.shape)

    def to_dense(self) -> Any:
        """The block-level mask, ``(B, H, query blocks, key blocks)``: 1 where a block is looked at."""
        dense = _to_dense(self.kv_num_blocks, self.kv_indices)
        if self.full_kv_num_blocks is not None:
            dense = dense | _to_dense(self.full_kv_num_blocks, self.full_kv_indices)
        return dense

    def sparsity(self) -> float:
        """The share of the positions (in %) that no block covers."""
        computed = float(self.to_dense().sum()) * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1]
        total = self.numel()
        return 100 * (1 - computed / total)

    def __getitem__(self, index: Any) -> BlockMask:
        def sub(t: Any) -> Any:
            return None if t is None else t[index]
        return BlockMask.from_kv_blocks(sub(self.kv_num_blocks), sub(self.kv_indices), sub(self.full_kv_num_blocks),
                                        sub(self.full_kv_indices), self.BLOCK_SIZE, self.mask_mod, self.seq_lengths)

    def to(self, device: Any) -> BlockMask:
        def mv(t: Any) -> Any:
            return None if t is None else t.to(device)
        return BlockMask(self.seq_lengths, mv(self.kv_num_blocks), mv(self.kv_indices), mv(self.full_kv_num_blocks),
                         mv(self.full_kv_indices), mv(self.q_num_blocks), mv(self.q_indices),
                         mv(self.full_q_num_blocks), mv(self.full_q_indices), self.BLOCK_SIZE, self.mask_mod)

    def __repr__(self) -> str:
        def shape(t: Any) -> Any:
            return None if t is None else t.shape
        return (f"BlockMask(\n    kv_num_blocks={shape(self.kv_num_blocks)},\n"
                f"    kv_indices={shape(self.kv_indices)},\n"
                f"    full_kv_num_blocks={shape(self.full_kv_num_blocks)},\n"
                f"    full_kv_indices={shape(self.full_kv_indices)},\n    q_num_blocks={shape(self.q_num_blocks)},\n"
                f"    q_indices={shape(self.q_indices)},\n    full_q_num_blocks={shape(self.full_q_num_blocks)},\n"
                f"    full_q_indices={shape(self.full_q_indices)},\n    BLOCK_SIZE={self.BLOCK_SIZE},\n"
                f"    shape={self.shape},\n    sparsity={self.sparsity():.2f}%,\n"
                f"    mask_mod={getattr(self.mask_mod, '__name__', self.mask_mod)}\n)")


def _to_dense(num_blocks: Any, indices: Any) -> Any:
    """Back from (count, ordered indices) to the block-level 0/1 matrix (``_ordered_to_dense``)."""
    n = indices.shape[-1]
    keep = ember.arange(n, device=indices.device).view((1,) * (indices.dim() - 1) + (n,)) < num_blocks.unsqueeze(-1)
    dense = ember.zeros(tuple(indices.shape), dtype=ember.int32, device=indices.device)
    return dense.scatter(-1, indices.long(), keep.to(ember.int32))


def create_block_mask(mask_mod: _mask_mod_signature, B: int | None, H: int | None, Q_LEN: int, KV_LEN: int,
                      device: Any = None, BLOCK_SIZE: Any = _DEFAULT_SPARSE_BLOCK_SIZE, _compile: bool = False,
                      separate_full_blocks: bool = True, **kwargs: Any) -> BlockMask:
    """The BlockMask of ``mask_mod`` over a ``Q_LEN`` x ``KV_LEN`` attention (B, H None: shared by every batch /
    head). A block is full when all its positions are kept (positions past the ends count as masked), partial
    when some are."""
    bq, bkv = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else BLOCK_SIZE
    b, h = B or 1, H or 1
    mask = create_mask(mask_mod, b, h, Q_LEN, KV_LEN, device)
    nq, nkv = -(-Q_LEN // bq), -(-KV_LEN // bkv)
    padded = ember.nn.functional.pad(mask.to(ember.int32), (0, nkv * bkv - KV_LEN, 0, nq * bq - Q_LEN))
    counts = padded.view(b, h, nq, bq, nkv, bkv).sum((3, 5))
    full = counts == bq * bkv
    partial = (counts > 0) & ~full
    if not separate_full_blocks:
        partial, full = partial | full, None
    kv_num, kv_idx = _ordered(partial.to(ember.int32))
    q_num, q_idx = _ordered(partial.to(ember.int32).transpose(-2, -1))
    fkv_num = fkv_idx = fq_num = fq_idx = None
    if full is not None:
        fkv_num, fkv_idx = _ordered(full.to(ember.int32))
        fq_num, fq_idx = _ordered(full.to(ember.int32).transpose(-2, -1))
    return BlockMask((Q_LEN, KV_LEN), kv_num, kv_idx, fkv_num, fkv_idx, q_num, q_idx, fq_num, fq_idx, (bq, bkv),
                     mask_mod)


@dataclass(frozen=True)
class AuxRequest:
    """Which extra outputs ``flex_attention`` returns: ``lse`` (the logsumexp of each query's scores) and
    ``max_scores`` (their maximum)."""
    lse: bool = False
    max_scores: bool = False


@dataclass(frozen=True)
class AuxOutput:
    lse: Any = None
    max_scores: Any = None


def flex_attention(query: Any, key: Any, value: Any, score_mod: _score_mod_signature | None = None,
                   block_mask: BlockMask | None = None, scale: float | None = None, enable_gqa: bool = False,
                   return_lse: bool = False, kernel_options: Any = None, *,
                   return_aux: AuxRequest | None = None) -> Any:
    """Attention of ``query`` ``(B, Hq, L, E)`` over ``key`` / ``value`` ``(B, Hkv, S, E / Ev)``: scores
    ``q . k * scale`` changed by ``score_mod``, masked by ``block_mask``'s ``mask_mod``, softmax over the keys
    (a query with every key masked gets zeros), times ``value``."""
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise NotImplementedError("NYI: query, key, and value must be 4D tensors")
    if query.dtype != key.dtype or query.dtype != value.dtype:
        raise ValueError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                         f"{query.dtype}, key.dtype: {key.dtype}, and value.dtype: {value.dtype} instead.")
    B, Hq, L, E = query.shape
    Hkv, S = key.shape[1], key.shape[2]
    if Hq != Hkv:
        if not enable_gqa:
            raise ValueError(f"Expect query and key/value to have the same number of heads but got Hq={Hq} and "
                             f"Hkv={Hkv}. Try setting enable_gqa=True for GQA.")
        if Hq % Hkv:
            raise ValueError(f"Expect number of query heads to be a multiple of kv heads for GQA but got Hq={Hq} "
                             f"and Hkv={Hkv}.")
        key = key.repeat_interleave(Hq // Hkv, dim=1)
        value = value.repeat_interleave(Hq // Hkv, dim=1)
    if block_mask is not None and tuple(block_mask.seq_lengths) != (L, S):
        raise ValueError(f"block_mask was created for block_mask.shape={block_mask.shape} but got "
                         f"q_len={L} and kv_len={S}. As the block mask was created for a smaller length than you're "
                         "using it for, you likely need to create a new block mask.")
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    work = ember.promote_types(query.dtype, ember.float32)
    scores = (query.to(work) @ key.to(work).transpose(-2, -1)) * scale
    grids = _grids(B, Hq, L, S, query.device)
    if score_mod is not None:
        scores = score_mod(scores, *grids)
    if block_mask is not None and block_mask.mask_mod is not noop_mask:
        keep = ember.as_tensor(block_mask.mask_mod(*grids)).bool()
        scores = scores.masked_fill(~keep, float("-inf"))
    lse = scores.logsumexp(-1)
    dead = lse == float("-inf")
    probs = (scores - lse.masked_fill(dead, 0).unsqueeze(-1)).exp()
    out = (probs @ value.to(work)).to(query.dtype)
    lse = lse.to(ember.float32) if work is not ember.float64 else lse
    if return_aux is not None:
        return out, AuxOutput(lse=lse if return_aux.lse else None,
                              max_scores=scores.amax(-1) if return_aux.max_scores else None)
    if return_lse:
        return out, lse
    return out
