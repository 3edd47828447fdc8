"""A tour of tapegrad in one file: gradients, higher order, the tape, plain NumPy.

Run: python examples/quickstart.py
"""

import numpy as np

import tapegrad as tg
import tapegrad.numpy as tnp


def main() -> None:
    # 1. grad of a scalar function, written with tapegrad.numpy
    def f(x):
        return tnp.sum(tnp.tanh(x) ** 2)

    x = np.array([0.5, -1.0, 2.0])
    print("f(x)          =", f(x))
    print("grad f(x)     =", tg.grad(f)(x))

    # 2. derivatives of derivatives, by nesting
    d4 = tg.grad(tg.grad(tg.grad(tg.grad(tnp.tanh))))
    print("tanh''''(0.3) =", d4(0.3))

    # 3. the Wengert tape, made visible
    with tg.Tape() as tape:
        t = tape.watch(np.array([1.0, 2.0]))
        y = tnp.sum(tnp.sin(t) * t)
    print("tape:\n" + str(tape))
    print("dy/dt         =", tape.gradient(y, t))

    # 4. plain `numpy` code differentiates as it stands: fit a logistic regression
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3))
    labels = (X @ np.array([1.5, -2.0, 0.5]) > 0).astype(float)

    def loss(w):
        p = 1 / (1 + np.exp(-(X @ w)))
        return -np.mean(labels * np.log(p + 1e-12) + (1 - labels) * np.log(1 - p + 1e-12))

    w = np.zeros(3)
    step = tg.value_and_grad(loss)
    for _ in range(200):
        value, g = step(w)
        w -= 1.0 * g
    accuracy = np.mean(((X @ w) > 0) == labels)
    print(f"logistic regression: loss {value:.4f}, accuracy {accuracy:.1%}")


if __name__ == "__main__":
    main()
