"""Emitters for convolution and windowed reductions.

A convolution is an im2col copy (one row per output position, one column per kernel
position and input feature, zero where the window reads padding or a dilation hole) followed
by one GEMM per group (BLAS for large float products, loops otherwise, int64 accumulation for
integers as dot_general). Windowed reductions and the selections that differentiate
max/min pooling are loop nests over output positions and window offsets; a window offset
that lands in padding or a base-dilation hole is skipped (it holds the identity).
"""
from __future__ import annotations

import math

import numpy as np

from .ops import SMALL_GEMM, _loops, _shape_tuple, op_rules
from .scalar import dtype_ctor


def _input_index(em, o, k, stride, wdil, lo, bdil, size):
    """Emit the input index read at output ``o`` / window offset ``k`` of one dim; returns
    (index name, condition under which it is a real element, or None if always)."""
    p = em.tmp(f"{o} * {stride} + {k} * {wdil} - {lo}")
    conds = [f"{p} >= 0"] if lo > 0 else []
    if bdil > 1:
        conds.append(f"{p} % {bdil} == 0")
        i = em.tmp(f"{p} // {bdil}")
    else:
        i = p
    conds.append(f"{i} < {size}")
    return i, (" and ".join(conds) if conds else None)


def _window_params(eqn):
    p = eqn.params
    return (p["window_dimensions"], p["window_strides"], p["padding"], p["base_dilation"],
            p["window_dilation"])


def _reduce_window(kind):
    def rule(em, eqn):
        x, out = eqn.inputs[0], eqn.outputs[0]
        src, dst = em.atom(x), em.name(out)
        dt = out.aval.dtype
        if not x.aval.shape:
            em.line(f"{dst} = {src}")
            return
        em.line(f"{dst} = np.empty({_shape_tuple(out.aval.shape)}, dtype={dtype_ctor(dt)})")
        if out.aval.size == 0:
            return
        wins, strides, pads, bdil, wdil = _window_params(eqn)
        fl, acc_dt = dt.kind == "f", dt
        if kind == "sum" and dt.kind in "iu":
            acc_dt = np.dtype(np.int64)  # wraps like NumPy's sum cast back to the dtype
        from functrans.primitives.windowed import identity
        init = em.const(identity(kind, dt), acc_dt)

        def body(oidx):
            acc = em.fresh("acc")
            em.line(f"{acc} = {init}")
            idx, opened = [], 0
            for d, o in enumerate(oidx):
                k = em.fresh("w")
                em.line(f"for {k} in range({wins[d]}):")
                em.level += 1
                opened += 1
                i, cond = _input_index(em, o, k, strides[d], wdil[d], pads[d][0], bdil[d],
                                       x.aval.shape[d])
                if cond:
                    em.line(f"if {cond}:")
                    em.level += 1
                    opened += 1
                idx.append(i)
            v = f"{src}[{', '.join(idx)}]"
            if kind == "sum":
                em.line(f"{acc} += {em.cast(v, acc_dt)}" if acc_dt != dt else f"{acc} += {v}")
            elif dt == np.bool_:
                em.line(f"{acc} = ({acc} or {v})" if kind == "max" else f"{acc} = ({acc} and {v})")
            elif fl:
                em.line(f"{acc} = rt.f{kind}({acc}, {v})")
            else:
                em.line(f"{acc} = {kind}({acc}, {v})")
            em.level -= opened
            em.line(f"{dst}[{', '.join(oidx)}] = {em.cast(acc, dt) if acc_dt != dt else acc}")
        _loops(em, out.aval.shape, body, "o")
    return rule


