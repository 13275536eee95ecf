"""Parsing symbolic shapes: ``"(a, 2*b + 1, mod(c, 2), ...)"`` into ints and
:class:`~functrans.core.shape_poly.DimExpr` (JAX's grammar).

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
