"""jit's executable on the native backend: a jaxpr as native drivers, and Numba kernels for
the equations the native backend leaves to it.

The jaxpr's equations are split into maximal runs the native backend compiles
(:func:`native_eqn`) and runs it does not (compiled by the Numba backend, one kernel per
run, as before). A program made of one native run (the common case) is one ctypes call.

    >>> prog = NativeProgram(ft.make_jaxpr(lambda x: fnp.exp(x) + 1.0)(np.zeros(3)), "f")
    >>> prog.compile()
    >>> prog(np.zeros(3))[0].tolist()
    [2.0, 2.0, 2.0]
"""
from __future__ import annotations

import numpy as np

from functrans.core.array import Array
from functrans.core.ir import Jaxpr, Literal, Var
from functrans.transforms.lowering.plan import REDUCTIONS, is_index_map, is_pointwise
from functrans.transforms.lowering.scalar import scalar_rules

from .driver import Driver, Unsupported
from .ops import supported as op_supported

__all__ = ["NativeProgram", "native_eqn"]


def _dtypes_ok(eqn) -> bool:
    for v in list(eqn.inputs) + list(eqn.outputs):
        d = np.dtype(v.aval.dtype)
        if d.kind == "c" or (d.kind == "f" and d.itemsize == 2) or d.kind not in "biuf":
            return False
    return True


def native_eqn(eqn) -> bool:
    """Whether the native backend compiles ``eqn``."""
    if not _dtypes_ok(eqn):
        return False
    name = eqn.prim.name
    if len(eqn.outputs) == 1 and (is_pointwise(eqn) or is_index_map(eqn)):
        return name in scalar_rules or is_index_map(eqn)
    if name in REDUCTIONS:
        return True
    return op_supported(eqn)


def _arg(x, dtype):
    """A C-contiguous ndarray of ``dtype`` (0-d for scalars) for a driver input."""
    v = x._value if type(x) is Array else np.asarray(x)
    if v.dtype != dtype:
        v = v.astype(dtype)
    if not v.flags.c_contiguous:
        v = np.ascontiguousarray(v)
    return v


class _Foreign:
    """A run of equations compiled by the Numba backend."""

    def __init__(self, eqns, ins, outs, name):
        from functrans.transforms.lowering.compile import Kernel
        self.ins, self.outs = ins, outs
        self.kernel = Kernel(Jaxpr([], [], ins, outs, list(eqns)), name)

    def compile(self):
        self.kernel.compile_ahead()

    def run(self, vals):
        return [o._value for o in self.kernel(*vals)]


class NativeProgram:
    """Runs ``jaxpr`` with native drivers (and Numba kernels where needed)."""

    def __init__(self, jaxpr, name):
        self.jaxpr = jaxpr
        self.name = name
        self.in_dtypes = [np.dtype(v.aval.dtype) for v in jaxpr.invars]
        self.consts = [_arg(c, v.aval.dtype) for v, c in zip(jaxpr.constvars, jaxpr.consts)]
        foreign: set = set()
        for _ in range(len(jaxpr.eqns) + 1):
            try:
                self._split(foreign)
                break
            except Unsupported as e:  # retry with those equations left to Numba
                foreign.update(id(eqn) for eqn in e.eqns)
        self.text = None
        self.single = self.runs[0] if len(self.runs) == 1 and \
            isinstance(self.runs[0], Driver) else None

    def _split(self, foreign):
        jaxpr, name = self.jaxpr, self.name
        runs, current, kind = [], [], None
        for eqn in jaxpr.eqns:
            k = native_eqn(eqn) and id(eqn) not in foreign
            if current and k != kind:
                runs.append((kind, current))
                current = []
            current.append(eqn)
            kind = k
        if current:
            runs.append((kind, current))
        # Values each run must hand on: read by a later run or returned.
        needed = {x for x in jaxpr.outvars if isinstance(x, Var)}
        self.runs = []
        for native, eqns in reversed(runs):
            defined = {o for e in eqns for o in e.outputs}
            ins, seen = [], set()
            for e in eqns:
                for x in e.inputs:
                    if isinstance(x, Var) and x not in defined and x not in seen:
                        seen.add(x)
                        ins.append(x)
            outs = [o for e in eqns for o in e.outputs if o in needed]
            step = Driver(eqns, ins, outs, name) if native else _Foreign(eqns, ins, outs, name)
            self.runs.append(step)
            needed.update(ins)
        self.runs.reverse()

    @property
    def native_fraction(self) -> float:
        """Share of equations compiled natively (1.0 when no run falls back to Numba)."""
        n = sum(len(r.kernels) for r in self.runs if isinstance(r, Driver))
        total = n + sum(len(r.kernel.jaxpr.eqns) for r in self.runs if isinstance(r, _Foreign))
        return n / total if total else 1.0

    def compile(self) -> None:
        """Compile (or load) every run's code."""
        for r in self.runs:
            r.compile()

    def compile_ahead(self) -> None:
        self.compile()

    def __call__(self, *args):
        env = {}
        for v, x, dt in zip(self.jaxpr.invars, args, self.in_dtypes):
            env[v] = _arg(x, dt)
        env.update(zip(self.jaxpr.constvars, self.consts))
        for r in self.runs:
            vals = [env[v] for v in r.ins]
            env.update(zip(r.outs, r.run(vals)))
        results = []
        owned = set()
        for v in self.jaxpr.outvars:
            if isinstance(v, Literal):
                o = np.full((), v.val, dtype=v.aval.dtype)
            else:
                o = env[v]
                if id(o) in owned or v in self.jaxpr.invars or v in self.jaxpr.constvars:
                    o = np.array(o, dtype=v.aval.dtype)  # never hand out an input's buffer
                owned.add(id(o))
            results.append(Array._wrap(o, v.aval.weak_type))
        return results
