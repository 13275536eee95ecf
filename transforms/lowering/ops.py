"""Emitters for the equations that are not fused into loop nests: reshape, concatenate, pad,
dynamic slices, gather/scatter, dot_general (BLAS), cumulative ops, sort, bitcast, and the
LAPACK-backed cholesky, triangular_solve and lu.

``op_rules[name](em, eqn)`` writes lines that define ``em.name(out)`` for each output; every
array it produces is C-contiguous (later loops and BLAS rely on it).
"""
from __future__ import annotations

import math

import numpy as np

from . import blas
from .emit import LoweringError, reduction_identity
from .scalar import dtype_ctor, extremum

op_rules: dict = {}
SMALL_GEMM = 1 << 15  # multiply-adds below which loops beat a BLAS call


def _shape_tuple(dims) -> str:
    dims = [str(d) for d in dims]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _loops(em, shape, body, prefix="j"):
    """Emit nested loops over ``shape`` around ``body(index_names)``."""
    idx = [em.fresh(prefix) for _ in shape]
    for i, d in zip(idx, shape):
        em.line(f"for {i} in range({d}):")
        em.level += 1
    body(idx)
    em.level -= len(shape)
    return idx


def _reshape(em, eqn):
    x, out = eqn.inputs[0], eqn.outputs[0]
    src, dst = em.atom(x), em.name(out)
    if not out.aval.shape:
        em.line(f"{dst} = {src}.ravel()[0]")
    elif not x.aval.shape:
        em.line(f"{dst} = np.full({_shape_tuple(out.aval.shape)}, {src})")
    else:
        em.line(f"{dst} = {src}.reshape({_shape_tuple(out.aval.shape)})")


def _concatenate(em, eqn):
    out = eqn.outputs[0]
    dim = eqn.params["dimension"]
    dst = em.name(out)
    em.line(f"{dst} = np.empty({_shape_tuple(out.aval.shape)}, dtype="
            f"{dtype_ctor(out.aval.dtype)})")
    start = 0
    for x in eqn.inputs:
        n = x.aval.shape[dim]
        if n:
            sl = [":"] * out.aval.ndim
            sl[dim] = f"{start}:{start + n}"
            em.line(f"{dst}[{', '.join(sl)}] = {em.atom(x)}")
        start += n


