"""Mutable references a loop body closes over, threaded through the loop's carry: ``scan``
(and ``fori_loop``, ``map`` built on it) runs a body that reads or writes a Ref made where
the loop is called with the Ref's value carried in and its final value written back, as
JAX discharges such effects.

    >>> import functrans as ft, functrans.numpy as fnp
    >>> total = ft.new_ref(0.0)
    >>> def body(c, x):
    ...     total[...] += x
    ...     return c, x * 2
    >>> ft.lax.scan(body, 0, fnp.arange(4.0))[1], total[...]
    (Array([0., 2., 4., 6.], dtype=float64), Array(6., dtype=float64))
"""
from __future__ import annotations

from functrans.core.api_util import ForeignRef
from functrans.core.trace import current_trace

__all__ = ["scan_threading_refs"]


def scan_threading_refs(scan, f, init, xs, **params):
    """``scan(f, init, xs, **params)``, with the references ``f`` turns out to close over
    (made in the trace ``scan`` is called in) carried through the loop."""
    refs: list = []
    while True:
        try:
            if not refs:
                return scan(f, init, xs, **params)
            return _scan_with(refs, scan, f, init, xs, params)
        except ForeignRef as e:
            if e.ref._trace is not current_trace() or any(r is e.ref for r in refs):
                raise  # made elsewhere: not this loop's to carry
            refs.append(e.ref)


def _scan_with(refs, scan, f, init, xs, params):
    def body(carry, x):
        c, values = carry
        saved = [(r._value, r._trace) for r in refs]
        trace = current_trace()
        for r, v in zip(refs, values):  # the references hold the body's values meanwhile
            r._value, r._trace = v, trace
        try:
            c, y = f(c, x)
            finals = [r._value for r in refs]
        finally:
            for r, (v, t) in zip(refs, saved):
                r._value, r._trace = v, t
        return (c, finals), y

    (c, finals), ys = scan(body, (init, [r._value for r in refs]), xs, **params)
    for r, v in zip(refs, finals):
        r._value = v
    return c, ys
