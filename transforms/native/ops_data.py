"""Native kernels that move data: concatenate, pad, dynamic slices, gather and scatter,
cumulative reductions, bit casts. Semantics as the Numba backend's (``lowering/ops.py``):
dynamic starts are clamped into range, gather/scatter indices are clipped (mode "clip") or
out-of-range ones filled (gather) or dropped (scatter), cumulative ops combine in the
input dtype as the primitives' NumPy impls do.
"""
from __future__ import annotations

import numpy as np

from functrans.core.ir import Literal, Var
from functrans.transforms.lowering.ops import _fill_value

from . import scalar
from .ir import Val, const, linear, load_elem, nest, product, reg_type, store_elem, strides
from .kernel import Kernel

__all__ = ["data_kernels"]

data_kernels: dict = {}


def _rule(name):
    def register(f):
        data_kernels[name] = f
        return f
    return register


def _aval(dtype):
    return type("Aval", (), {"dtype": np.dtype(dtype)})()


def _combine(fn, mod, name, a: Val, b: Val, dtype) -> Val:
    av = _aval(dtype)
    return scalar.emit(fn, mod, name, [a, b], [av, av], av, {})


def _as_i64(fn, v: Val, dtype) -> str:
    return scalar.cast(fn, v, dtype, np.int64).ref


def _copy_unless_same(k: Kernel, dst, src, count, dtype):
    """Copy an update's operand into its result, unless the driver updates it in place (the
    two are then the same buffer)."""
    fn = k.fn
    k.mod.declare("llvm.memcpy", "declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)")
    nbytes = fn.op(f"mul i64 {count}, {np.dtype(dtype).itemsize}")
    with fn.when(fn.op(f"icmp ne ptr {dst}, {src}")):
        fn.do(f"call void @llvm.memcpy.p0.p0.i64(ptr {dst}, ptr {src}, i64 {nbytes}, i1 false)")


@_rule("concatenate")
def _concatenate(eqn) -> Kernel:
    out = eqn.outputs[0]
    if any(not isinstance(x, Var) for x in eqn.inputs):
        raise NotImplementedError("concatenate of literals")
    dim = eqn.params["dimension"]
    k = Kernel([])
    fn = k.fn
    ins = [(k.buf(x), k.dims(x.aval.shape), x) for x in eqn.inputs]
    dst = k.buf(out, readonly=False)
    odims = k.dims(out.aval.shape)
    ost = strides(fn, odims)
    offset = "0"
    dt = out.aval.dtype
    for ptr, dims, x in ins:
        with nest(fn, dims) as idx:
            didx = list(idx)
            didx[dim] = fn.op(f"add i64 {idx[dim]}, {offset}") if offset != "0" else idx[dim]
            v = load_elem(fn, ptr, dt, linear(fn, idx, strides(fn, dims)))
            store_elem(fn, v, dst, dt, linear(fn, didx, ost))
        offset = dims[dim] if offset == "0" else fn.op(f"add i64 {offset}, {dims[dim]}")
    fn.ret()
    return k


@_rule("pad")
def _pad(eqn) -> Kernel:
    x, pv = eqn.inputs
    out = eqn.outputs[0]
    if isinstance(x, Literal):
        raise NotImplementedError("pad of a literal")
    dt = out.aval.dtype
    k = Kernel([])
    fn = k.fn
    src = k.buf(x) if x.aval.shape else None
    xv = None if x.aval.shape else k.scalar(x)
    fill = k.scalar(pv)
    dst = k.buf(out, readonly=False)
    sdims, odims = k.dims(x.aval.shape), k.dims(out.aval.shape)
    with nest(fn, [product(fn, odims)]) as (i,):
        store_elem(fn, fill, dst, dt, i)
    if xv is not None:
        store_elem(fn, xv, dst, dt, "0")
        fn.ret()
        return k
    ost, sst = strides(fn, odims), strides(fn, sdims)
    with nest(fn, sdims) as idx:
        ok = "true"
        didx = []
        for j, (lo, _, interior), size in zip(idx, eqn.params["padding_config"], odims):
            t = j if interior == 0 else fn.op(f"mul i64 {j}, {interior + 1}")
            t = t if lo == 0 else fn.op(f"add i64 {t}, {lo}")
            inside = fn.op(f"and i1 {fn.op(f'icmp sge i64 {t}, 0')}, "
                           f"{fn.op(f'icmp slt i64 {t}, {size}')}")
            ok = inside if ok == "true" else fn.op(f"and i1 {ok}, {inside}")
            didx.append(t)
        with fn.when(ok):
            v = load_elem(fn, src, dt, linear(fn, idx, sst))
            store_elem(fn, v, dst, dt, linear(fn, didx, ost))
    fn.ret()
    return k