def _pad(em, eqn):
    x, pv = eqn.inputs
    out = eqn.outputs[0]
    dst = em.name(out)
    em.line(f"{dst} = np.full({_shape_tuple(out.aval.shape)}, {em.atom(pv)})")
    src_sl, dst_sl = [], []
    for n, size, (lo, _, interior) in zip(x.aval.shape, out.aval.shape,
                                          eqn.params["padding_config"]):
        step = interior + 1
        j0 = max(0, -(lo // step) if lo < 0 else 0)
        while lo + j0 * step < 0:
            j0 += 1
        j1 = min(n - 1, (size - 1 - lo) // step) if n else -1
        if j1 < j0:
            return  # nothing of the operand survives the cropping
        src_sl.append(f"{j0}:{j1 + 1}")
        d0 = lo + j0 * step
        dst_sl.append(f"{d0}:{d0 + (j1 - j0) * step + 1}:{step}")
    if x.aval.shape:
        em.line(f"{dst}[{', '.join(dst_sl)}] = {em.atom(x)}[{', '.join(src_sl)}]")


def _clamped_starts(em, x, starts, sizes):
    names = []
    for k, (s, n, size) in enumerate(zip(starts, x.aval.shape, sizes)):
        names.append(em.tmp(f"min(max(np.int64({em.atom(s)}), 0), {n - size})"))
    return names


def _dynamic_slice(em, eqn):
    x, *starts = eqn.inputs
    out = eqn.outputs[0]
    if not x.aval.shape:
        em.line(f"{em.name(out)} = {em.atom(x)}")
        return
    sizes = eqn.params["slice_sizes"]
    st = _clamped_starts(em, x, starts, sizes)
    sl = ", ".join(f"{s}:{s} + {k}" for s, k in zip(st, sizes))
    em.line(f"{em.name(out)} = np.ascontiguousarray({em.atom(x)}[{sl}])")


def _dynamic_update_slice(em, eqn):
    x, upd, *starts = eqn.inputs
    out = eqn.outputs[0]
    if not x.aval.shape:
        em.line(f"{em.name(out)} = {em.atom(upd)}")
        return
    st = _clamped_starts(em, x, starts, upd.aval.shape)
    dst = _updated_copy(em, out, x)
    sl = ", ".join(f"{s}:{s} + {k}" for s, k in zip(st, upd.aval.shape))
    em.line(f"{dst}[{sl}] = {em.atom(upd)}")


UPDATES = {"dynamic_update_slice", "scatter", "scatter-add", "scatter-mul", "scatter-min",
           "scatter-max"}  # operand and result have one shape: the result may reuse its buffer


def _updated_copy(em, out, x) -> str:
    """Define ``name(out)`` as a copy of ``x`` to be updated. Inside a loop it is the buffer
    the loop gives ``out``; when that is ``x``'s own (a carry that nothing else reads), the
    update happens in place, without a copy."""
    dst, src = em.name(out), em.atom(x)
    where = em.buffers.place(em, out) if em.buffers is not None else None
    if where is None:
        em.line(f"{dst} = {src}.copy()")
    elif where == src:
        em.line(f"{dst} = {src}")
    else:
        em.line(f"{dst} = {where}")
        em.line(f"{dst}[:] = {src}")
    return dst


def _index_reads(em, indices, batch_idx):
    """Expressions reading each (broadcast) index array at the batch position."""
    reads = []
    nb = len(batch_idx)
    for ix in indices:
        shape = ix.aval.shape
        if not shape:
            reads.append(em.atom(ix))
            continue
        pos = batch_idx[nb - len(shape):]
        sub = ["0" if d == 1 else p for d, p in zip(shape, pos)]
        reads.append(f"{em.atom(ix)}[{', '.join(sub)}]")
    return reads


def _gather(em, eqn):
    x, *indices = eqn.inputs
    out = eqn.outputs[0]
    axes, mode, fill = eqn.params["axes"], eqn.params["mode"], eqn.params["fill_value"]
    rest = [d for d in range(x.aval.ndim) if d not in axes]
    batch = out.aval.shape[:out.aval.ndim - len(rest)]
    dst = em.name(out)
    em.line(f"{dst} = np.empty({_shape_tuple(out.aval.shape)}, dtype="
            f"{dtype_ctor(out.aval.dtype)})")
    if out.aval.size == 0:
        return
    if any(x.aval.shape[a] == 0 for a in axes):
        em.line(f"{dst}[...] = {em.const(_fill_value(out.aval.dtype, fill), out.aval.dtype)}"
                if mode == "fill" else f"{dst}[...] = 0")
        return
    src = em.atom(x)

    def body(bidx):
        js, conds = _indices_in_bounds(em, indices, bidx, axes, x.aval.shape, mode)

        def inner(ridx):
            full = [None] * x.aval.ndim
            for a, j in zip(axes, js):
                full[a] = j
            for d, r in zip(rest, ridx):
                full[d] = r
            target = f"{dst}[{', '.join(list(bidx) + list(ridx))}]" if out.aval.ndim else dst
            read = f"{src}[{', '.join(full)}]"
            if conds:
                fv = em.const(_fill_value(out.aval.dtype, fill), out.aval.dtype)
                em.line(f"{target} = {read} if ({' and '.join(conds)}) else {fv}")
            else:
                em.line(f"{target} = {read}")
        _loops(em, [x.aval.shape[d] for d in rest], inner, "r")
    _loops(em, batch, body, "b")


def _indices_in_bounds(em, indices, bidx, axes, shape, mode):
    """Emit the index reads for one batch position: clipped into range (mode "clip"), or
    returned with the conditions under which they are in range (dropped/filled otherwise)."""
    js, conds = [], []
    for r, a in zip(_index_reads(em, indices, bidx), axes):
        j = em.tmp(f"np.int64({r})")
        if mode == "clip":
            em.line(f"{j} = min(max({j}, 0), {shape[a] - 1})")
        else:
            conds.append(f"0 <= {j} < {shape[a]}")
        js.append(j)
    return js, conds


def _fill_value(dtype, fill):
    if fill is not None:
        return fill
    if dtype.kind in "fc":  # inexact: NaN (complex: NaN + 0j), as JAX's out-of-bounds fill
        return np.nan
    if dtype.kind == "b":
        return True
    info = np.iinfo(dtype)
    return info.min if dtype.kind == "i" else info.max


def _scatter(combine):
    def rule(em, eqn):
        x, upd, *indices = eqn.inputs
        out = eqn.outputs[0]
        axes, mode = eqn.params["axes"], eqn.params["mode"]
        rest = [d for d in range(x.aval.ndim) if d not in axes]
        batch = upd.aval.shape[:upd.aval.ndim - len(rest)]
        dst = _updated_copy(em, out, x)
        if upd.aval.size == 0:
            return
        u = em.atom(upd)
        fl = x.aval.dtype.kind == "f"

        def body(bidx):
            js, conds = _indices_in_bounds(em, indices, bidx, axes, x.aval.shape, mode)
            if conds:
                em.line(f"if {' and '.join(conds)}:")
                em.level += 1

            def inner(ridx):
                full = [None] * x.aval.ndim
                for a, j in zip(axes, js):
                    full[a] = j
                for d, r in zip(rest, ridx):
                    full[d] = r
                cell = f"{dst}[{', '.join(full)}]"
                val = f"{u}[{', '.join(list(bidx) + list(ridx))}]" if upd.aval.ndim else u
                em.line(f"{cell} = {em.cast(combine(cell, val, fl, x.aval.dtype), x.aval.dtype)}")
            _loops(em, [x.aval.shape[d] for d in rest], inner, "r")
            if conds:
                em.level -= 1
        _loops(em, batch, body, "b")
    return rule


def _free(ndim, contract, batch):
    return [d for d in range(ndim) if d not in contract and d not in batch]


def small_product(eqn) -> bool:
    """A float dot_general small enough for loops rather than a BLAS call."""
    lhs, rhs = eqn.inputs[:2]
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    k = math.prod(lhs.aval.shape[d] for d in lc)
    return eqn.outputs[0].aval.dtype.kind == "f" and eqn.outputs[0].aval.size * k <= SMALL_GEMM


def _dot_general(em, eqn):
    """``out = lhs . rhs``; with a third input ``acc`` (small float products, see
    lowering.control), ``out = acc + lhs . rhs`` in one pass."""
    lhs, rhs = eqn.inputs[:2]
    out = eqn.outputs[0]
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    dt = out.aval.dtype
    lf, rf = _free(lhs.aval.ndim, lc, lb), _free(rhs.aval.ndim, rc, rb)
    bsz = math.prod(lhs.aval.shape[d] for d in lb)
    m = math.prod(lhs.aval.shape[d] for d in lf)
    k = math.prod(lhs.aval.shape[d] for d in lc)
    n = math.prod(rhs.aval.shape[d] for d in rf)

    lead = (bsz,) if bsz != 1 else ()  # one product: 2-d views, no loop over the batch

    def operand(x, direct, swapped, rows, cols):
        """A (B, rows, cols) view of ``x``; BLAS transposes it when its memory order is the
        swapped one, so only other orders need a transposed copy."""
        src = em.atom(x)
        if not x.aval.shape:
            return em.tmp(f"np.full({_shape_tuple(lead + (rows, cols))}, {src})"), False
        if x.aval.dtype != dt:
            src = em.tmp(f"{src}.astype({dtype_ctor(dt)})")
        ident = list(range(x.aval.ndim))
        transposed = swapped == ident and dt.kind in "fc"
        # A vector has no memory order (one of its dimensions is 1): untransposed is faster.
        if transposed and 1 in (rows, cols) and m * n * k <= SMALL_GEMM:
            transposed, direct = False, ident
        if transposed:
            return _view(em, src, x.aval.shape, lead + (cols, rows)), True
        if direct != ident:
            src = em.tmp(f"np.ascontiguousarray({src}.transpose({_shape_tuple(direct)}))")
            return _view(em, src, None, lead + (rows, cols)), False
        return _view(em, src, x.aval.shape, lead + (rows, cols)), False

    a, ta = operand(lhs, list(lb) + lf + list(lc), list(lb) + list(lc) + lf, m, k)
    b, tb = operand(rhs, list(rb) + list(rc) + rf, list(rb) + rf + list(rc), k, n)
    where = em.buffers.place(em, out) if em.buffers is not None and out.aval.shape else None
    if where is None:
        c = em.tmp(f"np.empty({_shape_tuple(lead + (m, n))}, dtype={dtype_ctor(dt)})")
    else:  # the product lands in the loop's buffer for ``out`` (its reshape is a view)
        c = _view(em, where, out.aval.shape, lead + (m, n))
    at = ""
    if lead:
        q = em.fresh("q")
        em.line(f"for {q} in range({bsz}):")
        em.level += 1
        at = f"[{q}]"
    if dt.kind in "fc" and m * n * k <= SMALL_GEMM:
        # A BLAS call costs about a microsecond: small products (the matrix-vector steps of
        # an RNN) are faster as inlined loops, chosen for the operands' memory orders.
        acc = ""
        if len(eqn.inputs) == 3:
            x = eqn.inputs[2]
            if x.aval.shape:
                acc = f", {_view(em, em.atom(x), x.aval.shape, lead + (m, n))}{at}"
            else:  # a rank-0 sum (a dot of vectors added to a scalar): a kernel's scalar
                acc = f", np.full({_shape_tuple(lead + (m, n))}, {em.atom(x)}){at}"
        kernel = "small_outer" if k == 1 else blas.SMALL_KERNELS[ta, tb]  # k == 1: untransposed
        em.line(f"blas.{kernel}({a}{at}, {b}{at}, {c}{at}{acc})")
    elif dt == np.float32:
        em.line(f"blas.sgemm({a}{at}, {b}{at}, {c}{at}, {ta}, {tb})")
    elif dt == np.float64:
        em.line(f"blas.dgemm({a}{at}, {b}{at}, {c}{at}, {ta}, {tb})")
    elif dt.kind == "c":  # ?gemm transposes without conjugating, as dot_general does
        fn = "gemm_c64" if dt == np.complex64 else "gemm_c128"
        em.line(f"blas.{fn}({a}{at}, {b}{at}, {c}{at}, {ta}, {tb})")
    else:  # integers (wrapping like NumPy) and booleans (any product true)
        acc = em.fresh("acc")
        em.line(f"{acc} = np.empty(({m}, {n}), dtype=np.int64)")
        em.line(f"blas.gemm_loops({a}{at}.astype(np.int64), {b}{at}.astype(np.int64), {acc})")
        result = f"{acc} != 0" if dt == np.bool_ else f"{acc}.astype({dtype_ctor(dt)})"
        em.line(f"{c}{at or '[:]'} = {result}")
    if lead:
        em.level -= 1
    if where is not None:
        em.line(f"{em.name(out)} = {where}")
    elif out.aval.shape:
        em.line(f"{em.name(out)} = {_view(em, c, lead + (m, n), out.aval.shape)}")
    else:
        em.line(f"{em.name(out)} = {c}[{', '.join(['0'] * (len(lead) + 2))}]")


def _view(em, src, shape, new_shape) -> str:
    """``src`` (C-contiguous, of ``shape``) seen with ``new_shape``: no new view when equal
    (each view costs a reference count update per use, in loops per iteration)."""
    if shape is not None and tuple(shape) == tuple(new_shape):
        return src
    return em.tmp(f"{src}.reshape({_shape_tuple(new_shape)})")


def _cumulative(combine_name):
    def rule(em, eqn):
        x, out = eqn.inputs[0], eqn.outputs[0]
        axis, reverse = eqn.params["axis"], eqn.params["reverse"]
        shape = x.aval.shape
        dst, src = em.name(out), em.atom(x)
        em.line(f"{dst} = np.empty({_shape_tuple(shape)}, dtype={dtype_ctor(x.aval.dtype)})")
        others = [d for d in range(len(shape)) if d != axis]
        fl = x.aval.dtype.kind
        n = shape[axis]
        if n == 0 or x.aval.size == 0:
            return

        def body(oidx):
            acc = em.fresh("acc")
            j = em.fresh("k")
            rng = f"range({n} - 1, -1, -1)" if reverse else f"range({n})"
            full = [None] * len(shape)
            for d, i in zip(others, oidx):
                full[d] = i
            full[axis] = j
            cell = ", ".join(full)
            em.line(f"for {j} in {rng}:")
            em.line(f"    if {j} == {(n - 1) if reverse else 0}:")
            first = f"{src}[{cell}]"
            if fl == "c" and combine_name in ("max", "min"):  # from the identity, as in JAX
                ident = em.const(reduction_identity(combine_name, x.aval.dtype), x.aval.dtype)
                first = _COMBINE[combine_name](ident, first, fl)
            em.line(f"        {acc} = {first}")
            em.line("    else:")
            expr = _COMBINE[combine_name](acc, f"{src}[{cell}]", fl)
            em.line(f"        {acc} = {em.cast(expr, x.aval.dtype)}")
            em.line(f"    {dst}[{cell}] = {acc}")
        _loops(em, [shape[d] for d in others], body, "o")
    return rule


_COMBINE = {
    "sum": lambda a, b, fl: f"{a} + {b}",
    "prod": lambda a, b, fl: f"{a} * {b}",
    "max": lambda a, b, kind: extremum("max", a, b, kind),  # kind: the operands' dtype kind
    "min": lambda a, b, kind: extremum("min", a, b, kind),
    "logaddexp": lambda a, b, fl: f"rt.logaddexp({a}, {b})",
}


def _sort(em, eqn):
    dim, num_keys = eqn.params["dimension"], eqn.params["num_keys"]
    shape = eqn.inputs[0].aval.shape
    nd = len(shape)
    n = shape[dim]
    rows = math.prod(shape) // n if n else 0
    perm_axes = [d for d in range(nd) if d != dim] + [dim]
    inv = list(np.argsort(perm_axes))
    moved_shape = [shape[d] for d in perm_axes]
    row_views = []
    for x in eqn.inputs:
        src = em.atom(x)
        if perm_axes != list(range(nd)):
            src = em.tmp(f"np.ascontiguousarray({src}.transpose({_shape_tuple(perm_axes)}))")
        row_views.append(em.tmp(f"{src}.reshape(({rows}, {n}))"))
    perm = em.fresh("perm")
    em.line(f"{perm} = np.empty(({rows}, {n}), dtype=np.int64)")
    r = em.fresh("r")
    em.line(f"for {r} in range({rows}):")
    em.level += 1
    p = em.tmp(f"np.arange({n})")
    for key in reversed(row_views[:num_keys]):  # least significant key first, stable passes
        em.line(f"{p} = {p}[np.argsort({key}[{r}][{p}], kind='mergesort')]")
    em.line(f"{perm}[{r}] = {p}")
    em.level -= 1
    for x, view, out in zip(eqn.inputs, row_views, eqn.outputs):
        sorted_rows = em.fresh("s")
        em.line(f"{sorted_rows} = np.empty(({rows}, {n}), dtype={dtype_ctor(x.aval.dtype)})")
        em.line(f"for {r} in range({rows}):")
        em.line(f"    {sorted_rows}[{r}] = {view}[{r}][{perm}[{r}]]")
        res = em.tmp(f"{sorted_rows}.reshape({_shape_tuple(moved_shape)})")
        if perm_axes != list(range(nd)):
            res = em.tmp(f"np.ascontiguousarray({res}.transpose({_shape_tuple(inv)}))")
        em.line(f"{em.name(out)} = {res}")


def _matrices(em, x, rows, cols):
    """``x`` (..., rows, cols) as a C-contiguous batch (B, rows, cols)."""
    b = math.prod(x.aval.shape[:-2])
    return em.tmp(f"np.ascontiguousarray({em.atom(x)}).reshape({_shape_tuple((b, rows, cols))})")


def _cholesky(em, eqn):
    (x,), (out,) = eqn.inputs, eqn.outputs
    n = x.aval.shape[-1]
    em.line(f"{em.name(out)} = lapack.cholesky({_matrices(em, x, n, n)})"
            f".reshape({_shape_tuple(out.aval.shape)})")


def _triangular_solve(em, eqn):
    (a, b), (out,) = eqn.inputs, eqn.outputs
    p = eqn.params
    k = a.aval.shape[-1]
    va, vb = _matrices(em, a, k, k), _matrices(em, b, *b.aval.shape[-2:])
    em.line(f"{em.name(out)} = lapack.triangular_solve({va}, {vb}, {p['left_side']}, "
            f"{p['lower']}, {p['transpose_a']}, {p['unit_diagonal']})"
            f".reshape({_shape_tuple(out.aval.shape)})")


def _lu(em, eqn):
    (a,) = eqn.inputs
    res = em.fresh("lu")
    em.line(f"{res} = lapack.lu({_matrices(em, a, *a.aval.shape[-2:])})")
    for i, out in enumerate(eqn.outputs):
        em.line(f"{em.name(out)} = {res}[{i}].reshape({_shape_tuple(out.aval.shape)})")


def _bitcast(em, eqn):
    x, out = eqn.inputs[0], eqn.outputs[0]
    dt = dtype_ctor(out.aval.dtype)
    if not x.aval.shape:
        em.line(f"{em.name(out)} = np.array([{em.atom(x)}]).view({dt})[0]")
    else:
        em.line(f"{em.name(out)} = {em.atom(x)}.view({dt})")


def _numba_call(em, eqn):
    """A user's kernel in a Numba-generated kernel: its eager compiled form, found by key
    (``core/user_code.py``), called on arrays allocated here (zeroed unless the call opts out);
    sequential-vmap loops as Python loops over the batched operands' rows."""
    from functrans.core import user_code as user_functions
    code, loops, looped = eqn.params["kernel"], eqn.params["loops"], eqn.params["looped"]
    if code.launch is not None:
        raise LoweringError(f"kernel '{code.name}' is a CUDA kernel: it runs in "
                            "jit(..., backend='cuda') programs")
    nl = len(loops)
    inner = [x.aval.shape[sum(lv):] for x, lv in zip(eqn.inputs, looped)]
    if nl and (any(not s for s in inner) or any(not o.aval.shape[nl:] for o in eqn.outputs)):
        raise LoweringError(f"jit's Numba code generator cannot loop kernel '{code.name}' over "
                            "0-d elements (the native one does)")
    from functrans.core.avals import ShapedArray
    fn = code.eager_callable([ShapedArray(s, x.aval.dtype) for s, x in zip(inner, eqn.inputs)],
                             [ShapedArray(o.aval.shape[nl:], o.aval.dtype)
                              for o in eqn.outputs])
    sig = tuple((np.dtype(v.aval.dtype).str, v.aval.ndim) for v in eqn.inputs + eqn.outputs)
    key = user_functions.register(fn, "nc_" + user_functions.fingerprint(
        (code.key, repr(code.params), str(code.boundscheck), repr(sig), nl)))
    name = "_nc_" + key
    line = f"{name} = user_function({key!r})"
    if line not in em.const_lines:
        em.const_lines.append(line)
    alloc = "np.zeros" if code.zero_outputs else "np.empty"
    ins = [em.atom(x) if x.aval.shape else f"np.asarray({em.atom(x)})" for x in eqn.inputs]
    outs = [em.name(o) for o in eqn.outputs]
    for o, n in zip(eqn.outputs, outs):
        em.line(f"{n} = {alloc}({_shape_tuple(o.aval.shape)}, np.{np.dtype(o.aval.dtype).name})")
    idx = [f"q{k}" for k in range(nl)]
    for k, n in enumerate(loops):
        em.line("    " * k + f"for {idx[k]} in range({n}):")
    pad = "    " * nl

    def sub(a, lv):
        carried = [i for i, on in zip(idx, lv) if on]
        return f"{a}[{', '.join(carried)}]" if carried else a
    args = [sub(a, lv) for a, lv in zip(ins, looped)] + \
        [sub(o, (True,) * nl) for o in outs]
    em.line(f"{pad}{name}({', '.join(args)})")


def _unsupported(reason):
    def rule(em, eqn):
        where = f" (from {eqn.source})" if eqn.source else ""
        raise LoweringError(f"jit cannot compile '{eqn.prim.name}'{where}: {reason}")
    return rule


op_rules.update({
    "reshape": _reshape, "squeeze": _reshape, "concatenate": _concatenate, "pad": _pad,
    "dynamic_slice": _dynamic_slice, "dynamic_update_slice": _dynamic_update_slice,
    "gather": _gather, "dot_general": _dot_general, "sort": _sort,
    "bitcast_convert_type": _bitcast, "numba_call": _numba_call,
    "cholesky": _cholesky, "triangular_solve": _triangular_solve, "lu": _lu,
    "scatter": _scatter(lambda c, v, fl, dt: v),
    "scatter-add": _scatter(lambda c, v, fl, dt: f"{c} | {v}" if dt == np.bool_ else f"{c} + {v}"),
    "scatter-mul": _scatter(lambda c, v, fl, dt: f"{c} * {v}"),
    "scatter-min": _scatter(lambda c, v, fl, dt: extremum("min", c, v, np.dtype(dt).kind)),
    "scatter-max": _scatter(lambda c, v, fl, dt: extremum("max", c, v, np.dtype(dt).kind)),
    "cumsum": _cumulative("sum"), "cumprod": _cumulative("prod"),
    "cummax": _cumulative("max"), "cummin": _cumulative("min"),
    "cumlogsumexp": _cumulative("logaddexp"),
    "custom_lin": _unsupported("forward-mode differentiation of a custom_vjp function"),
})
