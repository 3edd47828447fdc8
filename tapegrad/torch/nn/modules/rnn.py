"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their cells.

Written with facade tensor operations: a Python loop over the time steps,
each step one matrix product per weight over the whole batch. The weights are
named and laid out as PyTorch's (``weight_ih_l{k}[_reverse]``, the gates
stacked in PyTorch's order: LSTM ``i f g o``, GRU ``r z n``) and drawn from
U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from tapegrad.torch._creation import cat, empty, stack, zeros
from tapegrad.torch._tensor import Tensor
from tapegrad.torch.nn import functional as F
from tapegrad.torch.nn import init
from tapegrad.torch.nn.modules.module import Module
from tapegrad.torch.nn.parameter import Parameter

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


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

    def forward(self, input: Tensor, hx: Any = None) -> Any:  # noqa: A002
        is_lstm = self.mode == "LSTM"
        batched = input.dim() == 3
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        if not batched:
            input = input.unsqueeze(1)
            if hx is not None:
                hx = tuple(h.unsqueeze(1) for h in hx) if is_lstm else hx.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.shape[-1]}")
        seq, n = input.shape[0], input.shape[1]
        dirs = 2 if self.bidirectional else 1
        if hx is None:
            h0 = zeros(self.num_layers * dirs, n, self.hidden_size, dtype=input.dtype, device=input.device)
            hx = (h0, h0) if is_lstm else h0
        want = (self.num_layers * dirs, n, self.hidden_size)
        if is_lstm:
            self._check_hidden(hx[0], want, "hidden[0]")
            self._check_hidden(hx[1], want, "hidden[1]")
        else:
            self._check_hidden(hx, want)
        h_init = hx[0].unbind(0) if is_lstm else hx.unbind(0)
        c_init = hx[1].unbind(0) if is_lstm else None
        layer_in = input
        h_out: list[Tensor] = []
        c_out: list[Tensor] = []
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                k = layer * dirs + d
                w = self._weights(layer, d)
                h: Any = (h_init[k], c_init[k]) if c_init is not None else h_init[k]
                steps = layer_in.unbind(0)
                ys: list[Tensor] = [None] * seq  # type: ignore[list-item]
                for t in (range(seq - 1, -1, -1) if d else range(seq)):
                    h = _rnn_step(self.mode, steps[t], h, *w)
                    ys[t] = h[0] if is_lstm else h
                outs.append(stack(ys, 0))
                h_out.append(h[0] if is_lstm else h)
                if is_lstm:
                    c_out.append(h[1])
            layer_in = outs[0] if dirs == 1 else cat(outs, 2)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_in = F.dropout(layer_in, self.dropout, True)
        output = layer_in
        h_n: Any = stack(h_out, 0)
        if is_lstm:
            h_n = (h_n, stack(c_out, 0))
        if not batched:
            output = output.squeeze(1)
            h_n = tuple(h.squeeze(1) for h in h_n) if is_lstm else h_n.squeeze(1)
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, h_n

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
