"""``ember.nn.utils.rnn`` (mirrors ``torch/nn/utils/rnn.py``): ``PackedSequence`` and packing / padding of
variable-length sequences.

A packed sequence stores time step after time step, each holding the rows of the sequences still running
at that step (sequences sorted by decreasing length), and ``batch_sizes[t]`` says how many there are."""
from __future__ import annotations

from typing import Any, NamedTuple, Self, TYPE_CHECKING

import ember


if TYPE_CHECKING:
    from ember._tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


class _PackedSequenceBase(NamedTuple):
    data: object
    batch_sizes: object
    sorted_indices: object
    unsorted_indices: object


class PackedSequence(_PackedSequenceBase):
    """Holds the data and list of ``batch_sizes`` of a packed sequence; build it with
    :func:`pack_padded_sequence` or :func:`pack_sequence`, not by hand."""

    def __new__(cls, data: Any, batch_sizes: Any = None, sorted_indices: Any = None,
                unsorted_indices: Any = None) -> Any:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            if batch_sizes.device.type != "cpu":
                raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never "
                                 "be created manually. They should be instantiated by functions like "
                                 "pack_sequence and pack_padded_sequences in nn.utils.rnn. "
                                 "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data: Any) -> Any:
        if data is self.data:
            return self
        idx = {}
        for k in ("sorted_indices", "unsorted_indices"):
            v = getattr(self, k)
            idx[k] = v.to(data.device) if v is not None else None
        return type(self)(data, self.batch_sizes, idx["sorted_indices"], idx["unsorted_indices"])

    def to(self, *args: Any, **kwargs: Any) -> Self:
        return self._with_data(self.data.to(*args, **kwargs))

    def cuda(self, *args: Any, **kwargs: Any) -> Self:
        return self._with_data(self.data.cuda(*args, **kwargs))

    def cpu(self, *args: Any, **kwargs: Any) -> Self:
        return self._with_data(self.data.cpu(*args, **kwargs))

    def double(self) -> Self:
        return self.to(dtype=ember.double)

    def float(self) -> Self:
        return self.to(dtype=ember.float)

    def half(self) -> Self:
        return self.to(dtype=ember.half)

    def long(self) -> Any:
        return self.to(dtype=ember.long)

    def int(self) -> Any:
        return self.to(dtype=ember.int)

    def short(self) -> Any:
        return self.to(dtype=ember.short)

    def char(self) -> Any:
        return self.to(dtype=ember.int8)

    def byte(self) -> Any:
        return self.to(dtype=ember.uint8)

    @property
    def is_cuda(self) -> Any:
        return self.data.is_cuda

    def is_pinned(self) -> Any:
        return False


def invert_permutation(permutation: Any) -> Any:
    if permutation is None:
        return None
    output = ember.empty_like(permutation)
    output.scatter_(0, permutation, ember.arange(0, permutation.numel(), device=permutation.device))
    return output


def _batch_sizes_of(lengths: Any) -> Any:
    """``batch_sizes[t]`` = how many of the (decreasing) ``lengths`` exceed ``t``."""
    lens = [int(v) for v in lengths]
    if any(v <= 0 for v in lens):
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    return [sum(1 for v in lens if v > t) for t in range(lens[0] if lens else 0)]


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False, enforce_sorted: bool = True) -> Any:
    """Packs a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) of sequences of the given
    lengths."""
    if not isinstance(lengths, ember.Tensor):
        lengths = ember.as_tensor(lengths, dtype=ember.int64, device="cpu")
    else:
        lengths = lengths.to(dtype=ember.int64, device="cpu")
    if lengths.dim() != 1:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {lengths.numel()} "
                           f"(batch_size={input.size(0 if batch_first else 1)})")
    if enforce_sorted:
        sorted_indices = None
        lens = lengths.tolist()
        if any(b > a for a, b in zip(lens, lens[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You "
                               "can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
    else:
        lengths, sorted_indices = ember.sort(lengths, descending=True, stable=True)
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)  # noqa: A001
        lens = lengths.tolist()
    x = input.transpose(0, 1) if batch_first else input
    T, B = x.size(0), x.size(1)
    if len(lens) != B:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} "
                           f"(batch_size={B})")
    bs = _batch_sizes_of(lens)
    if len(bs) > T:
        raise RuntimeError(f"Expected sequence length to be larger than or equal to the largest length, but got "
                           f"{T} and {len(bs)}")
    rows = [t * B + b for t, n in enumerate(bs) for b in range(n)]
    data = x.reshape((T * B,) + tuple(x.shape[2:])).index_select(0, ember.tensor(rows, dtype=ember.int64,
                                                                                  device=x.device))
    return PackedSequence(data, ember.tensor(bs, dtype=ember.int64), sorted_indices, None)


def pad_packed_sequence(sequence: Any, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: Any = None) -> Any:
    """Inverse of :func:`pack_padded_sequence`: the padded batch and the length of each sequence."""
    bs = [int(b) for b in sequence.batch_sizes.tolist()]
    max_len = len(bs)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {max_len}")
        max_len = total_length
    data = sequence.data
    B = bs[0] if bs else 0
    rows = [t * B + b for t, n in enumerate(bs) for b in range(n)]
    flat = ember.full((max_len * B,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    flat = flat.index_copy(0, ember.tensor(rows, dtype=ember.int64, device=data.device), data)
    out = flat.reshape((max_len, B) + tuple(data.shape[1:]))
    if batch_first:
        out = out.transpose(0, 1)
    lengths = ember.tensor([sum(1 for n in bs if n > b) for b in range(B)], dtype=ember.int64)
    if sequence.unsorted_indices is not None:
        out = out.index_select(0 if batch_first else 1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices.cpu()]
    return out, lengths


def pad_sequence(sequences: Any, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = 'right') -> Any:
    """Stacks tensors of shape ``(L_i, *)`` into ``(max L, B, *)`` (``(B, max L, *)`` with ``batch_first``),
    padding with ``padding_value`` on ``padding_side``."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, ember.Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    max_len = max(s.size(0) for s in sequences)
    padded = []
    for s in sequences:
        extra = max_len - s.size(0)
        pads = [0, 0] * (s.dim() - 1) + ([0, extra] if padding_side == "right" else [extra, 0])
        padded.append(ember.ops.aten.constant_pad_nd(s, pads, padding_value) if extra else s)
    return ember.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Any, lengths: Any, batch_first: bool = False) -> Any:
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:int(n)] for seq, n in zip(padded_sequences, lengths)]


def pack_sequence(sequences: Any, enforce_sorted: bool = True) -> Any:
    """Packs a list of variable-length tensors ``(L_i, *)``."""
    lengths = ember.tensor([v.size(0) for v in sequences], dtype=ember.int64)
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: Any) -> Any:
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