def _select(scatter):
    """select_and_gather_add / select_and_scatter_add: scan each window (padding included,
    row-major) for the first maximal (``ge``) / minimal (``le``) element."""
    def rule(em, eqn):
        values, x = eqn.inputs
        out = eqn.outputs[0]
        vals, src, dst = em.atom(values), em.atom(x), em.name(out)
        dt, xdt = out.aval.dtype, x.aval.dtype
        if not x.aval.shape:
            em.line(f"{dst} = {vals}")
            return
        kind = "max" if eqn.params["select_prim"] == "ge" else "min"
        from functrans.primitives.windowed import identity
        pad_value = em.const(identity(kind, xdt), xdt)
        zero = em.const(0, dt)
        if scatter:
            em.line(f"{dst} = np.zeros({_shape_tuple(out.aval.shape)}, dtype={dtype_ctor(dt)})")
            out_shape = values.aval.shape
        else:
            em.line(f"{dst} = np.empty({_shape_tuple(out.aval.shape)}, dtype={dtype_ctor(dt)})")
            out_shape = out.aval.shape
        if math.prod(out_shape) == 0:
            return
        wins, strides, pads, bdil, wdil = _window_params(eqn)
        op = ">" if kind == "max" else "<"
        if xdt == np.bool_:
            better = (lambda v, b: f"({v} and not {b})") if kind == "max" else \
                (lambda v, b: f"({b} and not {v})")
        elif xdt.kind == "f":  # NaN is selected over numbers, the first NaN kept
            better = lambda v, b: f"({v} {op} {b} or ({v} != {v} and {b} == {b}))"  # noqa: E731
        else:
            better = lambda v, b: f"{v} {op} {b}"  # noqa: E731

        def body(oidx):
            first, best = em.fresh("first"), em.fresh("best")
            found, pick = em.fresh("ok"), em.fresh("pick")
            sel = [em.fresh("s") for _ in oidx]
            em.line(f"{first} = True")
            em.line(f"{best} = {pad_value}")
            em.line(f"{found} = False")
            em.line(f"{pick} = {zero}")
            for s in sel:
                em.line(f"{s} = 0")
            idx, conds = [], []
            for d, o in enumerate(oidx):
                k = em.fresh("w")
                em.line(f"for {k} in range({wins[d]}):")
                em.level += 1
                i, cond = _input_index(em, o, k, strides[d], wdil[d], pads[d][0], bdil[d],
                                       x.aval.shape[d])
                idx.append(i)
                if cond:
                    conds.append(f"({cond})")
            real = " and ".join(conds) if conds else "True"
            v, real_name = em.fresh("v"), em.fresh("real")
            em.line(f"{real_name} = {real}")
            em.line(f"{v} = {src}[{', '.join(idx)}] if {real_name} else {pad_value}")
            em.line(f"if {first} or {better(v, best)}:")
            em.line(f"    {first} = False")
            em.line(f"    {best} = {v}")
            em.line(f"    {found} = {real_name}")
            if scatter:
                for s, i in zip(sel, idx):
                    em.line(f"    {s} = {i}")
            else:
                em.line(f"    {pick} = {vals}[{', '.join(idx)}] if {real_name} else {zero}")
            em.level -= len(oidx)
            if scatter:
                cell = f"{dst}[{', '.join(sel)}]"
                em.line(f"if {found}:")
                em.line(f"    {cell} = {cell} + {vals}[{', '.join(oidx)}]")
            else:
                em.line(f"{dst}[{', '.join(oidx)}] = {pick}")
        _loops(em, out_shape, body, "o")
    return rule


