"""Jaxpr text, following JAX's format exactly.

    { lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = mul b 2.0:f32[] in (c,) }

A jaxpr prints on one line when it fits in 80 columns, else one equation per line. Variables get
names a..z, ba, bb, ... in order of first appearance, shared across nested jaxprs; an equation
output nothing reads prints as ``_`` and takes no name.
"""
from __future__ import annotations

import enum

import numpy as np

from .ir import DropVar, Jaxpr, Literal

WIDTH = 80


class _Names:
    def __init__(self):
        self.names = {}

    def __call__(self, var) -> str:
        name = self.names.get(var)
        if name is None:
            name = self.names[var] = _encode(len(self.names))
        return name


def _encode(n: int) -> str:
    s = ""
    while True:
        s = chr(ord("a") + n % 26) + s
        n //= 26
        if n == 0:
            return s


def pp_literal(lit: Literal) -> str:
    v = lit.val.item() if lit.val.size == 1 else lit.val.tolist()  # the latter is ill-typed
    if isinstance(v, float):
        v = repr(v)
    return f"{v}:{lit.aval.str_short()}"


def _atom(x, names) -> str:
    return pp_literal(x) if isinstance(x, Literal) else names(x)


def _binder(v, names, unused=frozenset()) -> str:
    dropped = v in unused or isinstance(v, DropVar)
    return f"{'_' if dropped else names(v)}:{v.aval.str_short()}"


def _param_value(v, names, col) -> str:
    """A param's text; may span lines (nested jaxprs), continuation lines indented at col."""
    if isinstance(v, Jaxpr):
        return _jaxpr(v, names, col)
    if isinstance(v, tuple) and v and all(isinstance(x, Jaxpr) for x in v):
        inner = [" " * (col + 2) + _jaxpr(j, names, col + 2) for j in v]
        return "(\n" + "\n".join(inner) + "\n" + " " * col + ")"
    if isinstance(v, np.dtype):
        return v.name
    if isinstance(v, type) and issubclass(v, np.generic):
        return np.dtype(v).name
    if isinstance(v, enum.Enum):
        return v.name
    if callable(v) and hasattr(v, "__name__"):
        return v.__name__
    return str(v)


def pp_eqn(eqn, names=None, col=0, unused=frozenset()) -> str:
    """One equation; ``col`` is the column where it starts (for line-fitting); outputs in
    ``unused`` print as ``_``."""
    names = names or _Names()
    outs = " ".join(_binder(v, names, unused) for v in eqn.outputs)
    params = eqn.params
    hide = getattr(eqn.prim, "print_params", None)
    if hide is not None:
        params = hide(params)
    rendered = [(k, _param_value(params[k], names, col + 2)) for k in sorted(params)]
    ins = " ".join(_atom(x, names) for x in eqn.inputs)
    lhs = f"{outs} = " if outs else ""
    head = f"{lhs}{eqn.prim.name}"
    if not rendered:
        return f"{head} {ins}".rstrip()
    one = f"{head}[{' '.join(f'{k}={v}' for k, v in rendered)}] {ins}".rstrip()
    if "\n" not in one and col + len(one) <= WIDTH:
        return one
    pad = " " * (col + 2)
    body = "\n".join(f"{pad}{k}={v}" for k, v in rendered)
    return f"{head}[\n{body}\n{' ' * col}] {ins}".rstrip()


def _jaxpr(jaxpr: Jaxpr, names, col) -> str:
    consts = " ".join(_binder(v, names) for v in jaxpr.constvars)
    args = " ".join(_binder(v, names) for v in jaxpr.invars)
    header = f"{{ lambda {consts}; {args}. let" if consts else f"{{ lambda ; {args}. let"
    eqn_col = col + 4
    read = {x for e in jaxpr.eqns for x in e.inputs if not isinstance(x, Literal)}
    read.update(x for x in jaxpr.outvars if not isinstance(x, Literal))
    unused = {v for e in jaxpr.eqns for v in e.outputs if v not in read}
    eqns = [pp_eqn(e, names, eqn_col, unused) for e in jaxpr.eqns]
    outs = ", ".join(_atom(v, names) for v in jaxpr.outvars)
    tail = f"in ({outs},) }}" if len(jaxpr.outvars) == 1 else f"in ({outs}) }}"
    one = f"{header} {'; '.join(eqns)} {tail}" if eqns else f"{header}  {tail}"
    if "\n" not in one and col + len(one) <= WIDTH:
        return one
    lines = [header] + [" " * eqn_col + e for e in eqns] + [" " * (col + 2) + tail]
    return "\n".join(lines)


def pp_jaxpr(jaxpr: Jaxpr) -> str:
    """The jaxpr's text in JAX's format."""
    return _jaxpr(jaxpr, _Names(), 0)
