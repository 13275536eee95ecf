"""The IR: variables, literals, equations and the Jaxpr container that carries its constants.

A Jaxpr is a typed, first-order program in A-normal form::

    { lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = mul b 2.0:f32[] in (c,) }

Every transformation is an interpreter over this structure.
"""
from __future__ import annotations

import os
import sys
import threading
from typing import NamedTuple

import numpy as np

from .array import Array
from .avals import ShapedArray
from .name_stack import EMPTY as EMPTY_NAME_STACK, NameStack
from .name_stack import current as current_name_stack


class Var:
    """A variable, typed by its abstract value. Names are assigned when printing."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"Var({self.aval.str_short()})"


class DropVar(Var):
    """An equation output that nothing reads (JAX's ``DropVar``): printed as ``_``.
    functrans's tracing gives every output a plain :class:`Var` and the printer finds the
    unread ones itself; a DropVar is for programs built by hand (and ``isinstance`` checks).

        >>> DropVar(ShapedArray((), np.float32))
        DropVar(f32[])
    """

    __slots__ = ()

    def __repr__(self):
        return f"DropVar({self.aval.str_short()})"


class Literal:
    """A scalar constant inlined into an equation (printed as ``2.0:f32[]``)."""

    __slots__ = ("val", "aval", "bound")

    def __init__(self, val, aval: ShapedArray):
        self.val = np.asarray(val, dtype=aval.dtype)
        self.aval = aval
        # What interpreters bind: a weak literal (a Python scalar in the program) stays weak,
        # so re-evaluating a jaxpr gives the same types as the traced program.
        self.bound = Array._wrap(self.val, True) if aval.weak_type else self.val

    def __repr__(self):
        v = self.val.item() if self.val.size == 1 else self.val.tolist()  # tolist: ill-typed
        return f"Literal({v!r}:{self.aval.str_short()})"


class SourceInfo(NamedTuple):
    """Where the user's code created an equation (used in error messages), and the
    ``named_scope``s it was made in (JAX's ``name_stack``)."""

    filename: str
    lineno: int
    function: str
    name_stack: NameStack = EMPTY_NAME_STACK

    def __str__(self):
        return f"{os.path.basename(self.filename)}:{self.lineno} (in {self.function})"


_NO_SOURCE = SourceInfo("", 0, "")  # an equation made by library code alone


class TransposedSource(SourceInfo):
    """The source of an equation a transpose rule wrote while differentiating the user's
    equation at this line (reverse mode): the partitioner lets its products be split on
    both operands' contracting dimensions, as JAX gives them the primal operand's
    sharding."""

    __slots__ = ()


_PACKAGE_DIRS: tuple[str, ...] = ()
# Code object -> whether it is library code (staging asks for every equation it records).
_internal_code: dict = {}


_STDLIB_HELPERS = ("contextlib.py", "functools.py", "threading.py")


def register_internal_dir(directory: str) -> None:
    """Mark a source directory as internal, so source_info() skips its frames."""
    register_internal_path(os.path.abspath(directory) + os.sep)


def register_internal_path(prefix: str) -> None:
    """Mark source files whose path starts with ``prefix`` (a file, or a directory ending in a
    separator) as internal: a library's own frames, which source_info() skips."""
    global _PACKAGE_DIRS
    if prefix not in _PACKAGE_DIRS:
        _PACKAGE_DIRS = _PACKAGE_DIRS + (prefix,)
        _internal_code.clear()


register_internal_dir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # functrans/


def user_frame():
    """The innermost stack frame that belongs to user code (outside functrans)."""
    f = sys._getframe(1)
    internal = _internal_code
    while f is not None:
        code = f.f_code
        known = internal.get(code)
        if known is None:
            if len(internal) > 50_000:  # generated code (exec) makes new code objects
                internal.clear()
            known = internal[code] = _is_internal(code.co_filename)
        if not known:
            return f
        f = f.f_back
    return None


def _is_internal(fname) -> bool:
    return (fname.startswith(_PACKAGE_DIRS) or fname.startswith("<frozen")
            or fname.endswith(_STDLIB_HELPERS))


class _Replay(threading.local):
    source = None  # the equation being re-bound by eval_jaxpr, if any


replay = _Replay()


def source_info() -> SourceInfo | None:
    """Where the user's code is applying a primitive now, or None.

    While :func:`~functrans.core.eval.eval_jaxpr` re-binds an equation (a transformation
    replaying a traced program), that is the equation's own recorded line: it names the line
    that wrote the operation (not the call of the transformation) and costs no stack walk.
    Otherwise it is the innermost user frame.
    """
    replayed = replay.source
    if replayed is not None:
        return replayed
    f = user_frame()
    if f is None:
        return None
    return SourceInfo(f.f_code.co_filename, f.f_lineno, f.f_code.co_name, current_name_stack())


class Eqn:
    """One primitive application: ``outputs = prim[params] inputs``."""

    __slots__ = ("prim", "inputs", "outputs", "params", "source")

    def __init__(self, prim, inputs, outputs, params, source=None):
        self.prim = prim
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.params = params
        self.source = source

    # JAX's names for the same fields (libraries walking jaxprs read them).
    source_info = property(lambda self: self.source if self.source is not None else _NO_SOURCE)
    invars = property(lambda self: self.inputs)
    outvars = property(lambda self: self.outputs)
    primitive = property(lambda self: getattr(self.prim, "facade", self.prim))

    def replace(self, **kw) -> "Eqn":
        fields = dict(prim=self.prim, inputs=self.inputs, outputs=self.outputs,
                      params=self.params, source=self.source)
        fields.update(kw)
        return Eqn(**fields)

    def __repr__(self):
        from .printer import pp_eqn
        return pp_eqn(self)


class Jaxpr:
    """A closed program: ``constvars`` bound to ``consts``, then ``invars`` -> ``outvars``.

    ``consts`` are concrete arrays (or, while a transformation is running, tracers of an
    enclosing trace). Outvars may be Vars or Literals.
    """

    __slots__ = ("constvars", "consts", "invars", "outvars", "eqns", "__weakref__")

    def __init__(self, constvars, consts, invars, outvars, eqns):
        assert len(constvars) == len(consts)
        self.constvars = list(constvars)
        self.consts = list(consts)
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.eqns = list(eqns)

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.invars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.outvars]

    @property
    def jaxpr(self) -> "Jaxpr":
        """The program itself: JAX splits a closed program into ``.jaxpr`` and ``.consts``;
        a functrans Jaxpr is both, so code written for JAX's ``ClosedJaxpr`` reads it as is.

            >>> ft.make_jaxpr(fnp.sin)(1.0).jaxpr.eqns[0].prim.name
            'sin'
        """
        return self

    @property
    def literals(self) -> list:
        """The constants (JAX's ``ClosedJaxpr.literals``, another name for ``consts``).

            >>> ft.make_jaxpr(lambda x: x + fnp.arange(2.0))(1.0).literals
            [Array([0., 1.], dtype=float64)]
        """
        return self.consts

    def replace(self, **kw) -> "Jaxpr":
        fields = dict(constvars=self.constvars, consts=self.consts, invars=self.invars,
                      outvars=self.outvars, eqns=self.eqns)
        fields.update(kw)
        return Jaxpr(**fields)

    def __str__(self):
        from .printer import pp_jaxpr
        return pp_jaxpr(self)

    __repr__ = __str__

    def pretty_print(self) -> str:
        return str(self)

    def _repr_pretty_(self, p, cycle):  # IPython
        p.text(str(self))

    def _repr_html_(self):  # Jupyter
        import html
        return ("<pre style='font-family: monospace; line-height: 1.3'>"
                + html.escape(str(self)) + "</pre>")


def walk_jaxprs(params: dict):
    """The sub-jaxprs held by an equation's params (for higher-order primitives)."""
    for v in params.values():
        if isinstance(v, Jaxpr):
            yield v
        elif isinstance(v, tuple):
            for x in v:
                if isinstance(x, Jaxpr):
                    yield x


def has_effects(eqn) -> bool:
    """Whether ``eqn`` (or a program nested in it) must run even if its outputs are unused."""
    if getattr(eqn.prim, "effectful", False):
        return True
    return any(has_effects(e) for j in walk_jaxprs(eqn.params) for e in j.eqns)


def run_interface(eqns, needed) -> tuple:
    """``(ins, outs)`` of a run of equations: the Vars it reads from outside (in first-use
    order) and those it defines that are in ``needed`` (read later, or returned)."""
    defined = {o for e in eqns for o in e.outputs}
    ins, seen = [], set()
    for e in eqns:
        for x in e.inputs:
            if isinstance(x, Var) and x not in defined and x not in seen:
                seen.add(x)
                ins.append(x)
    return ins, [o for e in eqns for o in e.outputs if o in needed]