def _conv(em, eqn):
    """Channels last: the operand as (N, S..., C) and the kernel as (O, K..., I), so the
    im2col copy moves runs of Cg contiguous features, and for NHWC/HWIO/NHWC no other copy
    is needed."""
    from functrans.primitives.convolution import channels_last
    lhs, rhs = eqn.inputs
    out = eqn.outputs[0]
    p = eqn.params
    lhs_spec, rhs_spec, out_spec = p["dimension_numbers"]
    dt = out.aval.dtype
    dst = em.name(out)
    lperm, rperm = channels_last(lhs_spec), channels_last(rhs_spec)
    lshape = [lhs.aval.shape[d] for d in lperm]
    rshape = [rhs.aval.shape[d] for d in rperm]
    n, c, sp = lshape[0], lshape[-1], lshape[1:-1]
    o, ksp = rshape[0], rshape[1:-1]
    out_sp = [out.aval.shape[d] for d in out_spec[2:]]
    b, g = p["batch_group_count"], p["feature_group_count"]
    nb, cg, od = n // b, c // g, o // (b * g)
    pp, kk = math.prod(out_sp), math.prod(ksp)
    if out.aval.size == 0 or cg * kk == 0:
        em.line(f"{dst} = np.zeros({_shape_tuple(out.aval.shape)}, dtype={dtype_ctor(dt)})")
        return
    work = dt if dt.kind == "f" else np.dtype(np.int64)

    if _weight_gradient_form(eqn, work):
        _conv_as_weight_gradient(em, eqn, work)
        return

    def prepared(x, perm):
        src = em.atom(x)
        if list(perm) != list(range(len(perm))):
            src = em.tmp(f"np.ascontiguousarray({src}.transpose({_shape_tuple(perm)}))")
        if x.aval.dtype != work:
            src = em.tmp(f"{src}.astype({dtype_ctor(work)})")
        return src
    xt = prepared(lhs, lperm)
    strides, pads = p["window_strides"], p["padding"]
    ldil, rdil = p["lhs_dilation"], p["rhs_dilation"]
    if (len(sp) == 2 and b == g == 1 and od < cg and work in (np.float32, np.float64)
            and all(d == 1 for d in list(strides) + list(ldil) + list(rdil))):
        _conv_products_first(em, eqn, xt, prepared(rhs, rperm), (n, sp, c, o, ksp, out_sp),
                             work)
        return
    wm = em.tmp(f"{prepared(rhs, rperm)}.reshape({_shape_tuple((b, g, od, kk * cg))})")
    cols = em.fresh("cols")
    if (len(sp) == 2 and b == g == 1 and c >= 4
            and all(d == 1 for d in list(ldil) + list(rdil))):
        # The common case, by contiguous runs of pixels (for fewer features a pixel is too
        # short a run: im2col3's per-element copies were faster).
        em.line(f"{cols} = np.empty({_shape_tuple((1, 1, nb * pp, kk * cg))}, "
                f"dtype={dtype_ctor(work)})")
        em.line(f"rt.im2col2(np.ascontiguousarray({xt}), {cols}[0, 0], "
                f"{_shape_tuple(out_sp)}, {_shape_tuple(strides)}, "
                f"{_shape_tuple([lo for lo, _ in pads])}, {_shape_tuple(ksp)})")
        _gemm_and_output(em, eqn, cols, wm, (b, g, nb, od, o, pp, kk, cg), out_sp, work)
        return
    em.line(f"{cols} = np.zeros({_shape_tuple((b, g, nb * pp, kk * cg))}, "
            f"dtype={dtype_ctor(work)})")
    if len(sp) <= 3:  # the compiled helper, with unit dims up to three spatial dims
        fill = 3 - len(sp)
        x5 = em.tmp(f"{xt}.reshape({_shape_tuple([n] + list(sp) + [1] * fill + [c])})")
        three = lambda vals, one: _shape_tuple(list(vals) + [one] * fill)  # noqa: E731
        em.line(f"rt.im2col3({x5}, {cols}, {nb}, {cg}, {three(out_sp, 1)}, "
                f"{three(strides, 1)}, {three([lo for lo, _ in pads], 0)}, {three(ldil, 1)}, "
                f"{three(rdil, 1)}, {three(ksp, 1)})")
    else:
        _im2col_loops(em, xt, cols, (b, nb, g, cg), sp, ksp, out_sp, strides, pads, ldil, rdil)
    _gemm_and_output(em, eqn, cols, wm, (b, g, nb, od, o, pp, kk, cg), out_sp, work)


def _conv_products_first(em, eqn, xt, wt, sizes, work):
    """A convolution with fewer output than input features (an NHWC convolution's input
    gradient, typically): every input pixel times every kernel offset's matrix first (one
    product, (N*S, C) by (C, K*O)), then each output pixel sums the products of the
    positions its window covers (``rt.col2im2``). The intermediate has O values per
    (position, offset) where im2col's matrix has C: less to write and read."""
    n, sp, c, o, ksp, out_sp = sizes
    kk = math.prod(ksp)
    gemm = "sgemm" if work == np.float32 else "dgemm"
    wk = em.tmp(f"np.ascontiguousarray({wt}.reshape(({o}, {kk}, {c})).transpose((2, 1, 0)))"
                f".reshape(({c}, {kk * o}))")
    prods, res = em.fresh("prods"), em.fresh("res")
    em.line(f"{prods} = np.empty(({n * math.prod(sp)}, {kk * o}), dtype={dtype_ctor(work)})")
    em.line(f"blas.{gemm}(np.ascontiguousarray({xt}).reshape(({n * math.prod(sp)}, {c})), "
            f"{wk}, {prods}, False, False)")
    em.line(f"{res} = np.empty(({n * math.prod(out_sp)}, {o}), dtype={dtype_ctor(work)})")
    lo = _shape_tuple([lo for lo, _ in eqn.params["padding"]])
    em.line(f"rt.col2im2({prods}, {res}, {_shape_tuple(sp)}, {_shape_tuple(out_sp)}, {lo}, "
            f"{_shape_tuple(ksp)})")
    _output(em, eqn, em.tmp(f"{res}.reshape((1, 1, {n * math.prod(out_sp)}, {o}))"),
            (1, 1, n, o, o, math.prod(out_sp), kk, c), list(out_sp), work)


