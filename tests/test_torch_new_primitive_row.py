"""A primitive defined outside tapegrad, exposed on the facade by one op-table
row (``tapegrad.torch._ops.add_row(unary(...))``, as docs/extending.md shows):
the method, its in-place twin and ``torch.<name>`` work, forward and
backward, with the row's node name."""

from __future__ import annotations

import sys
import textwrap
import types
from typing import Any

import numpy as np
import pytest

import tapegrad.torch as torch
from tapegrad.torch import _ops

# the user's module, as it would be written in its own file
SOURCE = textwrap.dedent('''
    import numpy as np
    import tapegrad as tg
    import tapegrad.numpy as tnp
    from tapegrad.torch._ops import add_row, unary

    @tg.primitive
    def softsign(x):
        return x / (1 + np.abs(x))

    tg.defvjp(softsign, lambda ans, x: lambda g: g / (1 + tnp.abs(x)) ** 2)

    FORMS = add_row(unary("softsign", softsign, "SoftsignBackward0", saves="0"))
''')


@pytest.fixture(scope="module")
def user_module() -> Any:
    mod = types.ModuleType("tg_user_softsign")
    sys.modules[mod.__name__] = mod
    exec(compile(SOURCE, "<tg_user_softsign>", "exec"), mod.__dict__)  # noqa: S102
    yield mod
    del sys.modules[mod.__name__]
    for name in ("softsign", "softsign_"):  # (other tests list Tensor's methods)
        delattr(torch.Tensor, name)


def _want(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return x / (1 + np.abs(x)), 1 / (1 + np.abs(x)) ** 2


def test_method_forward_backward_and_node_name(user_module: Any) -> None:
    xs = np.array([-2.0, -0.5, 0.0, 1.5])
    x = torch.tensor(xs, requires_grad=True)
    y = x.softsign()
    assert y.grad_fn.name() == "SoftsignBackward0"
    assert y.grad_fn.next_functions[0][0].variable is x
    y.sum().backward()
    value, slope = _want(xs)
    np.testing.assert_allclose(y.detach().numpy(), value, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), slope, rtol=1e-12)


def test_function_form_and_twin(user_module: Any) -> None:
    xs = np.array([0.25, -3.0])
    form = user_module.FORMS["softsign"]
    x = torch.tensor(xs, requires_grad=True)
    np.testing.assert_allclose(form(x).detach().numpy(), _want(xs)[0], rtol=1e-12)
    y = x * 2
    y.softsign_()
    assert y.grad_fn.name() == "SoftsignBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * _want(2 * xs)[1], rtol=1e-12)


def test_saved_input_is_checked(user_module: Any) -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = h.softsign()
    h.add_(1.0)  # the row declares that SoftsignBackward0 saves its input
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
        y.sum().backward()


def test_a_row_cannot_replace_a_method(user_module: Any) -> None:
    with pytest.raises(ValueError, match="Tensor.exp exists already"):
        _ops.add_row(_ops.unary("exp", user_module.softsign, "ExpBackward0"))
