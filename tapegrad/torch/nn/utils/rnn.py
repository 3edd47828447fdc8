"""``torch.nn.utils.rnn``: sequences of different lengths for the recurrent layers.

A ``PackedSequence`` holds a batch of sequences sorted by length, longest
first, step by step: ``data`` is the first step of every sequence, then the
second step of those that have one, and so on; ``batch_sizes[t]`` says how
many sequences have a step ``t``. ``sorted_indices`` (None when the input was
already sorted) says which input sequence is at each sorted place and
``unsorted_indices`` is its inverse. ``nn.RNN``, ``nn.LSTM`` and ``nn.GRU``
take one and return one.

Packing, padding and unpacking are each one ``index_select`` of the rows of
``data`` (padding: of ``data`` with one padding row appended), so the
gradient is one scatter-add, whatever the number of steps.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import Any

import numpy as np

from tapegrad.torch._creation import as_tensor, cat, full
from tapegrad.torch._tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pack_sequence",
           "pad_packed_sequence", "pad_sequence", "unpack_sequence", "unpad_sequence"]

_PackedSequenceBase = namedtuple("_PackedSequenceBase", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


def _ints(x: Any) -> np.ndarray:
    """A list, tuple or tensor of ints as an int64 NumPy vector."""
    return np.asarray(x.tolist() if isinstance(x, Tensor) else x, dtype=np.int64).reshape(-1)


def _index(a: np.ndarray) -> Tensor:
    return as_tensor(np.ascontiguousarray(a, dtype=np.int64))


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of the permutation ``permutation`` (an int64 tensor), or None for None."""
    if permutation is None:
        return None
    p = _ints(permutation)
    inv = np.empty_like(p)
    inv[p] = np.arange(p.size)
    return _index(inv)


