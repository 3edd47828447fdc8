"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their cells.

Written with facade tensor operations: a Python loop over the time steps,
each step one matrix product per weight over the whole batch. The weights are
named and laid out as PyTorch's (``weight_ih_l{k}[_reverse]``, the gates
stacked in PyTorch's order: LSTM ``i f g o``, GRU ``r z n``) and drawn from
U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).

A layer's step of ``nn.LSTM`` is four tape entries: the concatenation
``[x_t, h]``, one ``linear`` with ``[W_ih W_hh]`` (concatenated once per
call) and the two fused primitives below, ``lstm_c`` and ``lstm_h``, in place
of the ten or so entries of the written-out cell; one of ``nn.GRU`` is three:
two ``linear`` and the fused ``gru_h``, in place of fourteen. The cells
(``LSTMCell``...) and ``nn.RNN`` (three entries already) keep the written-out
form, whose ``grad_fn`` names are PyTorch's.

The input may be a ``PackedSequence`` (``nn.utils.rnn``): the batch then
shrinks as sequences end (they are sorted by length, longest first), and
``h_n`` holds each sequence's state at its own last step. A padded input is
the packed case with every batch size equal.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any

import tapegrad as tg
import tapegrad.numpy as tnp
from tapegrad.backend import array_module
from tapegrad.core.primitive import defvjp, primitive
from tapegrad.core.traced import value
from tapegrad.torch._creation import cat, empty, stack, zeros
from tapegrad.torch._norm import reuse_last
from tapegrad.torch._tensor import Tensor
from tapegrad.torch._tensor_base import _result
from tapegrad.torch.nn import functional as F
from tapegrad.torch.nn import init
from tapegrad.torch.nn.modules.module import Module
from tapegrad.torch.nn.parameter import Parameter
from tapegrad.torch.nn.utils.rnn import PackedSequence

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# --- the fused LSTM step: two primitives (for speed: one entry each, not ten) ------------------------
# ``gates`` is ``(..., 4H)``, pre-activation, in PyTorch's order ``i f g o``;
# ``lstm_c(gates, c) = sigmoid(f) c + sigmoid(i) tanh(g)`` is the new cell state
# and ``lstm_h(gates, c') = sigmoid(o) tanh(c')`` the new hidden state. The
# sigmoid is ``(1 + tanh(x / 2)) / 2``: exact, and tanh is ~20x faster than a
# log-add-exp. The rules recompute the activations from ``gates`` (nothing
# more is kept) with tapegrad.numpy calls, so they differentiate again.


def _sig_np(x: Any) -> Any:
    t = array_module(x).tanh(x * 0.5)
    t *= 0.5
    t += 0.5
    return t


def _lstm_c(gates: Any, c: Any) -> Any:
    n = c.shape[-1]
    xp = array_module(gates)
    i, f, g = _sig_np(gates[..., :n]), _sig_np(gates[..., n:2 * n]), xp.tanh(gates[..., 2 * n:3 * n])
    f *= c
    i *= g
    f += i
    return f


def _lstm_h(gates: Any, c: Any) -> Any:
    o = _sig_np(gates[..., 3 * c.shape[-1]:])
    o *= array_module(c).tanh(c)
    return o


@functools.lru_cache(maxsize=64)
def _gate_consts(n: int, dtype: str, xp: Any) -> tuple[Any, Any]:
    """Per-gate constants over ``i f g o`` (each ``n`` wide): the scale ``s``
    and offset ``1 - s`` with ``act = s tanh(s x) + 1 - s`` (sigmoid: s = 1/2,
    tanh: s = 1); read only (shared between calls)."""
    s = xp.repeat(xp.asarray([0.5, 0.5, 1.0, 0.5], dtype=dtype), n)
    return s, 1.0 - s


def _acts(gates: Any, n: int) -> tuple[Any, Any]:
    """The activations of all four gates and their derivatives: ``sigmoid`` of
    ``i f o`` as ``(1 + tanh(x / 2)) / 2``, ``tanh`` of ``g``; four tapegrad.numpy
    calls on the whole ``(..., 4n)`` instead of four per gate."""
    s, off = _gate_consts(n, value(gates).dtype.str, array_module(value(gates)))
    t = tnp.tanh(gates * s)
    return t * s + off, (1 - t * t) * (s * s)


