"""A call with arguments a tapegrad.numpy function does not take raises the
TypeError NumPy raises, naming the public function (``sum``), not the
function it wraps (``_sum``) nor the NumPy call inside it (``reduce``):
on plain arrays and on traced values of every level."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp

_NAMED = re.compile(r"([\w.]+)\(\)")


def _public(module):
    for name in module.__all__:
        fn = getattr(module, name)
        if callable(fn) and not isinstance(fn, type) and name not in ("c_", "r_"):
            yield name, fn


CASES = [(f"{prefix}{name}", fn, mod) for prefix, mod in (("", tnp), ("linalg.", tnp.linalg), ("fft.", tnp.fft))
         for name, fn in _public(mod)]


def _call(fn, x):
    if fn is tnp.einsum:
        return fn("ij->i", x, zzbad=1)
    return fn(x, zzbad=1)


def _accepted(fn, mod, np_mod, name):
    """The names the message may give: the function's public names (aliases
    such as ``amax``/``max`` are one function) and what NumPy's says."""
    names = {n for n in mod.__all__ if getattr(mod, n, None) is fn}
    np_fn = getattr(np_mod, name.split(".")[-1], None)
    if np_fn is not None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _call(np_fn if fn is not tnp.einsum else np.einsum, np.ones((3, 3)))
        except TypeError as e:
            m = _NAMED.match(str(e))
            if m:
                names.add(m.group(1))
        except Exception:  # noqa: BLE001 (NumPy refused otherwise: only our names count)
            pass
    return names


def _run(how, fn):
    x = np.ones((3, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if how == "plain":
            return _call(fn, x)
        if how == "tape":
            with tg.Tape() as tape:
                return _call(fn, tape.watch(x))
        if how == "vmap":
            return tg.vmap(lambda r: _call(fn, r))(np.ones((2, 3, 3)))
        return tg.jvp(lambda r: _call(fn, r), (x,), (x,))


@pytest.mark.parametrize("how", ["plain", "tape", "vmap", "jvp"])
def test_a_bad_keyword_names_the_public_function(how):
    wrong = []
    for name, fn, mod in CASES:
        np_mod = {tnp: np, tnp.linalg: np.linalg, tnp.fft: np.fft}[mod]
        try:
            _run(how, fn)
        except TypeError as e:
            m = _NAMED.match(str(e))
            if "zzbad" in str(e) and (m is None or m.group(1) not in _accepted(fn, mod, np_mod, name)):
                wrong.append(f"{name}: {e}")
            elif "zzbad" not in str(e) and m is not None and m.group(1).startswith("_"):
                wrong.append(f"{name}: {e}")
        except Exception:  # noqa: BLE001 (another refusal, before the keyword is read: not this check's)
            pass
        else:
            if how in ("plain", "tape"):
                wrong.append(f"{name}: accepted the keyword zzbad")
    assert not wrong, "\n".join(wrong)


def test_the_examples_of_the_issue():
    with pytest.raises(TypeError, match=r"^sum\(\) got an unexpected keyword argument 'axiss'"):
        tnp.sum(np.ones((2, 2)), axiss=1)
    with pytest.raises(TypeError, match=r"^matmul\(\) missing 1 required positional argument"):
        tnp.matmul(np.ones(2))
    with pytest.raises(TypeError, match=r"^sum\(\) got an unexpected keyword argument 'axiss'"):
        tg.grad(lambda x: tnp.sum(x, axiss=1))(np.ones(2))
    with pytest.raises(TypeError, match=r"^matmul\(\) missing 1 required positional argument"):
        tg.grad(lambda x: tnp.sum(tnp.matmul(x)))(np.ones(2))
    with pytest.raises(TypeError, match=r"^sum\(\) got an unexpected keyword argument 'axiss'"):
        tg.jit(lambda x: tnp.sum(x, axiss=1))(np.ones(2))
    with pytest.raises(TypeError, match=r"^transpose\(\) got an unexpected keyword argument"):
        tnp.transpose(np.ones((2, 2)), axex=(1, 0))


def test_keywords_numpy_takes_still_work_on_traced_values():
    x = np.arange(6.0).reshape(2, 3)
    assert tg.grad(lambda a: tnp.sum(tnp.concatenate([a, a], dtype=None)))(x).shape == (2, 3)
    assert tg.grad(lambda a: tnp.sum(tnp.asarray(a, copy=None)))(x).shape == (2, 3)
    assert tg.grad(lambda a: tnp.sum(tnp.array(a, copy=True)))(x).shape == (2, 3)