class PackedSequence(_PackedSequenceBase):
    """A batch of sequences of different lengths, packed step by step (see the
    module docstring); a named tuple ``(data, batch_sizes, sorted_indices,
    unsorted_indices)``. Made by ``pack_padded_sequence`` and
    ``pack_sequence``, not by hand."""

    def __new__(cls, data: Any, batch_sizes: Tensor | None = None, sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PackedSequence((data, batch_sizes)), as PyTorch allows
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise TypeError("PackedSequence: without batch_sizes, data must be a pair (data, batch_sizes)")
            data, batch_sizes = data
        if isinstance(batch_sizes, Tensor) and batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn. "
                             "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The sequence with ``data`` moved or cast as ``Tensor.to`` does
        (the indices follow to the device); ``self`` when nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        dev = data.device
        idx = [None if i is None else i.to(dev) for i in (self.sorted_indices, self.unsorted_indices)]
        return type(self)(data, self.batch_sizes, idx[0], idx[1])

    def cpu(self) -> PackedSequence:
        return self.to("cpu")

    def cuda(self, *args: Any, **kwargs: Any) -> PackedSequence:
        return self.to("cuda")

    def double(self) -> PackedSequence:
        return self.to(dtype=self.data.double().dtype)

    def float(self) -> PackedSequence:
        return self.to(dtype=self.data.float().dtype)

    def half(self) -> PackedSequence:
        return self.to(dtype=self.data.half().dtype)

    def long(self) -> PackedSequence:
        return self.to(dtype=self.data.long().dtype)

    def int(self) -> PackedSequence:
        return self.to(dtype=self.data.int().dtype)

    @property
    def is_cuda(self) -> bool:
        """Whether ``data`` is on a CUDA device."""
        return self.data.device.type == "cuda"

    def is_pinned(self) -> bool:
        return False


def _sorted(lengths: Any, batch: int, enforce_sorted: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """The lengths, checked, in decreasing order, and the sorting permutation (None if ``enforce_sorted``)."""
    lens = _ints(lengths)
    if lens.size != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {lens.size} "
                           f"(batch_size={batch})")
    if enforce_sorted:
        if np.any(lens[1:] > lens[:-1]):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                               "to sidestep this requirement if you do not need ONNX exportability.")
        order = None
    else:
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
    if lens.size and lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    return lens, order


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,  # noqa: A002
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch: ``input`` is ``(T, B, *)`` (``(B, T, *)`` with
    ``batch_first``) and sequence ``b`` is its first ``lengths[b]`` steps.

    With ``enforce_sorted=True`` the lengths must not increase; otherwise the
    sequences are sorted here and ``sorted_indices`` records the order.
    Returns the ``PackedSequence``; its ``data`` is one ``index_select`` of
    ``input``'s rows (one scatter-add back in the backward pass).
    """
    if input.dim() < 2:
        raise ValueError(f"pack_padded_sequence: input must have at least 2 dimensions (steps and batch), "
                         f"got {input.dim()}")
    steps, batch = (input.shape[1], input.shape[0]) if batch_first else (input.shape[0], input.shape[1])
    lens, order = _sorted(lengths, batch, enforce_sorted)
    if lens.size and lens[0] > steps:
        raise RuntimeError(f"pack_padded_sequence: a length of {int(lens[0])} is longer than the input's "
                           f"{steps} steps")
    sizes = (lens[None, :] > np.arange(int(lens[0]) if lens.size else 0)[:, None]).sum(1)
    seq = order if order is not None else np.arange(batch)
    t_idx = np.concatenate([np.full(s, t) for t, s in enumerate(sizes)]) if sizes.size else np.zeros(0, np.int64)
    b_idx = np.concatenate([seq[:s] for s in sizes]) if sizes.size else np.zeros(0, np.int64)
    rows = b_idx * steps + t_idx if batch_first else t_idx * batch + b_idx
    data = input.reshape(batch * steps, *input.shape[2:]).index_select(0, _index(rows))
    sorted_indices = None if order is None else _index(order)
    return PackedSequence(data, _index(sizes), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """The inverse of ``pack_padded_sequence``: ``(padded, lengths)``.

    ``padded`` is ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``), the
    sequences in their original order, ``padding_value`` after each one's
    end, and ``T`` the longest length or ``total_length`` when given;
    ``lengths`` is an int64 tensor of the sequences' lengths.
    """
    sizes = _ints(sequence.batch_sizes)
    steps, batch = sizes.size, (int(sizes[0]) if sizes.size else 0)
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {steps}")
        steps_out = total_length
    else:
        steps_out = steps
    lens = (sizes[None, :] > np.arange(batch)[:, None]).sum(1)  # sorted order
    place = _ints(sequence.unsorted_indices) if sequence.unsorted_indices is not None else np.arange(batch)
    data = sequence.data
    start = np.concatenate([[0], np.cumsum(sizes)])
    t = np.arange(steps_out)[:, None]
    j = place[None, :]
    pad_row = int(start[-1])
    src = np.where(t < lens[j], start[np.minimum(t, max(steps - 1, 0))] + j, pad_row)
    if batch_first:
        src = src.T
    pad = full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    padded = cat([data, pad], 0).index_select(0, _index(src.reshape(-1)))
    shape = (batch, steps_out) if batch_first else (steps_out, batch)
    return padded.reshape(*shape, *data.shape[1:]), _index(lens[place])


def pad_sequence(sequences: Sequence[Tensor], batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack tensors of shapes ``(L_i, *)`` into one ``(max L, B, *)`` tensor
    (``(B, max L, *)`` with ``batch_first``), each padded with
    ``padding_value`` after its end (before its start with ``padding_side="left"``)."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    first = sequences[0]
    for s in sequences[1:]:
        if s.dim() != first.dim():
            raise RuntimeError(f"pad_sequence: all sequences must have the same number of dimensions, got "
                               f"{first.dim()} and {s.dim()}")
        for d in range(1, first.dim()):
            if s.shape[d] != first.shape[d]:
                raise RuntimeError(f"The size of tensor a ({first.shape[d]}) must match the size of tensor b "
                                   f"({s.shape[d]}) at non-singleton dimension {d}")
    lens = np.array([s.shape[0] for s in sequences], dtype=np.int64)
    steps, batch = int(lens.max()), len(sequences)
    start = np.concatenate([[0], np.cumsum(lens)])
    t = np.arange(steps)[:, None]
    shift = steps - lens[None, :] if padding_side == "left" else 0
    k = t - shift  # the step of sequence b at padded place t
    src = np.where((k >= 0) & (k < lens[None, :]), start[:-1][None, :] + k, int(start[-1]))
    if batch_first:
        src = src.T
    rows = cat([s.reshape(s.shape[0], -1) if s.dim() != 1 else s.reshape(-1, 1) for s in sequences], 0)
    pad = full((1, rows.shape[1]), padding_value, dtype=rows.dtype, device=rows.device)
    padded = cat([rows, pad], 0).index_select(0, _index(src.reshape(-1)))
    shape = (batch, steps) if batch_first else (steps, batch)
    return padded.reshape(*shape, *first.shape[1:])


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack tensors of shapes ``(L_i, *)``: ``pad_sequence`` then
    ``pack_padded_sequence`` with their lengths."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths: Any, batch_first: bool = False) -> list[Tensor]:
    """The inverse of ``pad_sequence``: the list of the sequences, each cut to its length."""
    lens = _ints(lengths)
    if batch_first:
        return [padded_sequences[b, : int(n)] for b, n in enumerate(lens)]
    return [padded_sequences[: int(n), b] for b, n in enumerate(lens)]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The inverse of ``pack_sequence``: the list of the sequences, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
