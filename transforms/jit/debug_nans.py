"""``debug_nans`` for compiled code: check a program's outputs; on a NaN, re-run the program
eagerly, primitive by primitive, to name the primitive that produced it and the user's line
that created that primitive (as JAX re-runs the de-optimized function)::

    >>> with ft.config.override(debug_nans=True):
    ...     ft.jit(lambda x: fnp.log(x) * 2)(-1.0)
    Traceback (most recent call last):
    ...
    FloatingPointError: invalid value (nan) encountered in log at ... inside jit(<lambda>) ...
"""
from __future__ import annotations

import numpy as np

from functrans.core.ir import Literal
from functrans.core.trace import nan_error, nan_source

from .call import jit_p
from functrans.core.dtypes import kind as dtype_kind


def has_nan(value) -> bool:
    v = np.asarray(value)
    return dtype_kind(v.dtype) == "f" and bool(np.isnan(v).any())


def checked_call(executable, jaxpr, args, name) -> list:
    """Run ``executable`` on ``args``; a NaN among its outputs raises FloatingPointError."""
    outs = executable(*args)
    for i, o in enumerate(outs):
        if has_nan(o):
            locate_nan(jaxpr, args, name)
            raise FloatingPointError(
                f"invalid value (nan) encountered in jit({name}) output {i}; running the "
                "program eagerly, primitive by primitive, produced none (a NaN passed "
                "through from an input or constant, or an optimization of the compiled "
                "program differs) (debug_nans is on)")
    return outs


def locate_nan(jaxpr, args, name):
    """Evaluate ``jaxpr`` eagerly; raise FloatingPointError at the first equation with a NaN
    output, naming its primitive and source line. Returns the outputs if none appears."""
    env = dict(zip(jaxpr.constvars, jaxpr.consts))
    env.update(zip(jaxpr.invars, args))

    def read(x):
        return x.bound if type(x) is Literal else env[x]

    for eqn in jaxpr.eqns:
        ins = [read(x) for x in eqn.inputs]
        if eqn.prim is jit_p:
            outs = locate_nan(eqn.params["jaxpr"], ins, eqn.params["name"])
        else:
            # Primitives evaluated inside this one (control-flow bodies) report its line.
            with nan_source(eqn.source, f" inside jit({name})"):
                outs = eqn.prim.bind_all(*ins, **eqn.params)
                if any(has_nan(o) for o in outs):
                    raise nan_error(eqn.prim)
        env.update(zip(eqn.outputs, outs))
    return [read(x) for x in jaxpr.outvars]


def _locate_in_call(args, params):
    """The eager ``jit`` primitive's NaN check: name the primitive inside it."""
    locate_nan(params["jaxpr"], args, params["name"])


jit_p.locate_nan = _locate_in_call
