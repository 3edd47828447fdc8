"""Logistic regression written in plain NumPy, differentiated as it stands.

The model and loss below use only ``import numpy as np``: no tapegrad.numpy.
Inside tg.grad, NumPy's ``__array_ufunc__`` / ``__array_function__``
protocols route np.dot, np.logaddexp, np.mean ... on traced values to
tapegrad, so the same functions run on plain arrays outside (for
prediction) and differentiate inside. The gradient is checked once against
the closed form X^T (sigmoid(Xw) - y) / n + lam * w.

Run: python examples/logistic_regression_numpy.py [--small]
"""

from __future__ import annotations

import argparse

import numpy as np

import tapegrad as tg


# --- the model: plain NumPy --------------------------------------------------------------
def logits(w, b, X):
    return np.dot(X, w) + b


def loss(params, X, y, lam=1e-3):
    """Mean binary cross-entropy, log(1 + exp(-z)) as logaddexp(0, -z) for stability."""
    w, b = params
    z = logits(w, b, X)
    nll = np.mean(y * np.logaddexp(0.0, -z) + (1 - y) * np.logaddexp(0.0, z))
    return nll + 0.5 * lam * np.sum(w**2)


def accuracy(params, X, y):
    w, b = params
    return np.mean((logits(w, b, X) > 0) == (y == 1))


# --- data: two Gaussian blobs -------------------------------------------------------------
def make_data(rng, n, d):
    y = (rng.random(n) < 0.5).astype(float)
    centers = np.where(y[:, None] == 1, 1.0, -1.0) * rng.uniform(0.5, 1.0, d)
    X = centers + rng.standard_normal((n, d)) * 1.2
    return X, y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="less data, fewer steps")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    n, d, steps = (400, 5, 100) if args.small else (4000, 20, 500)
    X, y = make_data(rng, n, d)
    Xtest, ytest = make_data(rng, n, d)
    params = (np.zeros(d), 0.0)

    grad = tg.grad(loss)
    gw, gb = grad(params, X, y)
    p = 1 / (1 + np.exp(-logits(*params, X)))
    assert np.allclose(gw, X.T @ (p - y) / n + 1e-3 * params[0])
    assert np.isclose(gb, np.mean(p - y))
    print("gradient at w = 0 matches the closed form")

    lr = 0.5
    for step in range(steps + 1):
        if step % (steps // 5) == 0:
            print(f"step {step:4d}  loss {loss(params, X, y):.4f}  "
                  f"train accuracy {accuracy(params, X, y):.1%}")
        gw, gb = grad(params, X, y)
        params = (params[0] - lr * gw, params[1] - lr * gb)
    print(f"test accuracy {accuracy(params, Xtest, ytest):.1%}")


if __name__ == "__main__":
    main()