def _clamped(fn, k, starts, dims, sizes):
    """Start indices as i64, clamped into [0, dim - size]."""
    out = []
    for s, d, n in zip(starts, dims, sizes):
        j = _as_i64(fn, k.scalar(s), s.aval.dtype)
        out.append(_clamp(fn, j, fn.op(f"sub i64 {d}, {n}")))
    return out


def _clamp(fn, j, hi) -> str:
    """``j`` (i64) clamped into [0, hi]."""
    j = fn.op(f"select i1 {fn.op(f'icmp slt i64 {j}, 0')}, i64 0, i64 {j}")
    return fn.op(f"select i1 {fn.op(f'icmp sgt i64 {j}, {hi}')}, i64 {hi}, i64 {j}")


@_rule("dynamic_slice")
def _dynamic_slice(eqn) -> Kernel:
    x, *starts = eqn.inputs
    out = eqn.outputs[0]
    if isinstance(x, Literal) or not x.aval.shape:
        raise NotImplementedError("dynamic_slice of a scalar")
    dt = out.aval.dtype
    k = Kernel([])
    fn = k.fn
    src = k.buf(x)
    dst = k.buf(out, readonly=False)
    sdims, odims = k.dims(x.aval.shape), k.dims(out.aval.shape)
    st = _clamped(fn, k, starts, sdims, odims)
    _copy_block(fn, src, sdims, dst, odims, odims, st, dt, at_source=True)
    fn.ret()
    return k


def _copy_block(fn, src, sdims, dst, ddims, block, starts, dt, at_source):
    """Copy a ``block``-shaped window: from ``src`` at ``starts`` into all of ``dst``
    (``at_source``), or from all of ``src`` into ``dst`` at ``starts``."""
    sst, dst_st = strides(fn, sdims), strides(fn, ddims)
    with nest(fn, block) as idx:
        moved = [fn.op(f"add i64 {i}, {s}") for i, s in zip(idx, starts)]
        src_idx, dst_idx = (moved, idx) if at_source else (idx, moved)
        store_elem(fn, load_elem(fn, src, dt, linear(fn, src_idx, sst)), dst, dt,
                   linear(fn, dst_idx, dst_st))


@_rule("dynamic_update_slice")
def _dynamic_update_slice(eqn) -> Kernel:
    x, upd, *starts = eqn.inputs
    out = eqn.outputs[0]
    if isinstance(x, Literal) or not x.aval.shape or isinstance(upd, Literal):
        raise NotImplementedError("dynamic_update_slice of scalars")
    dt = out.aval.dtype
    k = Kernel([])
    fn = k.fn
    src, u = k.buf(x, noalias=False), k.buf(upd)
    dst = k.buf(out, readonly=False, noalias=False)
    sdims, udims = k.dims(x.aval.shape), k.dims(upd.aval.shape)
    st = _clamped(fn, k, starts, sdims, udims)
    _copy_unless_same(k, dst, src, product(fn, sdims), dt)
    _copy_block(fn, u, udims, dst, sdims, udims, st, dt, at_source=False)
    fn.ret()
    return k


