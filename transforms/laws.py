"""``check_transforms``: check that a function's transformations agree with each other, in
one call. A function built from primitives whose rules are right passes; a user-written rule
(a ``custom_jvp`` rule, a ``custom_vjp`` backward pass, a ``custom_vmap`` batching rule, a
kernel's derivative or batching rule) that disagrees with the function fails, naming the
first law it breaks:

    >>> print(check_transforms(lambda x: (x * x).sum(), np.array([0.5, -1.0])))
    check_transforms(<lambda>): 7 passed, 1 skipped
      jit          passed   error/tolerance 0...
      ...
      hessian      skipped  second order needs order=2

The laws, in the order they are checked (``LAWS``):

``jit``        ``jit(f)(*args) == f(*args)`` (compiled code, never the tiered interpreter)
``vmap``       ``vmap(f)`` over a batch made by stacking perturbed copies of ``args`` equals
               a Python loop of ``f``: all arguments batched, each one batched alone
               (``in_axes=None`` for the others), and all batched along their last axis
``jvp``        ``jvp(f)`` against central finite differences (its primal output == ``f``)
``vjp``        the transpose law ``<ct, J t> == <J^T ct, t>`` for random ``ct`` and ``t``:
               ``J t`` from ``jvp`` (from finite differences if forward mode is not defined,
               as for ``custom_vjp`` functions), ``J^T ct`` from ``vjp``
``linearize``  ``linearize(f)``'s linear function == ``jvp``'s tangent output
``jit(grad)``  ``jit(grad(f)) == grad(jit(f)) == grad(f)`` (``grad`` for one real scalar
               output, otherwise ``vjp`` with a fixed random cotangent)
``vmap(grad)`` ``vmap(grad(f))`` (or of the ``vjp``) == a loop of ``grad(f)``
``hessian``    (``order=2``) second directional derivatives: ``jvp`` of ``jvp`` against
               finite differences of ``jvp``, and the transpose law for the ``jvp`` function
               (reverse over forward); for functions without forward mode the reverse-mode
               function's transpose law against finite differences (reverse over reverse)

Derivative laws (all but ``jit`` and ``vmap``) look only at the floating-point (and complex)
leaves of the arguments in ``argnums`` and of the output; they are skipped, and reported as
skipped with the reason, when there are none.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from functrans.core.api_util import fun_name
from functrans.core.array import Array
from functrans.core.config import config
from functrans.core.dtypes import kind as dtype_kind
from functrans.core.trace import get_aval
from functrans.core.tree import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten

from .autodiff.api import grad, jvp, linearize, vjp
from .autodiff.check import _wide
from .batching import vmap
from .jit.api import jit

LAWS = ("jit", "vmap", "jvp", "vjp", "linearize", "jit(grad)", "vmap(grad)", "hessian")
_DERIVATIVE_LAWS = frozenset(LAWS[2:])
# Tolerance factors (see check_transforms' docstring for the reasoning).
_EXACT_ULPS = 32
_FD_FACTOR = 100
_BATCH_PERTURBATION = 0.05
_BATCH_NOTE = " (the batch index first)"


class TransformLawError(AssertionError):
    """A transformation law failed. ``law`` names it (one of ``LAWS``); ``report`` holds the
    laws checked before it (a :class:`TransformReport`, its last entry the failure)."""

    def __init__(self, law, message, report=None):
        super().__init__(f"law {law!r} failed: {message}")
        self.law = law
        self.detail = message
        self.report = report


class LawResult(NamedTuple):
    law: str
    status: str  # "passed", "skipped" or "failed"
    detail: str  # passed: worst error/tolerance; skipped: why; failed: the message


class TransformReport:
    """What :func:`check_transforms` found: one :class:`LawResult` per law considered, in
    order. ``passed`` and ``skipped`` (law -> reason) summarize it; printing shows a table.

    >>> r = TransformReport("f", [LawResult("jit", "passed", "error/tolerance 0"),
    ...                           LawResult("jvp", "skipped", "no floating-point inputs")])
    >>> r.passed, r.skipped
    (('jit',), {'jvp': 'no floating-point inputs'})
    """

    def __init__(self, name, results=()):
        self.name = name
        self.results = list(results)

    @property
    def passed(self) -> tuple:
        return tuple(r.law for r in self.results if r.status == "passed")

    @property
    def skipped(self) -> dict:
        return {r.law: r.detail for r in self.results if r.status == "skipped"}

    @property
    def failed(self) -> tuple:
        return tuple(r.law for r in self.results if r.status == "failed")

    def __str__(self):
        counts = [f"{len(self.passed)} passed", f"{len(self.skipped)} skipped"]
        if self.failed:
            counts.append(f"{len(self.failed)} failed")
        lines = [f"check_transforms({self.name}): " + ", ".join(counts)]
        for r in self.results:
            detail = r.detail.splitlines()[0] if r.detail else ""
            lines.append(f"  {r.law:<12} {r.status:<8} {detail}".rstrip())
        return "\n".join(lines)

    __repr__ = __str__


# ---- values -------------------------------------------------------------------------------------
def _is_diff(dtype) -> bool:
    return dtype_kind(dtype) in "fc"


def _dtype(x):
    return np.dtype(get_aval(x).dtype)


def _np(x) -> np.ndarray:
    """``x`` as a NumPy array of its functrans dtype (Python scalars canonicalized)."""
    return np.asarray(x).astype(_dtype(x), copy=False)


def _cast(values, like):
    """``values`` as an Array of ``like``'s dtype and weak type (a Python float argument
    stays weakly typed: it promotes as it did in ``f(*args)``)."""
    return Array._wrap(np.array(values, dtype=_dtype(like)), get_aval(like).weak_type)


def _real_dtype(dtype):
    return np.dtype(np.finfo(dtype).dtype)


def _random_like(x, rng):
    """Standard normal values of ``x``'s shape and dtype (complex: off the real axis too)."""
    v = rng.standard_normal(np.shape(x))
    if dtype_kind(_dtype(x)) == "c":
        v = v + 1j * rng.standard_normal(np.shape(x))
    return _cast(v, x)


