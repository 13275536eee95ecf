"""Programs that mix compiled code with work only the host can do.

Collectives exchange values between shards running on other threads (or processes), and a
``shard_map`` inside a program starts shards of its own: a Numba kernel cannot do either. Such
equations (and control flow containing them) run on the host, binding their primitive; every
maximal run of equations between them is compiled into one kernel as usual::

    >>> from functrans.core.axis_env import extend_axis_env
    >>> from functrans.transforms.jit.executable import executable_for
    >>> with extend_axis_env("i", 2):
    ...     ex = executable_for(ft.make_jaxpr(lambda x: lax.psum(x * 2, "i") + 1)(1.0), "f")
    >>> [step.prim.name if hasattr(step, "prim") else "kernel" for step in ex.steps]
    ['kernel', 'psum', 'kernel']
"""
from __future__ import annotations

import numpy as np

from functrans.core.array import Array
from functrans.core.ir import Jaxpr, Literal, Var, run_interface, walk_jaxprs
from functrans.core.trace import EVAL_TRACE, set_current_trace, to_numpy


def host_inputs(args, jaxpr):
    """The caller's arguments as read-only arrays of the traced dtypes: a float64 NumPy array
    passed with enable_x64 off must run (and come back) as the float32 the program was traced
    for."""
    return [to_numpy(a, v.aval) for a, v in zip(args, jaxpr.invars)]


def host_outputs(outs, jaxpr):
    """Outputs as functrans Arrays of the traced types (weak types included, as a kernel's).
    An output that is an input or a literal is copied: the caller's buffer must not become (or
    stay writable behind) an immutable Array."""
    return [o if type(o) is Array and o._weak == v.aval.weak_type else
            Array._wrap(np.array(o._value if type(o) is Array else o, dtype=v.aval.dtype),
                        v.aval.weak_type)
            for o, v in zip(outs, jaxpr.outvars)]


def needs_host(eqn) -> bool:
    """True when ``eqn`` (or a program nested in it) has a host-only primitive."""
    if getattr(eqn.prim, "host_only", False):
        return True
    return any(_jaxpr_needs_host(j) for j in walk_jaxprs(eqn.params))


def _jaxpr_needs_host(jaxpr) -> bool:
    return any(needs_host(e) for e in jaxpr.eqns)


def jaxpr_needs_host(jaxpr) -> bool:
    return _jaxpr_needs_host(jaxpr)


class Segmented:
    """Runs a jaxpr as compiled segments and host equations, in program order."""

    def __init__(self, jaxpr: Jaxpr, name: str, compile_segment):
        self.jaxpr, self.text = jaxpr, None
        steps, run = [], []
        for eqn in jaxpr.eqns:
            if needs_host(eqn):
                steps.append(run)
                steps.append(eqn)
                run = []
            else:
                run.append(eqn)
        steps.append(run)
        # Values a segment must hand on: read by a later step or returned.
        self.steps = []
        later_reads: set = {x for x in jaxpr.outvars if isinstance(x, Var)}
        for step in reversed(steps):
            if isinstance(step, list):
                if step:
                    self.steps.append(self._segment(step, later_reads, name, compile_segment))
                    for e in step:
                        later_reads.update(x for x in e.inputs if isinstance(x, Var))
            else:
                self.steps.append(step)
                later_reads.update(x for x in step.inputs if isinstance(x, Var))
        self.steps.reverse()

    @staticmethod
    def _segment(eqns, later_reads, name, compile_segment):
        ins, outs = run_interface(eqns, later_reads)
        sub = Jaxpr([], [], ins, outs, eqns)
        return (compile_segment(sub, name), ins, outs)

    def __call__(self, *args):
        env = dict(zip(self.jaxpr.constvars, self.jaxpr.consts))
        env.update(zip(self.jaxpr.invars, host_inputs(args, self.jaxpr)))

        def read(x):
            return x.bound if type(x) is Literal else env[x]

        with set_current_trace(EVAL_TRACE):
            for step in self.steps:
                if isinstance(step, tuple):
                    kernel, ins, outs = step
                    env.update(zip(outs, kernel(*map(read, ins))))
                else:
                    outs = step.prim.bind_all(*map(read, step.inputs), **step.params)
                    env.update(zip(step.outputs, outs))
        return host_outputs([read(x) for x in self.jaxpr.outvars], self.jaxpr)
