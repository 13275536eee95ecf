"""Symbolic dimension sizes (JAX's shape polymorphism): a dimension may be an integer
polynomial in dimension variables, with ``floordiv``/``mod``/``max``/``min`` of such
polynomials as further factors. Shapes hold them where they hold ints; concrete shapes
never meet this module (``is_symbolic_dim`` is one ``isinstance``).

    >>> a, b = symbolic_shape("a, b")
    >>> (a + b) * 2, a * b - a, (2 * a + 1) // 2, a % 3
    (2*b + 2*a, a*b - a, a, mod(a, 3))
    >>> a + 1 >= 1, a == a + 0, a + 1 == a
    (True, True, False)

Semantics as JAX's: variables stand for integers >= 1; ``==`` is total (True only when the
difference is the constant 0); ``>=``/``>``/``<=``/``<`` decide what bounds (from the
variables' ranges and a scope's constraints) decide, else raise
:class:`InconclusiveDimensionOperation`. Expressions of one :class:`SymbolicScope` (made by
one ``symbolic_shape`` call, or passed to several) mix; different scopes refuse to.
Arithmetic with arrays or floats turns the dimension into an array value
(``dimension_as_value``, installed by the primitives).
"""
from __future__ import annotations

import math
import operator

from .errors import InconclusiveDimensionOperation as _CoreInconclusive

_HELP = ("\nThis error arises for comparison operations with shapes that\n"
         "are non-constant, and the result of the operation cannot be represented as\n"
         "a boolean value for all values of the symbolic dimensions involved.\n")


class InconclusiveDimensionOperation(_CoreInconclusive):
    """A comparison or conversion of symbolic dimensions whose answer depends on the values
    of the dimension variables (``a >= b``, ``int(a)``)."""

    def __init__(self, message: str):
        super().__init__(message + _HELP)


class UnexpectedDimVar(Exception):
    """A dimension variable is needed that the arguments' shapes do not determine."""


# --------------------------------------------------------------------------------------------
# Representation: expression = sum of coeff * term; term = product of factor ** exponent;
# factor = a variable or an operation (floordiv, mod, max, min) of expressions. Sort keys are
# tuples led by a size, so that "larger" terms print first and the constant last (JAX's order).

FLOORDIV, MOD, MAX, MIN = "floordiv", "mod", "max", "min"


class _Factor:
    __slots__ = ("var", "op", "operands", "key", "size")

    def __init__(self, var=None, op=None, operands=()):
        self.var, self.op, self.operands = var, op, tuple(operands)
        if var is not None:
            self.size = 1
            self.key = (1, 0, var, ())
        else:
            self.size = 1 + sum(o.size for o in self.operands)
            self.key = (self.size, 1, op, tuple(o.key for o in self.operands))

    def __hash__(self):
        return hash(self.key)

    def __eq__(self, other):
        return isinstance(other, _Factor) and self.key == other.key

    def __str__(self):
        if self.var is not None:
            return self.var
        return f"{self.op}({', '.join(str(o) for o in self.operands)})"

    def variables(self) -> set:
        if self.var is not None:
            return {self.var}
        return set().union(*(o.variables for o in self.operands))


# A term: a tuple of (factor, exponent) pairs sorted by factor key; () is the constant 1.
def _term_key(term) -> tuple:
    # (factors compared largest first, as JAX orders terms)
    return (sum(1 + e * f.size for f, e in term), tuple((f.key, e) for f, e in reversed(term)))


def _term_str(term) -> str:
    return "*".join(f"{f}^{e}" if e != 1 else str(f) for f, e in term)


def _term_mul(t1, t2):
    exps: dict = {}
    for f, e in t1 + t2:
        exps[f] = exps.get(f, 0) + e
    return tuple(sorted(exps.items(), key=lambda fe: fe[0].key))


def _term_divide(t, d):
    """t / d when d's factors divide t's, else None."""
    exps = dict(t)
    for f, e in d:
        if exps.get(f, 0) < e:
            return None
        exps[f] -= e
    return tuple(sorted(((f, e) for f, e in exps.items() if e), key=lambda fe: fe[0].key))