def _vjp_lstm_c_gates(ans: Any, gates: Any, c: Any) -> Any:
    def vjp(gc: Any) -> Any:
        n = c.shape[-1]
        a, da = _acts(gates, n)
        other = tnp.concatenate([a[..., 2 * n:3 * n], c, a[..., :n], tnp.zeros_like(c)], axis=-1)
        return other * tnp.concatenate([gc, gc, gc, gc], axis=-1) * da
    return vjp


def _vjp_lstm_h_gates(ans: Any, gates: Any, c: Any) -> Any:
    def vjp(gh: Any) -> Any:
        n = c.shape[-1]
        o = gates[..., 3 * n:]
        so = 0.5 * tnp.tanh(0.5 * o) + 0.5
        z = tnp.zeros_like(gh * c)
        return tnp.concatenate([z, z, z, gh * tnp.tanh(c) * (so - so * so)], axis=-1)
    return vjp


def _sig(x: Any) -> Any:
    return 0.5 * tnp.tanh(0.5 * x) + 0.5


lstm_c = primitive(_lstm_c, "lstm_c", batched=True)
lstm_h = primitive(_lstm_h, "lstm_h", batched=True)
defvjp(lstm_c, _vjp_lstm_c_gates, lambda ans, gates, c: lambda g: g * _sig(gates[..., c.shape[-1]:2 * c.shape[-1]]))
defvjp(lstm_h, _vjp_lstm_h_gates,
       lambda ans, gates, c: lambda g: g * _sig(gates[..., 3 * c.shape[-1]:]) * (1 - tnp.tanh(c) ** 2))


# --- the fused GRU step: one primitive ----------------------------------------------------------------
# ``gru_h(gi, gh, h)``: ``gi = x W_ih^T + b_ih`` and ``gh = h W_hh^T + b_hh``
# are ``(..., 3H)`` in PyTorch's order ``r z n``; with ``r = sigmoid(gi_r +
# gh_r)``, ``z = sigmoid(gi_z + gh_z)``, ``n = tanh(gi_n + r gh_n)`` the new
# hidden state is ``(1 - z) n + z h = n + z (h - n)``. The rules recompute the
# activations (tapegrad.numpy calls: they differentiate again); the
# cotangent of the pre-activations, shared by the rules of ``gi`` and ``gh``,
# is made once per cotangent (``reuse_last``).


def _gru_h(gi: Any, gh: Any, h: Any) -> Any:
    n = h.shape[-1]
    xp = array_module(gi)
    rz = gi[..., :2 * n] + gh[..., :2 * n]
    rz = _sig_np(rz)
    new = gh[..., 2 * n:] * rz[..., :n]
    new += gi[..., 2 * n:]
    xp.tanh(new, out=new)
    out = h - new
    out *= rz[..., n:]
    out += new
    return out


def _gru_parts(gi: Any, gh: Any, h: Any) -> tuple[Any, Any, Any]:
    """``r``, ``z`` and ``n`` of the step, as tapegrad.numpy functions of its arguments."""
    n = tnp.shape(h)[-1]
    rz = _sig(gi[..., :2 * n] + gh[..., :2 * n])
    r = rz[..., :n]
    return r, rz[..., n:], tnp.tanh(gi[..., 2 * n:] + r * gh[..., 2 * n:])


_gru_last: list[Any] = [None, None, set()]


def _gru_pre(g: Any, gi: Any, gh: Any, h: Any, who: int) -> tuple[Any, Any, Any]:
    """The cotangent of the pre-activations ``[a_r, a_z, a_n]`` (``(..., 3H)``),
    ``r`` and ``z``: made once for the three rules."""
    def make() -> tuple[Any, Any, Any]:
        r, z, nv = _gru_parts(gi, gh, h)
        dn = g * (1 - z) * (1 - nv * nv)
        dr = dn * gh[..., 2 * tnp.shape(h)[-1]:] * (r - r * r)
        dz = g * (h - nv) * (z - z * z)
        return tnp.concatenate([dr, dz, dn], axis=-1), r, z

    return reuse_last(_gru_last, (g, gi, gh, h), make, who, 3)  # type: ignore[no-any-return]


def _vjp_gru_gh(ans: Any, gi: Any, gh: Any, h: Any) -> Any:
    def vjp(g: Any) -> Any:
        da, r, _ = _gru_pre(g, gi, gh, h, 1)
        n = tnp.shape(h)[-1]
        return tnp.concatenate([da[..., :2 * n], da[..., 2 * n:] * r], axis=-1)
    return vjp


