"""``check_tracer_leaks``: when a transformation finishes, no tracer of it may survive.

With the flag on, each trace's exit runs the garbage collector and looks for tracers of the
finished trace that something still refers to, other than the local variables of the
library's own running functions (which hold the inputs and outputs they are unpacking). A
tracer stored in a global, a closure cell, an attribute or a user's container raises
``UnexpectedTracerError`` at the end of the transformation, naming what holds it, instead
of failing later where it is used::

    >>> leaked = []
    >>> with ft.config.override(check_tracer_leaks=True):
    ...     ft.jit(lambda x: leaked.append(x) or x)(1.0)
    Traceback (most recent call last):
    ...
    functrans.core.errors.UnexpectedTracerError: Leaked tracer f64[] of jit(<lambda>), held by ...
"""
from __future__ import annotations

import gc
import sys

from .errors import UnexpectedTracerError
from . import ir


def check_leaks(trace) -> None:
    """Raise UnexpectedTracerError if a tracer of the finished ``trace`` is still held."""
    from .trace import Tracer
    gc.collect()
    tracers = [t for t in gc.get_referrers(trace)
               if isinstance(t, Tracer) and t._trace is trace]
    if not tracers:
        return
    excused = {id(tracers)}
    frame = sys._getframe(0)
    while frame is not None:
        excused.add(id(frame))
        if frame.f_code.co_filename.startswith(ir._PACKAGE_DIRS):
            local_vars = frame.f_locals
            excused.add(id(local_vars))
            excused.update(id(v) for v in local_vars.values())
        frame = frame.f_back
    for t in tracers:
        holders = [r for r in gc.get_referrers(t) if id(r) not in excused]
        if holders:
            raise UnexpectedTracerError(t, held_by=_describe(holders[0]))


def _describe(holder) -> str:
    kind = type(holder).__name__
    if kind == "cell":
        return "a closure variable (cell)"
    if kind == "frame":
        return f"a local variable of {holder.f_code.co_name}"
    if isinstance(holder, dict):
        return "a dict (a module global, an object attribute or a dict value)"
    return f"a {kind}"