def _make(coeffs: dict, scope) -> "int | DimExpr":
    """The normal form of sum(coeff * term): zero coefficients dropped, the scope's equality
    constraints applied, an int when constant."""
    coeffs = {t: k for t, k in coeffs.items() if k}
    if scope is not None and scope._rules:
        coeffs = scope._rewrite(coeffs)
    if not coeffs:
        return 0
    if len(coeffs) == 1 and () in coeffs:
        return coeffs[()]
    terms = tuple(sorted(coeffs.items(), key=lambda tk: _term_key(tk[0]), reverse=True))
    return DimExpr(terms, scope)


def _is_int(x) -> bool:
    try:
        operator.index(x)
    except Exception:  # noqa: BLE001 - tracers refuse in their own ways
        return False
    return True


def _as_value(x):
    if dimension_as_value_hook is None:
        raise TypeError(f"symbolic dimension '{x}' used as a value before functrans's "
                        "primitives are loaded")
    return dimension_as_value_hook(x)


dimension_as_value_hook = None
"""``d -> array``: a scalar integer array holding the dimension's value (installed by the
primitives: the ``dimension_as_value`` primitive)."""


class DimExpr:
    """A symbolic dimension size (JAX's ``_DimExpr``): an integer polynomial in dimension
    variables, printed as JAX prints it.

        >>> a, = symbolic_shape("a")
        >>> str(3 * a - 1), (a * a).variables
        ('3*a - 1', {'a'})
    """

    __slots__ = ("terms", "scope", "_hash", "key")
    __array_priority__ = 1000  # NumPy defers its operators to ours (then to arrays)

    def __init__(self, terms, scope):
        self.terms = terms      # ((term, coeff), ...) largest term first
        self.scope = scope
        self._hash = None
        self.key = (sum(1 + abs(k) * _term_key(t)[0] for t, k in terms),
                    tuple((_term_key(t), k) for t, k in terms))

    @property
    def size(self):
        return self.key[0]

    # -- structure ---------------------------------------------------------------------------
    @property
    def variables(self) -> set:
        """The dimension variables the expression mentions."""
        out: set = set()
        for t, _ in self.terms:
            for f, _ in t:
                out |= f.variables()
        return out

    def _coeffs(self) -> dict:
        return dict(self.terms)

    def _single_var(self):
        """``(k, var, c)`` when the expression is ``k*var + c``, else None."""
        var = None
        k = c = 0
        for t, coeff in self.terms:
            if t == ():
                c = coeff
            elif len(t) == 1 and t[0][1] == 1 and t[0][0].var is not None and var is None:
                var, k = t[0][0].var, coeff
            else:
                return None
        return (k, var, c) if var is not None else None

    def __str__(self):
        parts = []
        for t, k in self.terms:
            sign = "-" if k < 0 else "+"
            body = str(abs(k)) if t == () else _term_str(t) if abs(k) == 1 else \
                f"{abs(k)}*{_term_str(t)}"
            parts.append(f"{sign} {body}")
        s = " ".join(parts)
        return "0" if not s else s[2:] if s.startswith("+ ") else s  # JAX's "- a + 1"

    __repr__ = __str__

    def __hash__(self):
        if self._hash is None:
            self._hash = hash((self.key, id(self.scope)))
        return self._hash

    # -- arithmetic --------------------------------------------------------------------------
    def _poly(self, other, what):
        """``other`` as coefficients, or None when it is not an integer or an expression."""
        if isinstance(other, DimExpr):
            self.scope.check_same(other, f"for {what}")
            return other._coeffs()
        if _is_int(other) and not hasattr(other, "aval"):
            v = operator.index(other)
            return {(): v} if v else {}
        return None

    def _combine(self, other, k1, k2, what):
        c2 = self._poly(other, what)
        if c2 is None:
            return NotImplemented
        out = {t: k * k1 for t, k in self.terms}
        for t, k in c2.items():
            out[t] = out.get(t, 0) + k * k2
        return _make(out, self.scope)

    def __add__(self, other):
        r = self._combine(other, 1, 1, "addition")
        return _as_value(self) + other if r is NotImplemented else r

    def __radd__(self, other):
        r = self._combine(other, 1, 1, "addition")
        return other + _as_value(self) if r is NotImplemented else r

    def __sub__(self, other):
        r = self._combine(other, 1, -1, "subtraction")
        return _as_value(self) - other if r is NotImplemented else r

    def __rsub__(self, other):
        r = self._combine(other, -1, 1, "subtraction")
        return other - _as_value(self) if r is NotImplemented else r

    def __neg__(self):
        return _make({t: -k for t, k in self.terms}, self.scope)

    def __pos__(self):
        return self

    def __mul__(self, other):
        c2 = self._poly(other, "multiplication")
        if c2 is None:
            return _as_value(self) * other
        out: dict = {}
        for t1, k1 in self.terms:
            for t2, k2 in c2.items():
                t = _term_mul(t1, t2)
                out[t] = out.get(t, 0) + k1 * k2
        return _make(out, self.scope)

    def __rmul__(self, other):
        if self._poly(other, "multiplication") is None:
            return other * _as_value(self)
        return self.__mul__(other)

    def __pow__(self, power, modulo=None):
        if modulo is not None or not _is_int(power) or operator.index(power) < 0:
            raise ValueError(f"Symbolic dimension cannot be raised to the power '{power}' "
                             "(only non-negative integer powers)")
        out = 1
        for _ in range(operator.index(power)):
            out = self * out
        return out

    def __rpow__(self, other):
        return other ** _as_value(self)

    def __floordiv__(self, other):
        if self._poly(other, "floordiv") is None:
            return _as_value(self) // other
        return self._divmod(other)[0]

    def __rfloordiv__(self, other):
        if self._poly(other, "floordiv") is None:
            return other // _as_value(self)
        return _constant(other, self.scope)._divmod(self)[0]

    def __mod__(self, other):
        if self._poly(other, "mod") is None:
            return _as_value(self) % other
        return self._divmod(other)[1]

    def __rmod__(self, other):
        if self._poly(other, "mod") is None:
            return other % _as_value(self)
        return _constant(other, self.scope)._divmod(self)[1]

    def __divmod__(self, other):
        return self // other, self % other

    def __rdivmod__(self, other):
        return other // self, other % self

    def __truediv__(self, other):
        return _as_value(self) / other

    def __rtruediv__(self, other):
        return other / _as_value(self)

    def _divmod(self, divisor):
        """Polynomial division when it is exact (or leaves a constant remainder for a
        constant divisor), else floordiv/mod factors."""
        dcoeffs = divisor._coeffs() if isinstance(divisor, DimExpr) else \
            {(): operator.index(divisor)}
        if dcoeffs == {(): 0}:
            raise ZeroDivisionError(f"Symbolic dimension '{self}' divided by 0")
        lead_t, lead_k = max(dcoeffs.items(), key=lambda tk: _term_key(tk[0]))
        rest = self._coeffs()
        quotient: dict = {}
        for _ in range(1000):  # (each step removes the leading term; a cap for safety)
            if not rest:
                break
            t, k = max(rest.items(), key=lambda tk: _term_key(tk[0]))
            if t == ():
                break
            qt = _term_divide(t, lead_t)
            if qt is None or k % lead_k:
                return self._opaque(divisor)
            qk = k // lead_k
            quotient[qt] = quotient.get(qt, 0) + qk
            for dt, dk in dcoeffs.items():
                tt = _term_mul(qt, dt)
                rest[tt] = rest.get(tt, 0) - qk * dk
                if not rest[tt]:
                    del rest[tt]
        else:
            return self._opaque(divisor)
        r = rest.get((), 0)
        if isinstance(divisor, DimExpr):
            if r:
                return self._opaque(divisor)
            return _make(quotient, self.scope), 0
        q, r = divmod(r, operator.index(divisor))
        quotient[()] = quotient.get((), 0) + q
        return _make(quotient, self.scope), r

    def _opaque(self, divisor):
        return (_operation(FLOORDIV, self, divisor, self.scope),
                _operation(MOD, self, divisor, self.scope))

    def __int__(self):
        raise InconclusiveDimensionOperation(
            f"Symbolic dimension '{self}' used in a context that requires a constant")

    def __index__(self):
        # JAX's expressions are no indices either: range(d) or d-sized Python lists need
        # a concrete size.
        raise TypeError(f"Symbolic dimension '{self}' used where an integer is required")

    def __bool__(self):
        return True  # a dimension is an integer >= 1 ... or any nonzero polynomial

    def __float__(self):
        raise InconclusiveDimensionOperation(
            f"Symbolic dimension '{self}' used in a context that requires a constant")

    # -- comparisons -------------------------------------------------------------------------
    def __eq__(self, other):
        if isinstance(other, DimExpr):
            if other.scope is not self.scope:
                return False
        elif not _is_int(other) or hasattr(other, "aval"):
            return False
        diff = _combine_coeffs(self, other)
        return not isinstance(diff, DimExpr) and diff == 0

    def __ne__(self, other):
        return not self.__eq__(other)

    def __ge__(self, other):
        return _geq(self, other, lambda: f"'{self}' >= '{other}'")

    def __le__(self, other):
        return _geq(other, self, lambda: f"'{self}' <= '{other}'")

    def __gt__(self, other):
        return not _geq(other, self, lambda: f"'{self}' > '{other}'")

    def __lt__(self, other):
        return not _geq(self, other, lambda: f"'{self}' < '{other}'")

    # -- values ------------------------------------------------------------------------------
    def evaluate(self, env: dict) -> int:
        """The value for integer values of the variables (``env``: name -> int).

            >>> a, b = symbolic_shape("a, b")
            >>> (a * b + a // 2).evaluate({"a": 5, "b": 3})
            17
        """
        total = 0
        for t, k in self.terms:
            v = k
            for f, e in t:
                v *= _eval_factor(f, env, self.scope) ** e
            total += v
        return total

    def dimension_as_value(self):
        """The dimension as a scalar integer array, to compute with."""
        return _as_value(self)

    def __jax_array__(self):
        return _as_value(self)

    def max(self, other):
        return max_dim(self, other)

    def min(self, other):
        return min_dim(self, other)

    def __reduce__(self):
        raise TypeError("symbolic dimensions are not pickled; serialize the export instead")

    # Immutable: copies are the expression itself (and keep its scope).
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def _combine_coeffs(e1, e2):
    out = dict(e1._coeffs()) if isinstance(e1, DimExpr) else {(): operator.index(e1)}
    c2 = e2._coeffs() if isinstance(e2, DimExpr) else {(): operator.index(e2)}
    for t, k in c2.items():
        out[t] = out.get(t, 0) - k
    scope = e1.scope if isinstance(e1, DimExpr) else e2.scope
    return _make(out, scope)