gru_h = primitive(_gru_h, "gru_h", batched=True)
defvjp(gru_h, lambda ans, gi, gh, h: lambda g: _gru_pre(g, gi, gh, h, 0)[0], _vjp_gru_gh,
       lambda ans, gi, gh, h: lambda g: g * _gru_pre(g, gi, gh, h, 2)[2])


def _batch_rule(prim: Any) -> Any:
    """Both arguments batched alike (an unbatched one broadcast), then one call."""
    def rule(args: Any, batched: Any, size: int) -> Any:
        return prim(*[a if b else tnp.broadcast_to(a, (size, *tnp.shape(a))) for a, b in zip(args, batched)])
    return rule


tg.defbatch(lstm_c, _batch_rule(lstm_c))
tg.defbatch(lstm_h, _batch_rule(lstm_h))
tg.defbatch(gru_h, _batch_rule(gru_h))


def _lstm_fused(x: Tensor, h: Any, w_cat: Tensor, b: Tensor | None) -> tuple[Tensor, Tensor]:
    """One LSTM step over the batch: ``(h', c')`` from ``x`` and ``h = (h, c)``
    (``w_cat`` is ``[W_ih W_hh]``, ``b`` is ``b_ih + b_hh``)."""
    hx, cx = h
    gates = F.linear(cat([x, hx], 1), w_cat, b)
    c = _result(lstm_c(gates._value, cx._value), "AddBackward0", (gates, cx))
    return _result(lstm_h(gates._value, c._value), "MulBackward0", (gates, c)), c


def _gru_fused(x: Tensor, h: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
               b_hh: Tensor | None) -> Tensor:
    """One GRU step over the batch: three tape entries (two ``linear``, ``gru_h``)."""
    gi, gh = F.linear(x, w_ih, b_ih), F.linear(h, w_hh, b_hh)
    return _result(gru_h(gi._value, gh._value, h._value), "AddBackward0", (gi, gh, h))


# --- the written-out steps (the cells; RNN and GRU layers) -------------------------------------------


