"""Symbolic scopes (their constraints) and parsing symbolic shapes:
``"(a, 2*b + 1, mod(c, 2), ...)"`` into ints and :class:`~functrans.core.shape_poly.DimExpr`
(JAX's grammar).

    shape  := '(' shape ')' | dim (',' dim)* [',']
    dim    := expr | '_' | '...'
    expr   := ['+' | '-'] term (('+' | '-') term)*
    term   := factor ['^' int] ('*' factor ['^' int])*
    factor := name | int | '-' int | op '(' expr ',' expr ')'   (op: mod floordiv max min)

    >>> from functrans.core.shape_poly import SymbolicScope
    >>> parse_dims("a, 2*b^2 - 1", SymbolicScope(), "'a, 2*b^2 - 1'")
    (a, 2*b^2 - 1)
"""
from __future__ import annotations

import re

from . import shape_poly as sp

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(\.\.\.)|(\S))")


class _Parser:
    def __init__(self, text, scope, text_repr, like):
        self.text, self.scope, self.repr, self.like = text, scope, text_repr, like
        self.dims: list = []
        self.toks = []  # (kind, value, start offset)
        for m in _TOKEN.finditer(text):
            if m.group(0).strip() == "":
                continue
            kind = ("int" if m.group(1) else "name" if m.group(2) else
                    "..." if m.group(3) else "op")
            self.toks.append((kind, m.group(m.lastindex), m.start(m.lastindex)))
        self.toks.append(("end", "", len(text)))
        self.i = 0

    # -- tokens ----------------------------------------------------------------------------
    def peek(self):
        return self.toks[self.i]

    def next(self):
        t = self.toks[self.i]
        self.i = min(self.i + 1, len(self.toks) - 1)
        return t

    def error(self, detail):
        pos = self.peek()[2]
        return ValueError(f"syntax error in symbolic shape {self.repr} in dimension "
                          f"{len(self.dims)}: {detail}. Parsed '{self.text[:pos]}', "
                          f"remaining '{self.text[pos:]}'.")

    def expect(self, value):
        kind, v, _ = self.peek()
        if v != value or kind not in ("op", "..."):
            found = "end of string" if kind == "end" else repr(v)
            raise self.error(f"expecting '{value}' but found {found}")
        self.next()

    # -- grammar ---------------------------------------------------------------------------
    def shape(self):
        if self.peek()[1] == "(" and self.peek()[0] == "op":
            self.next()
            self.shape()
            self.expect(")")
            return
        while self.peek()[0] != "end" and self.peek()[1] != ")":
            kind, v, _ = self.peek()
            if kind == "..." or (kind == "name" and v == "_"):
                need = len(self.dims) + (0 if kind == "..." else 1)
                if self.like is None:
                    raise self.error(f"spec contains {v} but no 'like' shape was given")
                if len(self.like) < need:
                    raise self.error(f"cannot resolve placeholder '{v}' because we parsed "
                                     f"{len(self.dims)} already and 'like' shape has only "
                                     f"{len(self.like)} dimensions")
                self.next()
                if kind == "...":
                    for d in self.like[len(self.dims):]:
                        self.add(d)
                    break
                self.add(self.like[len(self.dims)])
            else:
                self.add(self.expr())
            if self.peek()[0] == "end" or self.peek()[1] == ")":
                break
            self.expect(",")

    def add(self, d):
        if d is None:
            raise self.error(f"unexpected placeholder for unknown dimension; like={self.like}")
        if not sp.is_symbolic_dim(d) and self.like is not None and \
                len(self.like) > len(self.dims):
            want = self.like[len(self.dims)]
            if want is not None and d != want:
                raise self.error(f"different size {d} for known dimension; like={self.like}")
        self.dims.append(d)

    def expr(self):
        negate = False
        if self.peek()[:2] in (("op", "-"), ("op", "+")):
            negate = self.next()[1] == "-"
        acc = None
        while True:
            t = self.term()
            t = -t if negate else t
            acc = t if acc is None else acc + t
            kind, v, _ = self.peek()
            if kind == "op" and v in "+-":
                negate = v == "-"
                self.next()
                continue
            return acc

    def term(self):
        acc = None
        while True:
            f = self.factor()
            if self.peek()[:2] == ("op", "^"):
                self.next()
                kind, v, _ = self.next()
                if kind != "int":
                    raise self.error("expecting an integer exponent")
                f = f ** int(v)
            acc = f if acc is None else acc * f
            if self.peek()[:2] != ("op", "*"):
                return acc
            self.next()

    def factor(self):
        kind, v, _ = self.peek()
        if kind == "name" and v in (sp.MOD, sp.FLOORDIV, sp.MAX, sp.MIN):
            self.next()
            self.expect("(")
            e1 = self.expr()
            self.expect(",")
            e2 = self.expr()
            self.expect(")")
            if v == sp.MAX:
                return sp.max_dim(e1, e2)
            if v == sp.MIN:
                return sp.min_dim(e1, e2)
            return e1 // e2 if v == sp.FLOORDIV else e1 % e2
        if kind == "name" and v != "_":
            self.next()
            return sp._var(v, self.scope)
        sign = 1
        if (kind, v) == ("op", "-"):
            self.next()
            sign = -1
            kind, v, _ = self.peek()
        if kind == "int":
            self.next()
            return sign * int(v)
        found = "end of string" if kind == "end" else repr(v)
        raise self.error(f"expecting a dimension variable, an integer or an operation, found "
                         f"{found}")


