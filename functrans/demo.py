"""The functrans demo: ``python -m functrans.demo``.

Shows a function written with functrans.numpy, its jaxpr, and its result.
"""
from __future__ import annotations

import functrans as ft
import functrans.numpy as fnp


def predict(w, b, x):
    """A tiny model: a tanh layer followed by a mean."""
    return fnp.mean(fnp.tanh(x @ w + b))


def main() -> None:
    w = fnp.linspace(-1.0, 1.0, 12, dtype="float32").reshape(4, 3)
    b = fnp.zeros(3, "float32")
    x = fnp.ones((2, 4), "float32")
    print("def predict(w, b, x):\n    return fnp.mean(fnp.tanh(x @ w + b))\n")
    print("jaxpr:")
    print(ft.make_jaxpr(predict)(w, b, x))
    print("\nresult:", predict(w, b, x))


if __name__ == "__main__":
    main()