def _lin(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    return F.linear(x, w, b)


def _rnn_step(mode: str, x: Tensor, h: Any, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
              b_hh: Tensor | None) -> Any:
    """One step of cell ``mode`` for a batch: the new hidden state (LSTM: ``(h, c)``)."""
    if mode == "LSTM":
        hx, cx = h
        gates = _lin(x, w_ih, b_ih) + _lin(hx, w_hh, b_hh)
        i, f, g, o = gates.chunk(4, -1)
        c = f.sigmoid() * cx + i.sigmoid() * g.tanh()
        return o.sigmoid() * c.tanh(), c
    if mode == "GRU":
        gi = _lin(x, w_ih, b_ih).chunk(3, -1)
        gh = _lin(h, w_hh, b_hh).chunk(3, -1)
        r = (gi[0] + gh[0]).sigmoid()
        z = (gi[1] + gh[1]).sigmoid()
        n = (gi[2] + r * gh[2]).tanh()
        return (1 - z) * n + z * h
    pre = _lin(x, w_ih, b_ih) + _lin(h, w_hh, b_hh)
    return pre.tanh() if mode == "RNN_TANH" else pre.relu()


def _run_direction(mode: str, xs: list[Tensor], sizes: list[int], h0: Any, w: tuple[Any, ...],
                   reverse: bool) -> tuple[list[Tensor], Any]:
    """One layer in one direction over the steps ``xs`` (step ``t`` holds the
    first ``sizes[t]`` sequences, ``sizes`` not increasing). Returns the
    outputs per step and the final state of every sequence (LSTM: ``(h, c)``),
    each taken at that sequence's own last step."""
    lstm = mode == "LSTM"
    n = sizes[0] if sizes else 0
    if lstm:
        w_ih, w_hh, b_ih, b_hh = w
        w_cat = cat([w_ih, w_hh], 1)
        b = None if b_ih is None else b_ih + b_hh

        def step(x: Tensor, h: Any) -> Any:
            return _lstm_fused(x, h, w_cat, b)
    elif mode == "GRU":
        def step(x: Tensor, h: Any) -> Any:
            return _gru_fused(x, h, *w)
    else:
        def step(x: Tensor, h: Any) -> Any:
            return _rnn_step(mode, x, h, *w)

    def part(h: Any, lo: int, hi: int | None) -> Any:
        return tuple(s[lo:hi] for s in h) if lstm else h[lo:hi]

    ys: list[Tensor] = [None] * len(xs)  # type: ignore[list-item]
    if not reverse:
        h, done = h0, []
        for t, x in enumerate(xs):
            if sizes[t] < (sizes[t - 1] if t else n):  # sequences that ended: their last state is final
                done.append(part(h, sizes[t], None))
                h = part(h, 0, sizes[t])
            h = step(x, h)
            ys[t] = h[0] if lstm else h
        if done:
            pieces = [h, *done[::-1]]
            h = tuple(cat([p[k] for p in pieces], 0) for k in range(2)) if lstm else cat(pieces, 0)
        return ys, h
    h = part(h0, 0, sizes[-1]) if sizes and sizes[-1] < n else h0
    for t in range(len(xs) - 1, -1, -1):
        have = sizes[t + 1] if t + 1 < len(xs) else sizes[t]
        if sizes[t] > have:  # sequences that start here (from the end) join with their initial state
            more = part(h0, have, sizes[t])
            h = tuple(cat([a, m], 0) for a, m in zip(h, more)) if lstm else cat([h, more], 0)
        h = step(xs[t], h)
        ys[t] = h[0] if lstm else h
    return ys, h


class RNNBase(Module):
    """The multi-layer, optionally bidirectional recurrent layer of cell ``mode``."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero" if isinstance(hidden_size, int)
                             else f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size:
            raise NotImplementedError("tapegrad.torch: LSTM(proj_size=...) is not supported")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", UserWarning, stacklevel=3)
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        dirs = 2 if bidirectional else 1
        gate = _GATES[mode] * hidden_size
        self._flat_weights_names: list[str] = []
        for layer in range(num_layers):
            for d in range(dirs):
                suffix = f"_l{layer}" + ("_reverse" if d else "")
                in_size = input_size if layer == 0 else hidden_size * dirs
                shapes: list[tuple[str, tuple[int, ...]]] = [("weight_ih", (gate, in_size)),
                                                             ("weight_hh", (gate, hidden_size))]
                if bias:
                    shapes += [("bias_ih", (gate,)), ("bias_hh", (gate,))]
                for name, shape in shapes:
                    setattr(self, name + suffix, Parameter(empty(shape, dtype=dtype, device=device)))
                    self._flat_weights_names.append(name + suffix)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def _weights(self, layer: int, d: int) -> tuple[Any, ...]:
        s = f"_l{layer}" + ("_reverse" if d else "")
        if self.bias:
            return (getattr(self, "weight_ih" + s), getattr(self, "weight_hh" + s),
                    getattr(self, "bias_ih" + s), getattr(self, "bias_hh" + s))
        return getattr(self, "weight_ih" + s), getattr(self, "weight_hh" + s), None, None

    def flatten_parameters(self) -> None:
        """Nothing to do: the weights are used where they are (PyTorch packs them for cuDNN)."""

    @property
    def all_weights(self) -> list[list[Parameter]]:
        names = self._flat_weights_names
        per = 4 if self.bias else 2
        return [[getattr(self, n) for n in names[i:i + per]] for i in range(0, len(names), per)]

    def _check_hidden(self, h: Tensor, want: tuple[int, ...], what: str = "hidden") -> None:
        if tuple(h.shape) != want:
            raise RuntimeError(f"Expected {what} size {want}, got {list(h.shape)}")

    def forward(self, input: Any, hx: Any = None) -> Any:  # noqa: A002
        """Run the layers over ``input`` (``(L, N, H_in)``, ``(N, L, H_in)`` with
        ``batch_first``, ``(L, H_in)`` unbatched, or a ``PackedSequence``) from
        ``hx`` (zeros when None; LSTM: ``(h_0, c_0)``). Returns ``output, h_n``
        (LSTM: ``output, (h_n, c_n)``); ``output`` is a ``PackedSequence`` when
        ``input`` is one, and ``h_n`` holds each sequence's state at its last step."""
        is_lstm = self.mode == "LSTM"
        packed = isinstance(input, PackedSequence)
        if packed:
            data, sizes = input.data, [int(b) for b in input.batch_sizes.tolist()]
            if data.dim() != 2:
                raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {data.dim()}D instead")
            self._check_input_size(data)
            xs = list(data.split(sizes, 0))
            n, batched = sizes[0], True
            if hx is not None and input.sorted_indices is not None:
                hx = tuple(h.index_select(1, input.sorted_indices) for h in hx) if is_lstm else \
                    hx.index_select(1, input.sorted_indices)
        else:
            batched = input.dim() == 3
            if input.dim() not in (2, 3):
                raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D "
                                 "instead")
            if not batched:
                input = input.unsqueeze(1)
                if hx is not None:
                    hx = tuple(h.unsqueeze(1) for h in hx) if is_lstm else hx.unsqueeze(1)
            self._check_input_size(input)
            tdim = 1 if batched and self.batch_first else 0
            xs = list(input.unbind(tdim))
            n = input.shape[1 - tdim]
            sizes = [n] * len(xs)
        dirs = 2 if self.bidirectional else 1
        want = (self.num_layers * dirs, n, self.hidden_size)
        if hx is None:
            h0 = zeros(*want, dtype=xs[0].dtype if xs else input.dtype, device=xs[0].device if xs else None)
            hx = (h0, h0) if is_lstm else h0
        if is_lstm:
            self._check_hidden(hx[0], want, "hidden[0]")
            self._check_hidden(hx[1], want, "hidden[1]")
        else:
            self._check_hidden(hx, want)
        h_init = hx[0].unbind(0) if is_lstm else hx.unbind(0)
        c_init = hx[1].unbind(0) if is_lstm else None
        h_out: list[Tensor] = []
        c_out: list[Tensor] = []
        per_dir: list[list[Tensor]] = []
        for layer in range(self.num_layers):
            if layer:
                xs = per_dir[0] if dirs == 1 else [cat(pair, 1) for pair in zip(*per_dir)]
                if self.dropout and self.training:
                    xs = [F.dropout(x, self.dropout, True) for x in xs]
            per_dir = []
            for d in range(dirs):
                k = layer * dirs + d
                h: Any = (h_init[k], c_init[k]) if c_init is not None else h_init[k]
                ys, h = _run_direction(self.mode, xs, sizes, h, self._weights(layer, d), bool(d))
                per_dir.append(ys)
                h_out.append(h[0] if is_lstm else h)
                if is_lstm:
                    c_out.append(h[1])
        if packed:
            outs = [cat(ys, 0) for ys in per_dir]
        else:
            outs = [stack(ys, 1 if batched and self.batch_first else 0) for ys in per_dir]
        output: Any = outs[0] if dirs == 1 else cat(outs, -1)
        h_n: Any = stack(h_out, 0)
        c_n = stack(c_out, 0) if is_lstm else None
        if packed:
            if input.unsorted_indices is not None:
                h_n = h_n.index_select(1, input.unsorted_indices)
                c_n = c_n.index_select(1, input.unsorted_indices) if c_n is not None else None
            output = PackedSequence(output, input.batch_sizes, input.sorted_indices, input.unsorted_indices)
        elif not batched:
            output = output.squeeze(1)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if c_n is not None else None
        return output, ((h_n, c_n) if is_lstm else h_n)

    def _check_input_size(self, x: Tensor) -> None:
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {x.shape[-1]}")

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or ``relu``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)


