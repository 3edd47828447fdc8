"""tapegrad.scipy.special: values against SciPy, derivatives against their
closed forms, and SciPy as an optional, lazily imported dependency."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.numpy as tnp
import tapegrad.scipy.special as ts

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
x = np.linspace(0.2, 3.0, 7)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_import_tapegrad_does_not_import_scipy() -> None:
    r = _run("import sys, tapegrad, tapegrad.numpy, tapegrad.scipy.special; "
             "print('scipy' in sys.modules)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_without_scipy_the_error_says_what_to_install() -> None:
    code = """
import sys
sys.modules['scipy'] = None          # as if SciPy were not installed
sys.modules['scipy.special'] = None
import numpy as np, tapegrad as tg
import tapegrad.scipy.special as ts
x = np.array([-1000.0, 0.0, 2.0])
print(ts.expit(x).tolist(), tg.grad(lambda v: ts.logsumexp(v))(x).tolist())
try:
    ts.erf(x)
except ImportError as e:
    print(e)
"""
    r = _run(code)
    assert r.returncode == 0, r.stderr
    assert "tapegrad.scipy.special.erf needs SciPy: pip install scipy" in r.stdout


def test_values_match_scipy() -> None:
    sp = pytest.importorskip("scipy.special")
    z = np.linspace(-3, 3, 13)
    for name in ("erf", "erfc", "expit"):
        np.testing.assert_allclose(getattr(ts, name)(z), getattr(sp, name)(z), rtol=1e-13, atol=1e-300)
    for name in ("gammaln", "digamma", "psi"):
        np.testing.assert_allclose(getattr(ts, name)(x), getattr(sp, name)(x), rtol=1e-13)
    np.testing.assert_allclose(ts.polygamma(2, x), sp.polygamma(2, x), rtol=1e-13)
    p = np.linspace(0.05, 0.95, 9)
    np.testing.assert_allclose(ts.logit(p), sp.logit(p), rtol=1e-12, atol=1e-15)
    a = np.random.default_rng(0).standard_normal((3, 4))
    np.testing.assert_allclose(ts.logsumexp(a, axis=1), sp.logsumexp(a, axis=1), rtol=1e-13)


def test_derivatives_have_their_closed_forms() -> None:
    sp = pytest.importorskip("scipy.special")
    eg = tg.elementwise_grad
    np.testing.assert_allclose(eg(ts.erf)(x), 2 / math.sqrt(math.pi) * np.exp(-x * x), rtol=1e-13)
    np.testing.assert_allclose(eg(ts.erfc)(x), -2 / math.sqrt(math.pi) * np.exp(-x * x), rtol=1e-13)
    np.testing.assert_allclose(eg(ts.gammaln)(x), sp.digamma(x), rtol=1e-13)
    np.testing.assert_allclose(eg(eg(ts.gammaln))(x), sp.polygamma(1, x), rtol=1e-13)
    np.testing.assert_allclose(eg(eg(eg(ts.gammaln)))(x), sp.polygamma(2, x), rtol=1e-13)
    np.testing.assert_allclose(eg(lambda v: ts.polygamma(1, v))(x), sp.polygamma(2, x), rtol=1e-13)
    e = sp.expit(x)
    np.testing.assert_allclose(eg(ts.expit)(x), e * (1 - e), rtol=1e-13)
    p = np.linspace(0.1, 0.9, 5)
    np.testing.assert_allclose(eg(ts.logit)(p), 1 / (p * (1 - p)), rtol=1e-13)


def test_logsumexp_is_tnp_logsumexp() -> None:
    assert ts.logsumexp is tnp.logsumexp


def test_complex_erf_is_holomorphic() -> None:
    pytest.importorskip("scipy.special")
    z = np.array(0.3 + 0.4j)
    g = tg.grad(ts.erf, holomorphic=True)(z)
    np.testing.assert_allclose(g, 2 / math.sqrt(math.pi) * np.exp(-z * z), rtol=1e-12)