def _swapped(spec) -> tuple:
    """The dims of ``spec`` (batch, feature, spatial...) ordered feature, spatial..., batch."""
    return (spec[1], *spec[2:], spec[0])


def _weight_gradient_form(eqn, work) -> bool:
    """A 2-D convolution whose operands lie in memory as (feature, S0, S1, batch) and
    (in-feature, K0, K1, out-feature): the kernel's gradient of an NHWC convolution (its
    transpose rule swaps batch and feature), as NHWC arrays are. Such a convolution is the
    forward im2col of its lhs, multiplied (transposed) by its rhs as it is: the general
    lowering would first transpose both operands (two of the three largest copies of a CNN's
    weight gradient)."""
    p = eqn.params
    lhs_spec, rhs_spec, _ = p["dimension_numbers"]
    lhs, rhs = eqn.inputs
    return (len(lhs_spec) == 4 and work in (np.float32, np.float64)
            and lhs.aval.dtype == work and rhs.aval.dtype == work
            and p["batch_group_count"] == p["feature_group_count"] == 1
            and all(d == 1 for d in list(p["window_strides"]) + list(p["lhs_dilation"])
                    + list(p["rhs_dilation"]))
            and _swapped(lhs_spec) == (0, 1, 2, 3) and _swapped(rhs_spec) == (0, 1, 2, 3))


def _conv_as_weight_gradient(em, eqn, work):
    """out[b, p, o] = sum over (f, k) of lhs[b, p + k - lo, f] rhs[o, k, f]: the im2col of
    lhs with rows (f, k) and columns (p, b), windows and outputs trading places, then one
    product with the first operand transposed."""
    lhs, rhs = eqn.inputs
    out = eqn.outputs[0]
    lhs_spec, rhs_spec, out_spec = eqn.params["dimension_numbers"]
    f, s0, s1, b = lhs.aval.shape
    fi, k0, k1, o = rhs.aval.shape
    p0, p1 = (out.aval.shape[d] for d in out_spec[2:])
    lo = _shape_tuple([lo for lo, _ in eqn.params["padding"]])
    cols, res = em.fresh("cols"), em.fresh("res")
    em.line(f"{cols} = np.empty(({f * k0 * k1}, {p0 * p1 * b}), dtype={dtype_ctor(work)})")
    em.line(f"rt.im2col2(np.ascontiguousarray({em.atom(lhs)}), {cols}, ({k0}, {k1}), (1, 1), "
            f"{lo}, ({p0}, {p1}))")
    em.line(f"{res} = np.empty(({p0 * p1 * b}, {o}), dtype={dtype_ctor(work)})")
    gemm = "sgemm" if work == np.float32 else "dgemm"
    em.line(f"blas.{gemm}({cols}, np.ascontiguousarray({em.atom(rhs)}).reshape("
            f"({fi * k0 * k1}, {o})), {res}, True, False)")
    # res holds (p0, p1, b, o): the output's dims out_spec[2], out_spec[3], out_spec[0], ...
    held = (out_spec[2], out_spec[3], out_spec[0], out_spec[1])
    r = em.tmp(f"{res}.reshape(({p0}, {p1}, {b}, {o}))")
    inv = tuple(int(i) for i in np.argsort(held))
    if inv != (0, 1, 2, 3):
        r = em.tmp(f"np.ascontiguousarray({r}.transpose({_shape_tuple(inv)}))")
    em.line(f"{em.name(out)} = {r}")


