"""Programs that only reshape: run as NumPy views, no kernel and no copy.

``pmap``'s per-shard program takes its block with a leading axis of size 1, squeezes it, and
adds it back to the results; between collectives those are segments of their own. Compiled,
each copied the whole block (two copies of 40 MB for a 10M-element ``psum``, in fresh pages
each call). Run as views they cost nothing::

    >>> from functrans.transforms.jit.executable import executable_for
    >>> ex = executable_for(ft.make_jaxpr(lambda x: x.reshape(2, 3)[None])(fnp.ones(6)), "f")
    >>> type(ex).__name__, ex(fnp.arange(6.0))[0].shape
    ('Views', (1, 2, 3))
"""
from __future__ import annotations

import numpy as np

from functrans.core.array import Array
from functrans.core.ir import Var

from .segmented import host_inputs


def _is_view(eqn) -> bool:
    name, inp, out = eqn.prim.name, eqn.inputs[0], eqn.outputs[0]
    if not isinstance(inp, Var) or inp.aval.dtype != out.aval.dtype:
        return False
    if name in ("squeeze", "expand_dims"):
        return True
    if name == "reshape":
        return eqn.params.get("dimensions") is None
    if name == "broadcast_in_dim":  # only unit dimensions inserted: the same elements
        dims = eqn.params["broadcast_dimensions"]
        return inp.aval.size == out.aval.size and list(dims) == sorted(dims)
    return False


def only_views(jaxpr) -> bool:
    """Whether every equation of ``jaxpr`` is a reshape of its (array) operand."""
    return (bool(jaxpr.eqns) and not jaxpr.constvars
            and all(len(e.inputs) == 1 and _is_view(e) for e in jaxpr.eqns)
            and all(isinstance(v, Var) for v in jaxpr.outvars))


class Views:
    """Runs a program of reshapes (:func:`only_views`) as NumPy views of its inputs."""

    def __init__(self, jaxpr):
        self.jaxpr = jaxpr
        self.steps = [(e.inputs[0], e.outputs[0], e.outputs[0].aval.shape) for e in jaxpr.eqns]
        self.text = None

    def __call__(self, *args):
        env = dict(zip(self.jaxpr.invars, host_inputs(args, self.jaxpr)))
        for src, dst, shape in self.steps:
            env[dst] = env[src].reshape(shape)
        # A view of a caller's writable NumPy array would change with it: copy those.
        writable = [a for a in args if type(a) is np.ndarray and a.flags.writeable and a.ndim]
        outs = []
        for v in self.jaxpr.outvars:
            o = env[v]
            if any(np.may_share_memory(o, a) for a in writable):
                o = o.copy()
            elif v in self.jaxpr.invars:  # an input returned as it is: a new Array object
                o = o.view()
            outs.append(Array._wrap(o, v.aval.weak_type))
        return outs