def _index_str(idx) -> str:
    return "[" + ", ".join(str(int(i)) for i in idx) + "]" if idx else ""


def _fmt(v) -> str:
    return f"{v!r}" if not isinstance(v, (np.floating, np.complexfloating, float)) \
        else f"{v:.9g}"


# ---- comparisons --------------------------------------------------------------------------------
def _compare(law, what, got, want, names, atol, rtol, extra_scale=None, check_dtype=True,
             note=""):
    """Compare leaf lists ``got`` and ``want`` (same length as ``names``): integers and bools
    exactly, floats within ``atol + rtol * scale`` where ``scale`` is the largest magnitude in
    the expected leaf (a norm-wise relative error) plus ``extra_scale[i]``. NaNs must match
    NaNs. Raises TransformLawError naming the worst element; returns the worst
    error/tolerance ratio."""
    if len(got) != len(want):
        raise TransformLawError(law, f"{what}: {len(got)} output leaves, expected {len(want)}")
    worst = (0.0, None)
    for i, (g, w, name) in enumerate(zip(got, want, names)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            raise TransformLawError(law, f"{what}: {name} has shape {g.shape}, expected "
                                         f"{w.shape}")
        if check_dtype and g.dtype != w.dtype:
            raise TransformLawError(law, f"{what}: {name} has dtype {g.dtype}, expected "
                                         f"{w.dtype}")
        if g.size == 0:
            continue
        if not (_is_diff(g.dtype) and _is_diff(w.dtype)):
            bad = g != w
            if bad.any():
                k = tuple(np.argwhere(bad)[0]) if bad.ndim else ()
                raise TransformLawError(
                    law, f"{what}: {int(bad.sum())} of {bad.size} values differ; at "
                         f"{name}{_index_str(k)}{note}: got {g[k]!r}, expected {w[k]!r} "
                         "(exact)")
            continue
        g64, w64 = _wide(g), _wide(w)
        gnan, wnan = np.isnan(g64), np.isnan(w64)
        finite = np.isfinite(w64)
        scale = float(np.max(np.abs(w64[finite]), initial=0.0))
        if extra_scale is not None:
            scale += float(extra_scale[i])
        bound = atol + rtol * scale
        with np.errstate(invalid="ignore"):
            err = np.abs(g64 - w64)
        err = np.where(gnan & wnan, 0.0, err)
        err = np.where(np.isinf(w64) & (g64 == w64), 0.0, err)
        err = np.where(np.isnan(err), np.inf, err)
        ratio = err / bound if bound > 0 else np.where(err > 0, np.inf, 0.0)
        k = np.unravel_index(int(np.argmax(ratio)), ratio.shape) if ratio.ndim else ()
        if ratio[k] > worst[0]:
            worst = (float(ratio[k]), (name, k, g[k], w[k], err[k], bound, scale, ratio))
    if worst[0] > 1.0:
        name, k, gv, wv, e, bound, scale, ratio = worst[1]
        raise TransformLawError(
            law, f"{what}: {int((ratio > 1).sum())} of {ratio.size} values outside the "
                 f"tolerance; worst at {name}{_index_str(k)}{note}: got {_fmt(gv)}, expected "
                 f"{_fmt(wv)}; |error| {e:.3g} > tolerance {bound:.3g} (atol {atol:.3g} + "
                 f"rtol {rtol:.3g} * scale {scale:.3g})")
    return worst[0]


def _pairing(xs, ys) -> tuple:
    """``(Re sum x*y, sum |x||y|)`` over leaf lists: the bilinear pairing JAX's transposes
    satisfy (unconjugated), and the scale of its rounding error."""
    total, size = 0.0, 0.0
    for x, y in zip(xs, ys):
        x, y = _wide(x), _wide(y)
        total += float(np.real(np.sum(x * y)))
        size += float(np.sum(np.abs(x) * np.abs(y)))
    return total, size


# ---- finite differences -------------------------------------------------------------------------
def _central_difference(g, xs, t, h):
    """``(t_eff, fd, scale)``: the central difference of ``g`` at ``xs`` along ``t`` with step
    ``h``. ``x +- h t`` are rounded to the inputs' dtypes, so the direction actually taken is
    ``t_eff = (x+ - x-) / 2h`` (returned for the derivative to compare with); ``scale`` is the
    largest ``|g|`` per output leaf (rounding errors of ``g`` divided by ``h`` are in its
    units)."""
    plus = [_cast(_wide(x) + h * _wide(v), x) for x, v in zip(xs, t)]
    minus = [_cast(_wide(x) - h * _wide(v), x) for x, v in zip(xs, t)]
    t_eff = [_cast((_wide(p) - _wide(m)) / (2 * h), x) for p, m, x in zip(plus, minus, xs)]
    yp, ym = g(*plus), g(*minus)
    fd = [(_wide(a) - _wide(b)) / (2 * h) for a, b in zip(yp, ym)]
    scale = [max(_absmax(a), _absmax(b)) for a, b in zip(yp, ym)]
    return t_eff, fd, scale


def _absmax(x) -> float:
    x = np.abs(_wide(x))
    return float(np.max(x[np.isfinite(x)], initial=0.0))


def _forward_unsupported(e) -> bool:
    """Forward mode is not defined for the function (JAX's error for ``custom_vjp``)."""
    return isinstance(e, (TypeError, NotImplementedError)) and "forward-mode" in str(e)


# ---- the function as the laws see it ------------------------------------------------------------
class _Subject:
    """``f`` at ``args``: its leaves, the differentiable ones, tolerances and random draws."""

    def __init__(self, f, args, argnums, atol, rtol, eps, batch_size, seed):
        # NumPy arrays become Arrays, as every transformation sees them (a NumPy array
        # left unbatched by vmap would otherwise stay one, and refuse a traced index).
        pairs, in_tree = tree_flatten_with_path(args)
        args = tree_unflatten(in_tree, [Array(x) if isinstance(x, np.ndarray) else x
                                        for _, x in pairs])
        self.f, self.args = f, args
        self.rng = np.random.default_rng(seed)
        pairs, self.in_tree = tree_flatten_with_path(args)
        self.in_paths = ["args" + keystr(p) for p, _ in pairs]
        self.leaves = [x for _, x in pairs]
        self.arg_of = [p[0].idx for p, _ in pairs]
        self.want = f(*args)
        out_pairs, self.out_tree = tree_flatten_with_path(self.want)
        self.out_paths = ["out" + keystr(p) for p, _ in out_pairs]
        self.out_leaves = [x for _, x in out_pairs]
        self.argnums = argnums
        self.diff = [i for i, x in enumerate(self.leaves)
                     if self.arg_of[i] in argnums and _is_diff(_dtype(x))]
        self.out_sel = [j for j, y in enumerate(self.out_leaves) if _is_diff(_dtype(y))]
        self.xs = [_cast(self.leaves[i], self.leaves[i]) for i in self.diff]
        self.diff_paths = [self.in_paths[i] for i in self.diff]
        self.y_paths = [self.out_paths[j] for j in self.out_sel]
        self.batch_size = batch_size
        self._forward = None
        self._stacked = None

        floats = [_real_dtype(_dtype(x)) for x in self.leaves + self.out_leaves
                  if _is_diff(_dtype(x))]
        dtype = min(floats, key=lambda d: np.finfo(d).bits) if floats else np.dtype("float64")
        ulp = float(np.finfo(dtype).eps)
        n = max([int(np.size(x)) for x in self.leaves + self.out_leaves] + [1])
        self.h = ulp ** (1 / 3) if eps is None else eps
        self.tols = {"exact": (0.0, _EXACT_ULPS * ulp * math.sqrt(n)),
                     "fd": (0.0, _FD_FACTOR * ulp ** (2 / 3))}
        self.user_atol, self.user_rtol = atol, rtol

    def tol(self, law, kind):
        atol, rtol = self.tols[kind]
        for value, slot in ((self.user_atol, 0), (self.user_rtol, 1)):
            if isinstance(value, dict):
                value = value.get(law)
            if value is not None:
                atol, rtol = (value, rtol) if slot == 0 else (atol, value)
        return atol, rtol

    # The function of the differentiable leaves, returning the floating output leaves.
    def g_of(self, f):
        leaves, tree, diff, sel = self.leaves, self.in_tree, self.diff, self.out_sel

        def g(*xs):
            new = list(leaves)
            for i, x in zip(diff, xs):
                new[i] = x
            outs = tree_flatten(f(*tree_unflatten(tree, new)))[0]
            return [outs[j] for j in sel]
        g.__name__ = fun_name(self.f)
        return g

    def skip_reason(self, law):
        if law == "vmap" and not self.leaves:
            return "no arguments to batch"
        if law not in _DERIVATIVE_LAWS:
            return None
        if not self.diff:
            return f"no floating-point inputs among argnums {tuple(self.argnums)}"
        if not self.out_sel:
            return "no floating-point outputs"
        if law in ("jvp", "linearize") and self.forward_reason():
            return self.forward_reason()
        return None

    def forward_reason(self):
        """Why forward mode is not defined for ``f`` (None if it is)."""
        if self._forward is None:
            try:
                jvp(self.g_of(self.f), tuple(self.xs), tuple(self.tangent()))
                self._forward = ""
            except Exception as e:  # noqa: BLE001 (only one kind is a reason; laws re-raise)
                self._forward = (f"forward mode is not defined ({str(e).splitlines()[0]})"
                                 if _forward_unsupported(e) else "")
        return self._forward or None

    def tangent(self, xs=None):
        """A random direction: normal, times ``max(1, |x|)`` elementwise (steps in proportion
        to large inputs), scaled to unit 2-norm over all leaves (so the finite differences'
        truncation error, cubic in the step, does not grow with the number of inputs)."""
        xs = self.xs if xs is None else xs
        t = [_wide(_random_like(x, self.rng)) * np.maximum(1.0, np.abs(_wide(x))) for x in xs]
        norm = math.sqrt(sum(float(np.sum(np.abs(v) ** 2)) for v in t))
        return [_cast(v / norm if norm > 0 else v, x) for v, x in zip(t, xs)]

    def cotangent(self, ys):
        return [_random_like(y, self.rng) for y in ys]

    def stacked(self):
        """Per leaf, ``batch_size`` copies stacked on a new leading axis: the first is the
        argument itself, the others floats scaled by ``1 + 0.05 n`` (n standard normal,
        clipped to [-2, 2]: signs and so domains such as ``x > 0`` are kept; zeros move to
        small positive values). Integer and bool leaves are repeated unchanged (they are
        often indices or counts)."""
        if self._stacked is None:
            self._stacked = []
            for x in self.leaves:
                a = _np(x)
                copies = [a]
                for _ in range(self.batch_size - 1):
                    if _is_diff(a.dtype):
                        n = np.clip(self.rng.standard_normal(a.shape), -2, 2)
                        w = _wide(a)
                        b = np.where(w == 0, _BATCH_PERTURBATION * np.abs(n),
                                     w * (1 + _BATCH_PERTURBATION * n))
                        copies.append(b.astype(a.dtype))
                    else:
                        copies.append(a.copy())
                self._stacked.append(np.stack(copies))
        return self._stacked

    def grad_fun(self, f):
        """``grad`` of ``f`` in its differentiable leaves if it has one real scalar output and
        real inputs, else its ``vjp`` with a cotangent fixed once: ``(fun, description)``."""
        g = self.g_of(f)
        y = self.out_leaves[self.out_sel[0]] if len(self.out_sel) == 1 else None
        real_in = all(dtype_kind(_dtype(x)) == "f" for x in self.xs)
        if y is not None and np.shape(y) == () and dtype_kind(_dtype(y)) == "f" and real_in:
            scalar = grad(lambda *xs: g(*xs)[0], argnums=tuple(range(len(self.xs))))
            return (lambda *xs: list(scalar(*xs))), "grad"
        if not hasattr(self, "_grad_ct"):
            self._grad_ct = self.cotangent([self.out_leaves[j] for j in self.out_sel])
        ct = self._grad_ct
        return (lambda *xs: list(vjp(g, *xs)[1](ct))), "vjp"


# ---- the laws -----------------------------------------------------------------------------------
def _law_jit(s):
    with config.override(jit_tiered=False):
        got = jit(s.f)(*s.args)
    got_leaves, got_tree = tree_flatten(got)
    if got_tree != s.out_tree:
        raise TransformLawError("jit", f"jit(f) returns {got_tree}, f returns {s.out_tree}")
    return _compare("jit", "jit(f) vs f", got_leaves, s.out_leaves, s.out_paths,
                    *s.tol("jit", "exact"))


def _vmap_variants(s):
    n = len(s.args)
    variants = [(0,) * n]
    if n > 1:
        variants += [tuple(0 if j == i else None for j in range(n)) for i in range(n)
                     if tree_flatten(s.args[i])[0]]
    if any(np.ndim(x) > 0 for x in s.leaves):
        variants.append((-1,) * n)
    return variants


def _law_vmap(s):
    stacked, b = s.stacked(), s.batch_size
    worst = 0.0
    for in_axes in _vmap_variants(s):
        def batched_leaf(i, k=None):
            a, like = stacked[i], s.leaves[i]
            if k is not None:
                return _cast(a[k], like)
            return _cast(np.moveaxis(a, 0, -1) if in_axes[0] == -1 else a, like)

        def args_with(k=None):
            leaves = [batched_leaf(i, k) if in_axes[s.arg_of[i]] is not None else x
                      for i, x in enumerate(s.leaves)]
            return tree_unflatten(s.in_tree, leaves)

        got = vmap(s.f, in_axes=in_axes)(*args_with())
        loop = [tree_flatten(s.f(*args_with(k))) for k in range(b)]
        want = [np.stack([np.asarray(outs[j]) for outs, _ in loop])
                for j in range(len(loop[0][0]))]
        got_leaves, got_tree = tree_flatten(got)
        what = f"vmap(f, in_axes={in_axes if len(in_axes) > 1 else in_axes[0]}) vs a loop of f"
        if got_tree != loop[0][1]:
            raise TransformLawError("vmap", f"{what}: structure {got_tree}, expected "
                                            f"{loop[0][1]}")
        worst = max(worst, _compare("vmap", what, got_leaves, want, s.out_paths,
                                    *s.tol("vmap", "exact"), note=_BATCH_NOTE))
    return worst


def _fd_check(law, what, g, xs, t, h, tol, y_paths):
    """``jvp(g)`` along (the rounded) ``t`` against central differences; returns the worst
    ratio and the tangent outputs."""
    t_eff, fd, scale = _central_difference(g, xs, t, h)
    _, jt = jvp(g, tuple(xs), tuple(t_eff))
    return _compare(law, what, list(jt), fd, y_paths, *tol, extra_scale=scale,
                    check_dtype=False), jt


def _law_jvp(s):
    g = s.g_of(s.f)
    t = s.tangent()
    y, jt = jvp(g, tuple(s.xs), tuple(t))
    want_y = [s.out_leaves[j] for j in s.out_sel]
    r0 = _compare("jvp", "jvp(f)'s primal output vs f", list(y), want_y, s.y_paths,
                  *s.tol("jvp", "exact"))
    r1, _ = _fd_check("jvp", f"jvp(f) vs central differences (step {s.h:.3g})", g, s.xs, t,
                      s.h, s.tol("jvp", "fd"), s.y_paths)
    return max(r0, r1)


def _transpose_check(law, what, g, xs, in_paths, s, forward):
    """The transpose law for ``g`` at ``xs``: ``<ct, J t> == <J^T ct, t>``, ``J t`` by
    ``jvp`` (``forward``) or central differences."""
    t = s.tangent(xs)
    y, g_vjp = vjp(g, *xs)
    ct = s.cotangent(list(y))
    if forward:
        _, jt = jvp(g, tuple(xs), tuple(t))
        kind, fd_scale = "exact", [0.0] * len(ct)
    else:
        t, jt, fd_scale = _central_difference(g, xs, t, s.h)
        kind = "fd"
    cts = list(g_vjp(ct))
    for c, x, p in zip(cts, xs, in_paths):
        if np.shape(c) != np.shape(x) or _dtype(c) != _dtype(x):
            raise TransformLawError(law, f"{what}: the cotangent of {p} is "
                                         f"{get_aval(c).str_short()}, expected "
                                         f"{get_aval(x).str_short()}")
    lhs, lsize = _pairing(ct, jt)
    rhs, rsize = _pairing(cts, t)
    atol, rtol = s.tol(law, kind)
    size = lsize + rsize + sum(float(np.sum(np.abs(_wide(c)))) * f
                               for c, f in zip(ct, fd_scale))
    bound = atol + rtol * size
    err = abs(lhs - rhs)
    if not err <= bound:
        # Localize: the input leaf whose share of the pairing differs most.
        worst, where = -1.0, ""
        if len(xs) > 1:
            for i, p in enumerate(in_paths):
                ti = [v if j == i else _cast(np.zeros(np.shape(v)), v) for j, v in enumerate(t)]
                if forward:
                    jti = jvp(g, tuple(xs), tuple(ti))[1]
                else:
                    ti, jti, _ = _central_difference(g, xs, ti, s.h)
                li = _pairing(ct, jti)[0]
                ri = _pairing([cts[i]], [ti[i]])[0]
                if abs(li - ri) > worst:
                    worst, where = abs(li - ri), (f"; the largest difference is in the "
                                                  f"cotangent of {p}: <ct, J t_i> = {li:.9g}, "
                                                  f"<(J^T ct)_i, t_i> = {ri:.9g}")
        jt_from = "jvp" if forward else "central differences"
        raise TransformLawError(
            law, f"{what}: <ct, J t> = {lhs:.9g} (J t from {jt_from}) but <J^T ct, t> = "
                 f"{rhs:.9g}; |difference| {err:.3g} > tolerance {bound:.3g} (atol {atol:.3g}"
                 f" + rtol {rtol:.3g} * scale {size:.3g}){where}")
    return err / bound if bound > 0 else 0.0


def _law_vjp(s):
    g = s.g_of(s.f)
    forward = s.forward_reason() is None
    y, _ = vjp(g, *s.xs)
    want_y = [s.out_leaves[j] for j in s.out_sel]
    r0 = _compare("vjp", "vjp(f)'s primal output vs f", list(y), want_y, s.y_paths,
                  *s.tol("vjp", "exact"))
    return max(r0, _transpose_check("vjp", "vjp(f) is not the transpose of jvp(f)" if forward
                                    else "vjp(f) is not the transpose of f's derivative", g,
                                    s.xs, s.diff_paths, s, forward))


def _law_linearize(s):
    g = s.g_of(s.f)
    y, f_lin = linearize(g, *s.xs)
    want_y = [s.out_leaves[j] for j in s.out_sel]
    tol = s.tol("linearize", "exact")
    r0 = _compare("linearize", "linearize(f)'s primal output vs f", list(y), want_y,
                  s.y_paths, *tol)
    t = s.tangent()
    _, jt = jvp(g, tuple(s.xs), tuple(t))
    return max(r0, _compare("linearize", "linearize(f)'s linear function vs jvp(f)",
                            list(f_lin(*t)), list(jt), s.y_paths, *tol))


def _law_jit_grad(s):
    G, how = s.grad_fun(s.f)
    with config.override(jit_tiered=False):
        want = G(*s.xs)
        jit_of_grad = jit(G)(*s.xs)
        grad_of_jit = s.grad_fun(jit(s.f))[0](*s.xs)
    names = ["d/d " + p for p in s.diff_paths]
    tol = s.tol("jit(grad)", "exact")
    return max(_compare("jit(grad)", f"jit({how}(f)) vs {how}(f)", jit_of_grad, want, names,
                        *tol),
               _compare("jit(grad)", f"{how}(jit(f)) vs {how}(f)", grad_of_jit, want, names,
                        *tol))


def _law_vmap_grad(s):
    G, how = s.grad_fun(s.f)
    stacked = [s.stacked()[i] for i in s.diff]
    got = vmap(G)(*[_cast(a, x) for a, x in zip(stacked, s.xs)])
    loop = [G(*[_cast(a[k], x) for a, x in zip(stacked, s.xs)]) for k in range(s.batch_size)]
    want = [np.stack([np.asarray(c[i]) for c in loop]) for i in range(len(stacked))]
    names = ["d/d " + p for p in s.diff_paths]
    return _compare("vmap(grad)", f"vmap({how}(f)) vs a loop of {how}(f)", list(got), want,
                    names, *s.tol("vmap(grad)", "exact"), note=_BATCH_NOTE)


def _law_hessian(s):
    g = s.g_of(s.f)
    if s.forward_reason() is None:
        t = s.tangent()

        def g_jvp(*xs):
            return list(jvp(g, tuple(xs), tuple(t))[1])
        u = s.tangent()
        r1, _ = _fd_check("hessian", "jvp(jvp(f)) vs central differences of jvp(f)", g_jvp,
                          s.xs, u, s.h, s.tol("hessian", "fd"),
                          ["d/dt " + p for p in s.y_paths])
        r2 = _transpose_check("hessian", "vjp(jvp(f)) is not the transpose of jvp(jvp(f))",
                              g_jvp, s.xs, s.diff_paths, s, forward=True)
        return max(r1, r2)
    ct = s.cotangent([s.out_leaves[j] for j in s.out_sel])

    def g_vjp(*xs):
        return list(vjp(g, *xs)[1](ct))
    return _transpose_check("hessian", "vjp(vjp(f)) is not the transpose of the derivative "
                            "of vjp(f)", g_vjp, s.xs, s.diff_paths, s, forward=False)


_CHECKS = {"jit": _law_jit, "vmap": _law_vmap, "jvp": _law_jvp, "vjp": _law_vjp,
           "linearize": _law_linearize, "jit(grad)": _law_jit_grad,
           "vmap(grad)": _law_vmap_grad, "hessian": _law_hessian}
_DESCRIBE = {"jit": "jit(f)", "vmap": "vmap(f)", "jvp": "jvp(f)", "vjp": "vjp(f)",
             "linearize": "linearize(f)", "jit(grad)": "jit(grad(f)) or grad(jit(f))",
             "vmap(grad)": "vmap(grad(f))", "hessian": "second derivatives of f"}


def check_transforms(f, *args, order=1, laws=None, atol=None, rtol=None, eps=None,
                     argnums=None, batch_size=3, seed=0):
    """Check that ``f``'s transformations at ``args`` agree with each other and with ``f``.

    The laws in ``LAWS`` (see this module's docstring) are checked in order; the first that
    fails raises :class:`TransformLawError` (an AssertionError) whose ``law`` names it and
    whose message shows the worst mismatch: where (the leaf's path, e.g. ``out['y'][1, 2]``,
    and index), what was expected, what came back and the tolerance. A transformation that
    raises fails its law too (the error is chained). Returns a :class:`TransformReport` of the
    laws that passed and those skipped, with the reason.

    ``args`` are pytrees of arrays and scalars (close over other arguments with
    ``functools.partial``; NumPy arrays are made Arrays first); outputs are pytrees.
    ``argnums`` (an int or tuple; default all) picks the arguments the derivative laws
    differentiate; only their floating-point leaves are, and only floating-point output
    leaves are compared. ``laws`` picks laws by name (default: all, ``"hessian"`` only with
    ``order=2``). ``batch_size`` is the vmap laws' batch (``args`` first, then copies with
    each float scaled by ``1 + 0.05 n``, n normal: signs, so domains, are kept; integer
    leaves repeated). ``seed`` seeds directions, cotangents and batch perturbations.

    Tolerances (``atol``, ``rtol``: a number for every law, or a dict ``{law: value}``) come
    from the lowest float precision ``u`` (machine epsilon) among the inputs and outputs:

    * laws between two programs that compute the same thing (``jit``, ``vmap``, the primal
      outputs, ``linearize``, the transpose law, ``jit(grad)``, ``vmap(grad)``) differ only
      by rounding: compiled code fuses, uses SIMD ``exp``/``log``, reassociates sums and
      batched products. ``rtol = 32 u sqrt(n)``: a few ulp for each step, times the typical
      growth of summation error with the reduction length (``n``, the largest leaf's size,
      bounds it). The transpose law compares two sums, so its scale is the sum of the
      products' magnitudes, ``sum |ct| |J t| + sum |J^T ct| |t|``;
    * finite-difference laws (``jvp``, ``hessian``) use the central difference
      ``(f(x + h t) - f(x - h t)) / 2h``: its truncation error is ``h**2 |f'''| / 6`` and its
      rounding error ``u |f| / h``; ``h = u**(1/3)`` (``eps`` overrides) balances them at
      ``O(u**(2/3))``, so ``rtol = 100 u**(2/3)`` (3.7e-9 for float64, 2.4e-3 for float32;
      about 1 for float16, where only gross errors show: check derivative rules at float32
      or float64).
      Directions ``t`` have unit 2-norm (weighted by ``max(1, |x|)`` elementwise: steps in
      proportion to large inputs), so the truncation error does not grow with the number of
      inputs. The transpose law takes this tolerance when ``J t`` comes from differences.

    Errors are measured norm-wise: relative to the largest magnitude in the compared leaf
    (plus, for finite differences, the largest ``|f|``, the unit of its rounding error), as
    elementwise relative errors are meaningless where values cancel to nearly zero. ``atol``
    defaults to 0.

    >>> check_transforms(lambda x, k: x ** k, np.array([0.5, 2.0]), 3).passed
    ('jit', 'vmap', 'jvp', 'vjp', 'linearize', 'jit(grad)', 'vmap(grad)')

    >>> bad = ft.custom_jvp(fnp.sin)
    >>> bad.defjvp(lambda p, t: (fnp.sin(p[0]), 2.0 * t[0]))  # doctest: +ELLIPSIS
    <function <lambda> at ...>
    >>> try:
    ...     check_transforms(bad, np.array([0.5, 2.0]))
    ... except TransformLawError as e:
    ...     print(e.law)
    jvp
    """
    if order not in (1, 2):
        raise ValueError(f"check_transforms: order must be 1 or 2, got {order!r}")
    if laws is None:
        selected = LAWS if order == 2 else LAWS[:-1]
    else:
        selected = (laws,) if isinstance(laws, str) else tuple(laws)
        unknown = [law for law in selected if law not in LAWS]
        if unknown:
            raise ValueError(f"check_transforms: unknown laws {unknown}; known: {LAWS}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"check_transforms: batch_size must be a positive int, got "
                         f"{batch_size!r}")
    if argnums is None:
        argnums = tuple(range(len(args)))
    else:
        argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        for a in argnums:
            if not -len(args) <= a < len(args):
                raise ValueError(f"check_transforms: argnums {a} is out of range for "
                                 f"{len(args)} arguments")
        argnums = tuple(a % len(args) for a in argnums)
    s = _Subject(f, tuple(args), argnums, atol, rtol, eps, batch_size, seed)
    report = TransformReport(fun_name(f))
    for law in LAWS:
        if law not in selected:
            if law == "hessian" and laws is None:
                report.results.append(LawResult(law, "skipped", "second order needs order=2"))
            continue
        reason = s.skip_reason(law)
        if reason:
            report.results.append(LawResult(law, "skipped", reason))
            continue
        try:
            ratio = _CHECKS[law](s)
        except TransformLawError as e:
            e.report = report
            report.results.append(LawResult(law, "failed", e.detail))
            raise
        except Exception as e:
            message = f"{_DESCRIBE[law]} raised {type(e).__name__}: {e}"
            report.results.append(LawResult(law, "failed", message))
            raise TransformLawError(law, message, report) from e
        report.results.append(LawResult(law, "passed", f"error/tolerance {ratio:.2g}"))
    return report


__all__ = ["LAWS", "LawResult", "TransformLawError", "TransformReport", "check_transforms"]