def _indices(fn, k, indices, bidx, axes, xdims, mode):
    """Index values at batch position ``bidx``: clipped (mode "clip"), else with an i1 saying
    whether all are in range."""
    js, ok = [], "true"
    nb = len(bidx)
    for ix, a in zip(indices, axes):
        if isinstance(ix, Literal) or not ix.aval.shape:
            v = k.scalar(ix)
        else:
            shape = ix.aval.shape
            ptr = k.buf(ix)
            dims = k.dims(shape)
            pos = bidx[nb - len(shape):]
            sub = ["0" if d == 1 else p for d, p in zip(shape, pos)]
            v = load_elem(fn, ptr, ix.aval.dtype, linear(fn, sub, strides(fn, dims)))
        j = _as_i64(fn, v, ix.aval.dtype)
        n = xdims[a]
        if mode == "clip":
            j = _clamp(fn, j, fn.op(f"sub i64 {n}, 1"))
        else:
            inside = fn.op(f"and i1 {fn.op(f'icmp sge i64 {j}, 0')}, "
                           f"{fn.op(f'icmp slt i64 {j}, {n}')}")
            ok = inside if ok == "true" else fn.op(f"and i1 {ok}, {inside}")
        js.append(j)
    return js, ok


@_rule("gather")
def _gather(eqn) -> Kernel:
    x, *indices = eqn.inputs
    out = eqn.outputs[0]
    if isinstance(x, Literal) or not x.aval.shape:
        raise NotImplementedError("gather from a scalar")
    axes, mode, fill = eqn.params["axes"], eqn.params["mode"], eqn.params["fill_value"]
    dt = out.aval.dtype
    rest = [d for d in range(x.aval.ndim) if d not in axes]
    nbatch = out.aval.ndim - len(rest)
    k = Kernel([])
    fn = k.fn
    src = k.buf(x)
    dst = k.buf(out, readonly=False)
    xdims, odims = k.dims(x.aval.shape), k.dims(out.aval.shape)
    xst, ost = strides(fn, xdims), strides(fn, odims)
    fv = const(_fill_value(np.dtype(dt), fill), dt)
    if any(x.aval.shape[a] == 0 for a in axes):
        with nest(fn, [product(fn, odims)]) as (i,):
            store_elem(fn, fv if mode == "fill" else const(0, dt), dst, dt, i)
        fn.ret()
        return k
    with nest(fn, odims[:nbatch], hint="b") as bidx:
        js, ok = _indices(fn, k, indices, bidx, axes, xdims, mode)
        with nest(fn, [xdims[d] for d in rest], hint="r") as ridx:
            full = [None] * x.aval.ndim
            for a, j in zip(axes, js):
                full[a] = j
            for d, r in zip(rest, ridx):
                full[d] = r
            target = linear(fn, list(bidx) + list(ridx), ost)
            if ok == "true":
                store_elem(fn, load_elem(fn, src, dt, linear(fn, full, xst)), dst, dt, target)
            else:
                # Out-of-range rows read row 0 (always there) and are replaced by the fill.
                safe = [fn.op(f"select i1 {ok}, i64 {j}, i64 0") if j in js else j
                        for j in full]
                v = load_elem(fn, src, dt, linear(fn, safe, xst))
                store_elem(fn, Val(v.ty, fn.op(f"select i1 {ok}, {v}, {fv}")), dst, dt,
                           target)
    fn.ret()
    return k