def _constant(v, scope) -> DimExpr:
    """An integer as an expression (for division of an integer by an expression)."""
    v = operator.index(v)
    return DimExpr((((), v),), scope) if v else DimExpr((), scope)


def _var(name: str, scope) -> "int | DimExpr":
    return _make({((_Factor(var=name), 1),): 1}, scope)


def _operation(op: str, e1, e2, scope) -> "int | DimExpr":
    operands = [x if isinstance(x, DimExpr) else _constant(x, scope) for x in (e1, e2)]
    return _make({((_Factor(op=op, operands=operands), 1),): 1}, scope)


def _eval_factor(f: _Factor, env, scope) -> int:
    if f.var is not None:
        try:
            return env[f.var]
        except KeyError:
            raise UnexpectedDimVar(
                f"Encountered dimension variable '{f.var}' that is not appearing in the shapes "
                f"of the function arguments.\nThe following dimension variables are appearing "
                f"in the shapes of the function arguments: {list(env)}.") from None
    a, b = (o.evaluate(env) for o in f.operands)
    if f.op == FLOORDIV:
        return a // b
    if f.op == MOD:
        return a % b
    return max(a, b) if f.op == MAX else min(a, b)


def is_symbolic_dim(d) -> bool:
    """Whether ``d`` is a symbolic dimension (a :class:`DimExpr`).

        >>> is_symbolic_dim(3), is_symbolic_dim(symbolic_shape("n")[0])
        (False, True)
    """
    return type(d) is DimExpr