def _im2col_loops(em, xt, cols, groups, sp, ksp, out_sp, strides, pads, ldil, rdil):
    """im2col as generated loops (any number of spatial dims)."""
    b, nb, g, cg = groups
    pp = math.prod(out_sp)

    def body(idx):
        bi, ni, gi = idx[:3]
        oidx = idx[3:]
        row = em.tmp(" + ".join([f"{ni} * {pp}"] + [
            f"{oi} * {math.prod(out_sp[d + 1:])}" for d, oi in enumerate(oidx)]))
        xidx, kidx, opened = [], [], 0
        for d, oi in enumerate(oidx):
            k = em.fresh("w")
            em.line(f"for {k} in range({ksp[d]}):")
            em.level += 1
            opened += 1
            i, cond = _input_index(em, oi, k, strides[d], rdil[d], pads[d][0], ldil[d], sp[d])
            if cond:
                em.line(f"if {cond}:")
                em.level += 1
                opened += 1
            xidx.append(i)
            kidx.append(k)
        col = em.tmp("(" + " + ".join(["0"] + [f"{k} * {math.prod(ksp[d + 1:])}"
                                               for d, k in enumerate(kidx)]) + f") * {cg}")
        # An explicit loop, not a slice assignment: under parallel=True Numba makes each
        # array assignment a parallel region, one per window position (orders slower).
        ci = em.fresh("ch")
        em.line(f"for {ci} in range({cg}):")
        em.line(f"    {cols}[{bi}, {gi}, {row}, {col} + {ci}] = "
                f"{xt}[{bi} * {nb} + {ni}, {', '.join(xidx)}, {gi} * {cg} + {ci}]")
        em.level -= opened
    _loops(em, [b, nb, g] + list(out_sp), body, "c")


def _gemm_and_output(em, eqn, cols, wm, sizes, out_sp, work):
    """One GEMM per (batch group, feature group), then the result in the output's order."""
    b, g, nb, od, o, pp, kk, cg = sizes
    dt = eqn.outputs[0].aval.dtype
    res = em.fresh("res")
    m = nb * pp
    em.line(f"{res} = np.empty({_shape_tuple((b, g, m, od))}, dtype={dtype_ctor(work)})")
    bi, gi = em.fresh("b"), em.fresh("g")
    em.line(f"for {bi} in range({b}):")
    em.line(f"    for {gi} in range({g}):")
    args = f"{cols}[{bi}, {gi}], {wm}[{bi}, {gi}], {res}[{bi}, {gi}], False, True"
    if dt.kind != "f" or m * od * cg * kk <= SMALL_GEMM:
        em.line(f"        blas.gemm_loops({args})")
    elif dt == np.float32:
        em.line(f"        blas.sgemm({args})")
    else:
        em.line(f"        blas.dgemm({args})")
    _output(em, eqn, res, sizes, out_sp, work)


def _output(em, eqn, res, sizes, out_sp, work):
    """The products ``res`` (B, G, Nb * P, Od) as the output, in its dtype and order."""
    from functrans.primitives.convolution import channels_last
    b, g, nb, od, o, pp, _, _ = sizes
    out = eqn.outputs[0]
    dt, dst = out.aval.dtype, em.name(out)
    out_spec = eqn.params["dimension_numbers"][2]
    r = res
    if b * g > 1:  # (B, G, Nb, P, Od) -> (Nb, P, B, G, Od): features (b, g, od) major first
        r = em.tmp(f"np.ascontiguousarray({r}.reshape({_shape_tuple((b, g, nb, pp, od))})"
                   f".transpose((2, 3, 0, 1, 4)))")
    r = em.tmp(f"{r}.reshape({_shape_tuple([nb] + list(out_sp) + [o])})")
    if dt == np.bool_:
        r = em.tmp(f"{r} != 0")
    elif work != dt:
        r = em.tmp(f"{r}.astype({dtype_ctor(dt)})")
    inv = tuple(int(i) for i in np.argsort(channels_last(out_spec)))
    if inv != tuple(range(len(inv))):
        r = em.tmp(f"np.ascontiguousarray({r}.transpose({_shape_tuple(inv)}))")
    em.line(f"{dst} = {r}")


op_rules.update({
    "conv_general_dilated": _conv,
    "reduce_window_sum": _reduce_window("sum"), "reduce_window_max": _reduce_window("max"),
    "reduce_window_min": _reduce_window("min"),
    "select_and_gather_add": _select(False), "select_and_scatter_add": _select(True),
})