class LSTM(RNNBase):
    """LSTM; ``forward(input, (h_0, c_0))`` returns ``output, (h_n, c_n)``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """GRU (PyTorch's: the reset gate multiplies ``h W_hn^T + b_hn``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    _mode = "RNN_TANH"

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), dtype=dtype, device=device))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(empty(num_chunks * hidden_size, dtype=dtype, device=device))
            self.bias_hh = Parameter(empty(num_chunks * hidden_size, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        nl = getattr(self, "nonlinearity", "tanh")
        if nl != "tanh":
            s += f", nonlinearity={nl}"
        return s

    def forward(self, input: Tensor, hx: Any = None) -> Any:  # noqa: A002
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        batched = input.dim() == 2
        lstm = self._mode == "LSTM"
        if not batched:
            input = input.unsqueeze(0)
            if hx is not None:
                hx = tuple(h.unsqueeze(0) for h in hx) if lstm else hx.unsqueeze(0)
        if hx is None:
            h0 = zeros(input.shape[0], self.hidden_size, dtype=input.dtype, device=input.device)
            hx = (h0, h0) if lstm else h0
        out = _rnn_step(self._mode, input, hx, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        if not batched:
            out = tuple(o.squeeze(0) for o in out) if lstm else out.squeeze(0)
        return out


class RNNCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity
        self._mode = "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU"


class LSTMCell(RNNCellBase):
    _mode = "LSTM"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)


class GRUCell(RNNCellBase):
    _mode = "GRU"

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)