def is_constant_dim(d) -> bool:
    """Whether ``d`` is a concrete dimension size (an integer)."""
    return not isinstance(d, DimExpr) and _is_int(d)


def is_symbolic_shape(shape) -> bool:
    """Whether any dimension of ``shape`` is symbolic."""
    return any(type(d) is DimExpr for d in shape)


def as_dim(d):
    """``d`` as a dimension size: a symbolic dimension as it is, anything else through
    ``operator.index`` (what shape arguments accept).

        >>> as_dim(np.int32(3)), as_dim(symbolic_shape("n")[0])
        (3, n)
    """
    return d if type(d) is DimExpr else operator.index(d)


def broadcast_shapes(*shapes) -> tuple:
    """NumPy's broadcasting of shapes that may hold symbolic sizes: a size meets 1 or an
    equal size (``a`` and ``b`` are not known equal: a ValueError).

        >>> a, = symbolic_shape("a")
        >>> broadcast_shapes((a, 1), (3,)), broadcast_shapes((2, 1), (3,))
        ((a, 3), (2, 3))
    """
    if not any(is_symbolic_shape(s) for s in shapes):
        import numpy as np
        return np.broadcast_shapes(*shapes)
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        big = next((d for d in dims if not (is_constant_dim(d) and d == 1)), 1)
        if any(d != big and not (is_constant_dim(d) and d == 1) for d in dims):
            raise ValueError(f"Incompatible shapes for broadcasting: "
                             f"{', '.join(str(tuple(s)) for s in shapes)}")
        out.append(big)
    return tuple(out)


