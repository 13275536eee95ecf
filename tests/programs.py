"""Random whole programs for property tests of transformation laws.

A program is a list of steps over a value stack, drawn by hypothesis; ``build`` turns it into
a Python function of one array written with functrans.numpy. Every op is smooth on the values
it can see, and ops keep values O(1) (inputs are squashed with tanh, powers are bounded), so
programs stay well-conditioned and finite differences are meaningful.
"""
from __future__ import annotations

from hypothesis import strategies as st

import functrans.numpy as fnp

UNARY = {
    "sin": fnp.sin, "cos": fnp.cos, "tanh": fnp.tanh, "exp": lambda x: fnp.exp(fnp.tanh(x)),
    "log1p_sq": lambda x: fnp.log1p(x * x), "square": lambda x: x * x / (1 + x * x),
    "sqrt_1p": lambda x: fnp.sqrt(1.0 + x * x), "logistic": lambda x: 1 / (1 + fnp.exp(-x)),
    "cube": lambda x: fnp.tanh(x) ** 3, "neg": lambda x: -x, "atan": fnp.arctan,
    "softplus": lambda x: fnp.logaddexp(x, 0.0),
}
BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (2.0 + fnp.tanh(b)), "hypot": lambda a, b: fnp.sqrt(1 + a * a + b * b),
    "atan2": lambda a, b: fnp.arctan2(a, 2.0 + b * b),
}
STRUCT = {
    "rev": lambda x: x[::-1], "roll": lambda x: fnp.roll(x, 1), "cumsum": fnp.cumsum,
    "center": lambda x: x - fnp.mean(x), "outer_sum": lambda x: fnp.sum(fnp.outer(x, x), 0),
    "sort": fnp.sort, "matvec": lambda x: fnp.tanh(fnp.outer(x, x)) @ x,
    "gather": lambda x: x[fnp.array([2, 0, 1, 2])][:3], "pad_slice": lambda x: fnp.pad(x, 1)[1:-1],
    "where": lambda x: fnp.where(x > 0, x * x, 0.0),
    "at_add": lambda x: x.at[fnp.array([0, 0, 2])].add(x[1]),
}

step = st.one_of(
    st.tuples(st.just("unary"), st.sampled_from(sorted(UNARY))),
    st.tuples(st.just("binary"), st.sampled_from(sorted(BINARY))),
    st.tuples(st.just("struct"), st.sampled_from(sorted(STRUCT))),
)
programs = st.lists(step, min_size=1, max_size=6)


def build(prog):
    """A function ``f(x: f64[3]) -> f64[3]`` running the steps on a stack seeded with x."""
    def f(x):
        stack = [fnp.tanh(x)]
        for kind, name in prog:
            if kind == "unary":
                stack.append(UNARY[name](stack[-1]))
            elif kind == "binary":
                stack.append(BINARY[name](stack[-1], stack[0 if len(stack) < 2 else -2]))
            else:
                stack.append(STRUCT[name](stack[-1]))
        return stack[-1] + 0.1 * stack[0]
    f.__name__ = "prog_" + "_".join(n for _, n in prog)
    return f