def _scatter(combine):
    def build(eqn) -> Kernel:
        x, upd, *indices = eqn.inputs
        out = eqn.outputs[0]
        if isinstance(x, Literal) or not x.aval.shape:
            raise NotImplementedError("scatter into a scalar")
        axes, mode = eqn.params["axes"], eqn.params["mode"]
        dt = out.aval.dtype
        rest = [d for d in range(x.aval.ndim) if d not in axes]
        nbatch = upd.aval.ndim - len(rest)
        k = Kernel([])
        fn, mod = k.fn, k.mod
        src = k.buf(x, noalias=False)
        u = k.buf(upd) if isinstance(upd, Var) and upd.aval.shape else None
        uval = None if u is not None else k.scalar(upd)
        dst = k.buf(out, readonly=False, noalias=False)
        xdims = k.dims(x.aval.shape)
        udims = k.dims(upd.aval.shape)
        _copy_unless_same(k, dst, src, product(fn, xdims), dt)
        xst, ust = strides(fn, xdims), strides(fn, udims)
        with nest(fn, udims[:nbatch], hint="b") as bidx:
            js, ok = _indices(fn, k, indices, bidx, axes, xdims, mode)
            with fn.when(ok) if ok != "true" else _nothing():
                with nest(fn, [xdims[d] for d in rest], hint="r") as ridx:
                    full = [None] * x.aval.ndim
                    for a, j in zip(axes, js):
                        full[a] = j
                    for d, r in zip(rest, ridx):
                        full[d] = r
                    cell = linear(fn, full, xst)
                    val = uval if u is None else load_elem(
                        fn, u, dt, linear(fn, list(bidx) + list(ridx), ust))
                    if combine is not None:
                        val = _combine(fn, mod, combine, load_elem(fn, dst, dt, cell), val, dt)
                    store_elem(fn, val, dst, dt, cell)
        fn.ret()
        return k
    return build


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


data_kernels.update({"scatter": _scatter(None), "scatter-add": _scatter("add"),
                     "scatter-mul": _scatter("mul"), "scatter-min": _scatter("min"),
                     "scatter-max": _scatter("max")})


def _cumulative(combine):
    def build(eqn) -> Kernel:
        x, out = eqn.inputs[0], eqn.outputs[0]
        if isinstance(x, Literal) or not x.aval.shape:
            raise NotImplementedError("cumulative op of a scalar")
        axis, reverse = eqn.params["axis"], eqn.params["reverse"]
        dt = x.aval.dtype
        k = Kernel([])
        fn, mod = k.fn, k.mod
        src = k.buf(x)
        dst = k.buf(out, readonly=False)
        dims = k.dims(x.aval.shape)
        st = strides(fn, dims)
        others = [d for d in range(len(dims)) if d != axis]
        n = dims[axis]
        acc = fn.alloca(reg_type(dt))
        with nest(fn, [dims[d] for d in others], hint="o") as oidx:
            with fn.loop(n, hint="k") as t:
                j = fn.op(f"sub i64 {fn.op(f'sub i64 {n}, 1')}, {t}") if reverse else t
                full = [None] * len(dims)
                for d, i in zip(others, oidx):
                    full[d] = i
                full[axis] = j
                cell = linear(fn, full, st)
                v = load_elem(fn, src, dt, cell)
                first = fn.op(f"icmp eq i64 {t}, 0")
                prev = Val(v.ty, fn.load(v.ty, acc))
                nxt = _combine(fn, mod, combine, prev, v, dt)
                cur = Val(v.ty, fn.op(f"select i1 {first}, {v}, {nxt}"))
                fn.store(cur, acc)
                store_elem(fn, cur, dst, dt, cell)
        fn.ret()
        return k
    return build


data_kernels.update({"cumsum": _cumulative("add"), "cumprod": _cumulative("mul"),
                     "cummax": _cumulative("max"), "cummin": _cumulative("min")})


@_rule("bitcast_convert_type")
def _bitcast(eqn) -> Kernel:
    x, out = eqn.inputs[0], eqn.outputs[0]
    if isinstance(x, Literal):
        raise NotImplementedError("bitcast of a literal")
    k = Kernel([])
    fn = k.fn
    src = k.buf(x) if x.aval.shape else None
    xv = None if src else k.scalar(x)
    dst = k.buf(out, readonly=False)
    if xv is not None:
        slot = fn.alloca(xv.ty)
        fn.store(xv, slot)
        src = slot
    nbytes = np.dtype(x.aval.dtype).itemsize * max(1, int(np.prod(x.aval.shape)))
    if x.aval.shape:
        count = product(fn, k.dims(x.aval.shape))
        nbytes = fn.op(f"mul i64 {count}, {np.dtype(x.aval.dtype).itemsize}")
    k.mod.declare("llvm.memcpy", "declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)")
    fn.do(f"call void @llvm.memcpy.p0.p0.i64(ptr {dst}, ptr {src}, i64 {nbytes}, i1 false)")
    fn.ret()
    return k