def evaluate_dim(d, env: dict) -> int:
    """``d`` with the variables' values from ``env`` (ints pass through)."""
    return d.evaluate(env) if type(d) is DimExpr else d


def max_dim(d1, d2):
    """The larger of two dimension sizes; a ``max`` factor when the comparison depends on the
    variables (JAX's ``core.max_dim``).

        >>> a, = symbolic_shape("a")
        >>> max_dim(a, 0), max_dim(a, 2)
        (a, max(a, 2))
    """
    if not isinstance(d1, DimExpr) and not isinstance(d2, DimExpr):
        return max(d1, d2)
    lb, ub = bounds(_combine_coeffs(d1, d2))
    if lb >= 0:
        return d1
    if ub <= 0:
        return d2
    scope = d1.scope if isinstance(d1, DimExpr) else d2.scope
    return _operation(MAX, d1, d2, scope)


def min_dim(d1, d2):
    """The smaller of two dimension sizes (JAX's ``core.min_dim``)."""
    if not isinstance(d1, DimExpr) and not isinstance(d2, DimExpr):
        return min(d1, d2)
    lb, ub = bounds(_combine_coeffs(d1, d2))
    if lb >= 0:
        return d2
    if ub <= 0:
        return d1
    scope = d1.scope if isinstance(d1, DimExpr) else d2.scope
    return _operation(MIN, d1, d2, scope)


# --------------------------------------------------------------------------------------------
# Bounds: interval arithmetic over the variables' ranges (>= 1, or a constraint's constant),
# then the scope's >= constraints as lemmas (e >= c >= 0, or e <= -c < 0).

_INF = math.inf


def _imul(a, b):
    prods = [x * y for x in a for y in b if not ((x == 0 and abs(y) == _INF)
                                                 or (y == 0 and abs(x) == _INF))]
    prods = prods or [0]
    return min(prods), max(prods)


def _ipow(iv, e):
    out = (1, 1)
    for _ in range(e):
        out = _imul(out, iv)
    lo, hi = out
    if e % 2 == 0 and lo < 0:
        lo = 0
    return lo, hi


def _fdiv(x, y):
    """floor(x / y) for y > 0, either possibly infinite."""
    if abs(x) == _INF:
        return x
    if y == _INF:
        return 0 if x >= 0 else -1
    return x // y


def _factor_bounds(f: _Factor, scope):
    if f.var is not None:
        return scope._var_bounds.get(f.var, (1, _INF)) if scope is not None else (1, _INF)
    (a_lo, a_hi), (b_lo, b_hi) = (bounds(o) for o in f.operands)
    if f.op == MAX:
        return max(a_lo, b_lo), max(a_hi, b_hi)
    if f.op == MIN:
        return min(a_lo, b_lo), min(a_hi, b_hi)
    if b_lo > 0:  # a positive divisor
        if f.op == MOD:
            return 0, (min(b_hi - 1, a_hi) if a_lo >= 0 else b_hi - 1)
        lo = _fdiv(a_lo, b_hi) if a_lo >= 0 else _fdiv(a_lo, b_lo)
        hi = _fdiv(a_hi, b_lo) if a_hi >= 0 else _fdiv(a_hi, b_hi)
        return lo, hi
    return -_INF, _INF


def _plain_bounds(e):
    if not isinstance(e, DimExpr):
        return e, e
    lo = hi = 0
    for t, k in e.terms:
        iv = (1, 1)
        for f, x in t:
            iv = _imul(iv, _ipow(_factor_bounds(f, e.scope), x))
        t_lo, t_hi = _imul(iv, (k, k))
        lo, hi = lo + t_lo, hi + t_hi
    return _refine(e, lo, hi)