def parse_dims(text: str, scope, text_repr: str, like=None) -> tuple:
    """The dimensions ``text`` spells, in ``scope``; ``like`` fills ``_`` and ``...``."""
    p = _Parser(text, scope, text_repr, like)
    p.shape()
    if p.peek()[0] != "end":
        raise p.error("unexpected text after the shape")
    return tuple(p.dims)


# --------------------------------------------------------------------------------------------
# Scopes

class SymbolicScope:
    """Where symbolic expressions that may be combined live, with their constraints
    (``"e1 >= e2"``, ``"e1 <= e2"``, ``"e1 == e2"``); JAX's ``export.SymbolicScope``.
    An equality constraint rewrites its left side (a term times a coefficient) into its
    right side wherever that term appears.

        >>> scope = SymbolicScope(["a >= 8"])
        >>> a, = symbolic_shape("a", scope=scope)
        >>> a >= 5
        True
    """

    def __init__(self, constraints_str=()):
        if isinstance(constraints_str, str):
            raise ValueError("The symbolic constraints should be a sequence of strings. "
                             f"Got {constraints_str!r}")
        self._constraints: list = []    # the user's strings, for messages
        self._checks: list = []         # (string, e1 - e2, is an equality): checked on calls
        self._geq_diffs: list = []      # expressions known to be >= 0
        self._var_bounds: dict = {}     # var -> (lo, hi) from var-vs-constant constraints
        self._rules: dict = {}          # term -> (replacement coefficients, its coefficient)
        self._bounds_cache: dict = {}
        self._where = _caller()
        for c in constraints_str:
            self._add_constraint(c)
            self._bounds_cache.clear()

    def __str__(self):
        out = f"{id(self)} created at {self._where}"
        if self._constraints:
            out += " with constraints:\n" + "\n".join(f"  {c}" for c in self._constraints)
        return out

    __repr__ = __str__

    def check_same(self, other: sp.DimExpr, when: str = ""):
        if other.scope is not self:
            raise ValueError(f"Invalid mixing of symbolic scopes {when}.\nExpected scope "
                             f"{self}\nand found for '{other}' scope {other.scope}")

    def _add_constraint(self, c):
        if not isinstance(c, str):
            raise ValueError(f"SymbolicScope constraint must be a string: got {c!r}")
        for token, kind in (("==", "eq"), (">=", "ge"), ("<=", "le")):
            pos = c.find(token)
            if pos >= 0:
                break
        else:
            raise ValueError(f"Constraint parsing error: {c!r} must contain one of '==' or "
                             "'>=' or '<='")
        e1, = parse_dims(c[:pos], self, repr(c[:pos]))
        e2, = parse_dims(c[pos + 2:], self, repr(c[pos + 2:]))
        if kind == "le":
            e1, e2 = e2, e1
        diff = sp._combine_coeffs(e1, e2) if isinstance(e1, sp.DimExpr) or \
            isinstance(e2, sp.DimExpr) else e1 - e2
        if not isinstance(diff, sp.DimExpr):
            if diff < 0 or (kind == "eq" and diff != 0):
                raise ValueError(f"Unsatisfiable explicit constraint: {c}")
            return
        self._constraints.append(c)
        self._checks.append((c, diff, kind == "eq"))
        if kind == "eq":
            if not isinstance(e1, sp.DimExpr) or len(e1.terms) != 1:
                raise ValueError(f"Invalid equality constraint: {c}. The left-hand-side must "
                                 "be of the form `term * coefficient`.")
            (term, k), = e1.terms
            if term in self._rules:
                raise NotImplementedError("Found multiple equality constraints with the same "
                                          f"left-hand-side: {sp._term_str(term)}")
            self._rules[term] = (e2._coeffs() if isinstance(e2, sp.DimExpr)
                                 else ({(): e2} if e2 else {}), k)
            f = term[0][0] if len(term) == 1 and term[0][1] == 1 else None
            if f is not None and f.op == sp.MOD and k == 1 and not isinstance(e2, sp.DimExpr) \
                    and e2 == 0 and f.operands[1]._single_var() is None and \
                    len(f.operands[1].terms) == 1 and f.operands[1].terms[0][0] == ():
                # mod(x, c) == 0 also makes c*floordiv(x, c) read as x (JAX's rule)
                x, c = f.operands[0], f.operands[1].terms[0][1]
                fd = ((sp._Factor(op=sp.FLOORDIV, operands=f.operands), 1),)
                self._rules.setdefault(fd, (x._coeffs(), c))
            return
        # Bounds of single variables: k*v + rest >= 0 with k = +-1 gives v >= -rest or
        # v <= rest, so v's range narrows by the bounds of rest (a >= b + 2 gives a >= 3).
        for term, k in diff.terms:
            if abs(k) != 1 or len(term) != 1 or term[0][1] != 1 or term[0][0].var is None:
                continue
            var = term[0][0].var
            r_lo, r_hi = sp._plain_bounds(diff - k * sp._var(var, self))
            lo, hi = self._var_bounds.get(var, (1, sp._INF))
            if k == 1:
                lo = max(lo, -r_hi)
            else:
                hi = min(hi, r_hi)
            self._var_bounds[var] = (lo, hi)
        self._geq_diffs.append(diff)

    def _checked_constraints(self) -> list:
        """``(text, e1 - e2, is_equality)`` per constraint, for checks on concrete shapes."""
        return list(self._checks)

    def _rewrite(self, coeffs: dict) -> dict:
        """Apply the equality constraints to sum(coeff * term) (until none applies)."""
        for _ in range(16):
            for t, k in coeffs.items():
                hit = self._rules.get(t)
                rest = ()
                if hit is None and len(t) > 1:
                    for f, e in t:
                        hit = self._rules.get(((f, e),))
                        if hit is not None:
                            rest = sp._term_divide(t, ((f, e),))
                            break
                if hit is not None and k % hit[1] == 0:
                    repl, rk = hit
                    new = dict(coeffs)
                    del new[t]
                    for t2, k2 in repl.items():
                        tt = sp._term_mul(t2, rest)
                        new[tt] = new.get(tt, 0) + k2 * (k // rk)
                    coeffs = {tt: kk for tt, kk in new.items() if kk}
                    break
            else:
                return coeffs
        return coeffs


def _caller() -> str:
    """The user's frame that made a scope (for messages about mixed scopes)."""
    import sys
    f = sys._getframe(2)
    while f is not None and "/functrans/" in f.f_code.co_filename.replace("\\", "/"):
        f = f.f_back
    if f is None:
        return "unknown"
    return f"{f.f_code.co_filename}:{f.f_lineno} ({f.f_code.co_name})"


def symbolic_shape(shape_spec, *, constraints=(), scope=None, like=None) -> tuple:
    """Parse a symbolic shape (``"a, 2*b + 1, mod(c, 2)"``; JAX's ``export.symbolic_shape``):
    a tuple of ints and :class:`~functrans.core.shape_poly.DimExpr`. ``_`` and ``...`` take
    one or the remaining sizes from ``like``; ``constraints`` make a new scope with them,
    ``scope`` reuses one.

        >>> symbolic_shape("(n, 2*n, 3)")
        (n, 2*n, 3)
        >>> symbolic_shape("b, ...", like=(5, 6, 7))
        (b, 6, 7)
    """
    spec_repr = repr(shape_spec)
    if shape_spec is None:
        shape_spec = "..."
    elif not isinstance(shape_spec, str):
        raise ValueError(f"polymorphic shape spec should be None or a string. Found "
                         f"{spec_repr}.")
    if scope is None:
        scope = SymbolicScope(constraints)
    elif constraints:
        raise ValueError("Cannot specify both a `scope` and `constraints`.")
    return parse_dims(shape_spec, scope, spec_repr, like=like)
