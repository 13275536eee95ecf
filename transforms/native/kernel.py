"""A generated kernel: one LLVM function for one planned step, in canonical form.

A kernel's text never mentions the program it came from: its parameters are positional
(``%a0``, ``%a1``...), its registers numbered in order, and array sizes are parameters
(``%d0``...), not constants. Two steps that do the same work on arrays of the same ranks and
dtypes, in this program or another, so produce the same text and share one compiled
function (named by a hash of that text). The call site says what each parameter receives.

    >>> k = Kernel([("ptr noalias", "%a0")])
    >>> k.fn.name
    'KERNEL'
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from functrans.core.ir import Literal, Var
from functrans.transforms.lowering import fastmath
from functrans.transforms.passes import params_key

from . import engine
from .ir import Fn, Module, Val, const, reg_type
from .scalar import WIDE_ATTRS

__all__ = ["Kernel", "Arg", "memoized"]


@dataclass(frozen=True)
class Arg:
    """What the call site passes for one kernel parameter: ``kind`` is ``"buf"`` (the data
    pointer of ``value``, a Var), ``"scalar"`` (the value of a rank-0 Var or Literal,
    loaded by the caller), ``"dim"`` (the int ``value``) or ``"scratch"`` (a pointer to
    ``value`` bytes of memory lent for the call)."""
    kind: str
    value: object


@dataclass
class Kernel:
    params: list
    args: list = field(default_factory=list)
    small: bool = False  # inline at the call site (tiny arrays: sizes become constants)

    def __post_init__(self):
        self.fn = Fn("KERNEL", self.params, attrs=f"nounwind {WIDE_ATTRS}".strip())
        self.mod = Module()
        self.helpers: list = []  # more functions of the module (a parallel loop's chunk)
        self.parallel = False  # runs a loop on Numba's thread pool
        self._symbol = None

    def rebound(self, mapping: dict) -> "Kernel":
        """This kernel (the same code, shared) with the call-site values of its buffer and
        scalar arguments replaced as ``mapping`` says (another step of identical form)."""
        other = copy.copy(self)
        other.args = [Arg(a.kind, mapping.get(a.value, a.value))
                      if a.kind in ("buf", "scalar") and isinstance(a.value, Var) else a
                      for a in self.args]
        return other

    # -- parameters (named by position, so the text is canonical) -------------------------
    def _param(self, ty: str, arg: Arg) -> str:
        name = f"%a{len(self.params)}"
        self.params.append((ty, name))
        self.args.append(arg)
        return name

    def buf(self, var, readonly: bool = True, noalias: bool = True) -> str:
        """A pointer parameter receiving ``var``'s buffer (``noalias=False``: it may be the
        same buffer as another parameter, as an update's operand and result can be)."""
        attrs = ("noalias " if noalias else "") + ("readonly" if readonly else "")
        return self._param(f"ptr {attrs}".strip(), Arg("buf", var))

    def scalar(self, atom):
        """The value of a rank-0 Var (a parameter) or a Literal (a constant)."""
        if isinstance(atom, Literal):
            return const(atom.val, atom.aval.dtype)
        ty = reg_type(atom.aval.dtype)
        return Val(ty, self._param(ty, Arg("scalar", atom)))

    def scratch(self, nbytes: int) -> str:
        """A pointer parameter receiving ``nbytes`` of scratch memory for the call (kernels
        allocate nothing themselves; the size is the call site's, not part of the text)."""
        return self._param("ptr noalias", Arg("scratch", int(nbytes)))

    def dims(self, shape) -> list:
        """i64 parameters receiving the sizes ``shape``."""
        return [self._param("i64", Arg("dim", int(d))) for d in shape]

    def text(self) -> str:
        return self.mod.text([self.fn] + self.helpers)

    def symbol(self) -> str:
        """``ftk_<hash of the text and linked functions>``."""
        if self._symbol is None:
            key = self.text() + "\0" + "\0".join(sorted(self.mod.links))
            self._symbol = engine.symbol_for("ftk", key)
        return self._symbol

    def final_text(self) -> str:
        """The module text with the function named by :meth:`symbol`."""
        return self.text().replace("@KERNEL(", f"@{self.symbol()}(", 1)

    def signature(self) -> str:
        """``declare`` line for callers."""
        types = ", ".join(t.split()[0] for t, _ in self.params)
        return f"declare void @{self.symbol()}({types})"


def memoized(eqns, context, materialized, build) -> Kernel:
    """The kernel ``build()`` makes for ``eqns``, or, for equations of the same form as ones
    built before (another layer of a deep net: the same primitives, params, literals, types
    and wiring, in the same ``context``), that kernel rebound to these equations' values,
    without generating it again. ``materialized``: the values the kernel stores, or None."""
    key, order = _form(eqns, context, materialized)
    built = _BUILT.get(key) if key is not None else None
    if built is not None:
        kernel, first_order = built
        return kernel.rebound(dict(zip(first_order, order)))
    kernel = build()
    if key is not None:
        if len(_BUILT) >= _BUILT_MAX:
            _BUILT.clear()
        _BUILT[key] = (kernel, order)
    return kernel


_BUILT: dict = {}  # form of some equations -> (their kernel, their variables in form order)
_BUILT_MAX = 4096


def _form(eqns, context, materialized):
    """``(key, variables)``: what a kernel for ``eqns`` depends on, variables numbered by
    first appearance (``variables`` in that order); key None if a param is not hashable."""
    ids: dict = {}

    def atom(x):
        if isinstance(x, Literal):
            v = np.asarray(x.val)
            return ("lit", v.dtype.str, v.shape, v.tobytes())
        if x not in ids:
            ids[x] = len(ids)
        a = x.aval
        return (ids[x], a.shape, np.dtype(a.dtype).str, a.weak_type,
                materialized is not None and x in materialized)

    parts = [context, fastmath.route()]
    for e in eqns:
        p = params_key(e.params)
        if p is None:
            return None, None
        parts.append((e.prim.name, p, tuple(atom(x) for x in e.inputs),
                      tuple(atom(o) for o in e.outputs)))
    return tuple(parts), list(ids)