def _refine(e, lo, hi):
    """Tighter bounds from one term ``k*max(x, y)``/``k*min(x, y)`` (e is e with x or with
    y in its place, and on one side it is beyond both: max(x, y) >= x, y) or
    ``k*floordiv(x, c)`` with c | k (which is ``(k/c)*(x - mod(x, c))``); all sound, so
    the bounds intersect."""
    for t, k in e.terms:
        if len(t) != 1 or t[0][1] != 1 or t[0][0].var is not None:
            continue
        f = t[0][0]
        rest = _make({tt: kk for tt, kk in e.terms if tt != t}, e.scope)
        if f.op in (MAX, MIN):
            alts = [bounds(rest + k * x) for x in f.operands]
            los, his = [a[0] for a in alts], [a[1] for a in alts]
            if (f.op == MAX) == (k > 0):  # e >= each alternative
                return max(lo, *los), min(hi, max(his))
            return max(lo, min(los)), min(hi, *his)  # e <= each alternative
        c = f.operands[1]
        if f.op == FLOORDIV and type(c) is DimExpr and len(c.terms) == 1 and \
                c.terms[0][0] == () and c.terms[0][1] > 0:
            # c*e = c*rest + k*(x - mod(x, c)): bound that, then divide by c
            c, x = c.terms[0][1], f.operands[0]
            a_lo, a_hi = bounds(c * rest + k * (x - x % c))
            return max(lo, -_fdiv(-a_lo, c)), min(hi, _fdiv(a_hi, c))
    return lo, hi


def bounds(e) -> tuple:
    """Lower and upper bounds of ``e`` over all values of its variables that satisfy their
    scope's constraints (floats; ``inf`` where unbounded).

        >>> a, b = symbolic_shape("a, b", constraints=["a >= b + 2"])
        >>> bounds(a - b), bounds(a % 4), bounds(2 * a + 3)
        ((2, inf), (0, 3), (9, inf))
    """
    if not isinstance(e, DimExpr):
        return e, e
    scope = e.scope
    cached = scope._bounds_cache.get(e.key)
    if cached is not None:
        return cached
    lo, hi = _plain_bounds(e)
    scope._bounds_cache[e.key] = (lo, hi)  # (what a constraint about e itself then sees)
    coeffs = e._coeffs()
    for diff in scope._geq_diffs:
        # With diff >= 0 and m > 0: e - m*diff >= L gives e >= L, e + m*diff <= U gives
        # e <= U; m from the terms e and diff share (a >= b + 2 decides 5*a - 5*b >= 10).
        ms = {1, -1}
        for t, kd in diff.terms:
            ke = coeffs.get(t)
            if t != () and ke is not None and ke % kd == 0:
                ms.add(ke // kd)
        for m in ms:
            if m > 0:
                lo = max(lo, _plain_bounds(e - m * diff)[0])
            elif m < 0:
                hi = min(hi, _plain_bounds(e - m * diff)[1])
    scope._bounds_cache[e.key] = (lo, hi)
    return lo, hi


def _geq(e1, e2, describe) -> bool:
    if not isinstance(e1, DimExpr) and not isinstance(e2, DimExpr):
        return operator.index(e1) >= operator.index(e2)
    for x in (e1, e2):
        if not isinstance(x, DimExpr) and not _is_int(x):
            raise TypeError(f"Symbolic dimension comparison {describe()}: '{x}' is not an "
                            "integer or a symbolic dimension")
    scope = e1.scope if isinstance(e1, DimExpr) else e2.scope
    if isinstance(e1, DimExpr) and isinstance(e2, DimExpr):
        scope.check_same(e2, f"when comparing {describe()}")
    lo, hi = bounds(_combine_coeffs(e1, e2))
    if lo >= 0:
        return True
    if hi < 0:
        return False
    where = f"\nUsing symbolic scope {scope}" if scope._constraints else ""
    raise InconclusiveDimensionOperation(
        f"Symbolic dimension comparison {describe()} is inconclusive.{where}")


# Scopes and parsing live with the parser; they are this module's names too.
from .shape_poly_parse import SymbolicScope, symbolic_shape  # noqa: E402,F401
