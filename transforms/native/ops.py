"""Native kernels for equations that are not fused loop nests.

``op_kernels[name](eqn) -> Kernel`` builds the kernel (or raises ``NotImplementedError`` for
cases left to the Numba backend); ``ALIASES`` are equations whose output is their input's
buffer seen with another shape (the driver passes the same pointer on).

``dot_general`` follows the Numba backend (``lowering/ops.py``): operands viewed as (batch,
rows, cols) matrices, BLAS ``?gemm`` (which transposes an operand stored the other way) for
large float products, loops chosen for the operands' memory order for small ones (below
``SMALL_GEMM`` multiply-adds), 64-bit accumulation for integers. Operands in another order
or dtype are copied (transposed, converted) into scratch memory first.
"""
from __future__ import annotations

import math

import numpy as np

from functrans.core.ir import Literal
from functrans.transforms.lowering import blas_library
from functrans.transforms.lowering.ops import SMALL_GEMM

from . import parallel, scalar
from .blas_split import SPLIT_MIN
from .ir import Val, const, mem_type, reg_type
from .kernel import Arg, Kernel

__all__ = ["op_kernels", "ALIASES", "supported"]

ALIASES = {"reshape", "squeeze", "expand_dims"}
op_kernels: dict = {}
_GEMM_FLAGS = "contract reassoc"  # as the Numba backend's small-product loops


def supported(eqn) -> bool:
    """Whether ``eqn`` (not fusible into a loop nest) has a native kernel or is an alias."""
    name = eqn.prim.name
    if name in ALIASES:
        return isinstance(eqn.inputs[0], type(eqn.outputs[0])) and bool(eqn.inputs[0].aval.shape
                                                                       or eqn.outputs[0].aval.shape)
    return name in op_kernels


def _free(ndim, contract, batch):
    return [d for d in range(ndim) if d not in contract and d not in batch]


def _dims_params(k: Kernel, prefix: str, shape):
    names = []
    for d in shape:
        name = f"%{prefix}{len(names)}"
        k.params.append(("i64", name))
        k.args.append(Arg("dim", int(d)))
        names.append(name)
    return names


def _product(fn, names) -> str:
    out = "1"
    for n in names:
        out = n if out == "1" else fn.op(f"mul i64 {out}, {n}")
    return out


def _dot_general(eqn) -> Kernel:
    lhs, rhs = eqn.inputs[:2]
    if len(eqn.inputs) != 2 or isinstance(lhs, Literal) or isinstance(rhs, Literal):
        raise NotImplementedError("dot_general with literal or accumulator operands")
    out = eqn.outputs[0]
    dt = np.dtype(out.aval.dtype)
    if dt.kind == "c":
        raise NotImplementedError("complex dot_general")
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lf, rf = _free(lhs.aval.ndim, lc, lb), _free(rhs.aval.ndim, rc, rb)
    m = math.prod(lhs.aval.shape[d] for d in lf)
    kk = math.prod(lhs.aval.shape[d] for d in lc)
    n = math.prod(rhs.aval.shape[d] for d in rf)
    small = dt.kind == "f" and m * n * kk <= SMALL_GEMM
    use_blas = dt.kind == "f" and not small and blas_library.JIT is not None

    params = [("ptr noalias readonly", "%a0"), ("ptr noalias readonly", "%a1"),
              ("ptr noalias", "%a2")]
    k = Kernel(params, [Arg("buf", lhs), Arg("buf", rhs), Arg("buf", out)])
    fn = k.fn
    ldims = _dims_params(k, "l", lhs.aval.shape)
    rdims = _dims_params(k, "r", rhs.aval.shape)
    bsz = _product(fn, [ldims[d] for d in lb])
    m_ = _product(fn, [ldims[d] for d in lf])
    k_ = _product(fn, [ldims[d] for d in lc])
    n_ = _product(fn, [rdims[d] for d in rf])

    def operand(ptr, x, dims, direct, swapped, rows, cols):
        """(pointer to a (B, rows, cols) array, transposed?, copied?)."""
        ident = list(range(x.aval.ndim))
        same_type = np.dtype(x.aval.dtype) == dt
        transposed = swapped == ident and dt.kind == "f" and same_type
        if transposed and 1 in (rows, cols) and m * n * kk <= SMALL_GEMM:
            transposed = False  # a vector: untransposed loops are faster
        if transposed:
            return ptr, True, None
        if _same_memory_order(direct, x.aval.shape) and same_type:
            return ptr, False, None
        return _permuted_copy(k, ptr, x, dims, direct, dt), False, True

    a, ta, a_tmp = operand("%a0", lhs, ldims, list(lb) + lf + list(lc),
                           list(lb) + list(lc) + lf, m, kk)
    b, tb, b_tmp = operand("%a1", rhs, rdims, list(rb) + list(rc) + rf,
                           list(rb) + rf + list(rc), kk, n)
    batch = math.prod(lhs.aval.shape[d] for d in lb)
    if use_blas and _batch_on_pool(batch, m * n * kk):
        _batch_loop_on_pool(k, dt, a, b, bsz, ldims, rdims, (lb, lf, lc, rf), ta, tb)
        fn.ret()
        return k
    mk = fn.op(f"mul i64 {m_}, {k_}")
    kn = fn.op(f"mul i64 {k_}, {n_}")
    mn = fn.op(f"mul i64 {m_}, {n_}")
    with fn.loop(bsz, hint="q") as q:
        pa = fn.gep(mem_type(dt), a, fn.op(f"mul i64 {q}, {mk}"))
        pb = fn.gep(mem_type(dt), b, fn.op(f"mul i64 {q}, {kn}"))
        pc = fn.gep(mem_type(dt), "%a2", fn.op(f"mul i64 {q}, {mn}"))
        if use_blas:
            _gemm_call(k, dt, pa, pb, pc, m_, n_, k_, ta, tb)
        else:
            _gemm_loops(k, dt, pa, pb, pc, m_, n_, k_, ta, tb, outer=kk == 1)
    fn.ret()
    return k


def _batch_on_pool(batch: int, per_product: int) -> bool:
    """Whether a batch of BLAS products (attention's heads) runs its products on the thread
    pool, a unit each: when BLAS runs on one thread per call (products cut on the pool), the
    batch is worth the threads, and each product is too small to be cut by itself."""
    return (blas_library.split_products and batch > 1 and per_product < SPLIT_MIN
            and batch * per_product >= SPLIT_MIN)


def _batch_loop_on_pool(k: Kernel, dt, a, b, bsz, ldims, rdims, dims, ta, tb) -> None:
    """The batch loop of ``_dot_general`` as a parallel region: a chunk function running
    products ``start..start+count``. The operands' pointers (parameters, or scratch copies
    made before the loop) reach it through the data block; sizes are recomputed from the
    parameters it reads back."""
    lb, lf, lc, rf = dims
    k.parallel = True
    slots = len(k.params)
    fn = k.fn
    chunk, start, count = parallel.chunk_function(k.params)
    pa_slot = chunk.gep("i64", "%data", str(slots))
    pb_slot = chunk.gep("i64", "%data", str(slots + 1))
    ca, cb = chunk.load("ptr", pa_slot), chunk.load("ptr", pb_slot)
    m_ = _product(chunk, [ldims[d] for d in lf])
    k_ = _product(chunk, [ldims[d] for d in lc])
    n_ = _product(chunk, [rdims[d] for d in rf])
    mk = chunk.op(f"mul i64 {m_}, {k_}")
    kn = chunk.op(f"mul i64 {k_}, {n_}")
    mn = chunk.op(f"mul i64 {m_}, {n_}")
    stop = chunk.op(f"add i64 {start}, {count}")
    with chunk.loop(stop, start=start, hint="q") as q:
        pa = chunk.gep(mem_type(dt), ca, chunk.op(f"mul i64 {q}, {mk}"))
        pb = chunk.gep(mem_type(dt), cb, chunk.op(f"mul i64 {q}, {kn}"))
        pc = chunk.gep(mem_type(dt), "%a2", chunk.op(f"mul i64 {q}, {mn}"))
        _gemm_call(k, dt, pa, pb, pc, m_, n_, k_, ta, tb, fn=chunk)
    chunk.ret()
    k.helpers.append(chunk)
    fn.store(Val("ptr", a), parallel.data_slot(k, slots))
    fn.store(Val("ptr", b), parallel.data_slot(k, slots + 1))
    parallel.launch(k, bsz, parallel.threads(k))


def _same_memory_order(order, shape) -> bool:
    """Is ``x.transpose(order)`` the same memory as ``x``? (Moving axes of size 1 moves no
    element: a per-example vector seen as a (1, n) or (n, 1) matrix.)"""
    big = [d for d in order if shape[d] != 1]
    return big == sorted(big)


def _permuted_copy(k: Kernel, ptr, x, dims, order, dt) -> str:
    """A C-contiguous copy of ``x`` (dims ``dims``) with its axes in ``order``, converted to
    ``dt`` (rank 0: one element), in scratch memory the caller lends for the call."""
    fn = k.fn
    dst = k.scratch(max(1, x.aval.size) * dt.itemsize)
    src_dt = np.dtype(x.aval.dtype)
    new_dims = [dims[d] for d in order]
    strides = {}
    s = "1"
    for d in reversed(range(len(dims))):
        strides[d] = s
        s = dims[d] if s == "1" else fn.op(f"mul i64 {s}, {dims[d]}")
    loops, idx = [], []
    for d in new_dims:
        cm = fn.loop(d, hint="c")
        idx.append(cm.__enter__())
        loops.append(cm)
    src_lin, dst_lin = "0", "0"
    for pos, d in enumerate(order):
        src_lin = fn.op(f"add i64 {src_lin}, {fn.op(f'mul i64 {idx[pos]}, {strides[d]}')}")
        dst_lin = idx[pos] if pos == 0 else \
            fn.op(f"add i64 {fn.op(f'mul i64 {dst_lin}, {new_dims[pos]}')}, {idx[pos]}")
    mt = mem_type(src_dt)
    v = fn.load(mt, fn.gep(mt, ptr, src_lin))
    val = Val("i1", fn.op(f"icmp ne i8 {v}, 0")) if src_dt.kind == "b" else Val(mt, v)
    val = scalar.cast(fn, val, src_dt, dt)
    if dt.kind == "b":
        val = Val("i8", fn.op(f"zext {val} to i8"))
    fn.store(val, fn.gep(mem_type(dt), dst, dst_lin))
    for cm in reversed(loops):
        cm.__exit__(None, None, None)
    return dst


def _gemm_call(k: Kernel, dt, a, b, c, m, n, kk, ta, tb, fn=None):
    fn, mod = fn or k.fn, k.mod
    it = "i64" if blas_library.JIT.ilp64 else "i32"
    ft = reg_type(dt)
    sym = f"functrans_{'s' if dt == np.float32 else 'd'}gemm"
    mod.declare(sym, f"declare void @{sym}(i32, i32, i32, {it}, {it}, {it}, {ft}, ptr, {it}, "
                     f"ptr, {it}, {ft}, ptr, {it})")

    def i(v):
        return v if it == "i64" else fn.op(f"trunc i64 {v} to i32")

    nonempty = fn.op(f"and i1 {fn.op(f'icmp sgt i64 {m}, 0')}, {fn.op(f'icmp sgt i64 {n}, 0')}")
    with fn.when(nonempty):
        with fn.when(fn.op(f"icmp eq i64 {kk}, 0")):
            count = fn.op(f"mul i64 {m}, {n}")
            nbytes = fn.op(f"mul i64 {count}, {dt.itemsize}")
            fn.do(f"call void @llvm.memset.p0.i64(ptr {c}, i8 0, i64 {nbytes}, i1 false)")
            mod.declare("llvm.memset", "declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)")
        with fn.when(fn.op(f"icmp sgt i64 {kk}, 0")):
            lda = m if ta else kk
            ldb = kk if tb else n
            one, zero = const(1, dt), const(0, dt)
            fn.do(f"call void @{sym}(i32 101, i32 {112 if ta else 111}, "
                  f"i32 {112 if tb else 111}, {it} {i(m)}, {it} {i(n)}, {it} {i(kk)}, {one}, "
                  f"ptr {a}, {it} {i(lda)}, ptr {b}, {it} {i(ldb)}, {zero}, ptr {c}, "
                  f"{it} {i(n)})")


def _gemm_loops(k: Kernel, dt, a, b, c, m, n, kk, ta, tb, outer=False):
    """c = op(a) @ op(b) as loops whose innermost walks contiguous memory; integers and
    booleans accumulate in 64 bits. ``outer``: the contracted size is 1."""
    fn = k.fn
    acc_dt = dt if dt.kind == "f" else np.dtype(np.int64)
    aty = reg_type(acc_dt)
    mt = mem_type(dt)

    def elem(ptr, row, col, ld, transposed):
        lin = fn.op(f"add i64 {fn.op(f'mul i64 {col if transposed else row}, {ld}')}, "
                    f"{row if transposed else col}")
        v = fn.load(mt, fn.gep(mt, ptr, lin))
        val = Val("i1", fn.op(f"icmp ne i8 {v}, 0")) if dt.kind == "b" else Val(mt, v)
        return scalar.cast(fn, val, dt, acc_dt)

    def madd(acc: Val, x: Val, y: Val) -> Val:
        if acc_dt.kind == "f":
            p = fn.op(f"fmul {_GEMM_FLAGS} {x}, {y.ref}")
            return Val(aty, fn.op(f"fadd {_GEMM_FLAGS} {acc}, {p}"))
        return Val(aty, fn.op(f"add {acc}, {fn.op(f'mul {x}, {y.ref}')}"))

    def finish(v: Val):
        return scalar.cast(fn, v, acc_dt, dt)

    def store(v: Val, lin):
        if dt.kind == "b":
            v = Val("i8", fn.op(f"zext {v} to i8"))
        fn.store(v, fn.gep(mt, c, lin))

    lda = m if ta else kk
    ldb = kk if tb else n
    if outer and acc_dt == dt:
        # One term per element (k == 1): an outer product, written once.
        with fn.loop(m, hint="i") as i:
            row = fn.op(f"mul i64 {i}, {n}")
            x = elem(a, i, "0", lda, ta)
            with fn.loop(n, hint="j") as j:
                y = elem(b, "0", j, ldb, tb)
                mul = f"fmul {_GEMM_FLAGS}" if acc_dt.kind == "f" else "mul"
                store(Val(aty, fn.op(f"{mul} {x}, {y.ref}")), fn.op(f"add i64 {row}, {j}"))
        return
    if acc_dt == dt and not tb:
        # Rows of c as sums of rows of b (inner loop over n, contiguous).
        with fn.loop(m, hint="i") as i:
            row = fn.op(f"mul i64 {i}, {n}")
            with fn.loop(n, hint="j") as j:
                store(const(0, dt), fn.op(f"add i64 {row}, {j}"))
            with fn.loop(kk, hint="p") as p:
                x = elem(a, i, p, lda, ta)
                with fn.loop(n, hint="j") as j:
                    lin = fn.op(f"add i64 {row}, {j}")
                    cur = Val(mt, fn.load(mt, fn.gep(mt, c, lin)))
                    store(madd(cur, x, elem(b, p, j, ldb, False)), lin)
        return
    # Dot products (b stored (n, k): contiguous rows), or 64-bit integer accumulation.
    slot = fn.alloca(aty)
    with fn.loop(m, hint="i") as i:
        with fn.loop(n, hint="j") as j:
            fn.store(const(0, acc_dt), slot)
            with fn.loop(kk, hint="p") as p:
                cur = Val(aty, fn.load(aty, slot))
                fn.store(madd(cur, elem(a, i, p, lda, ta), elem(b, p, j, ldb, tb)), slot)
            lin = fn.op(f"add i64 {fn.op(f'mul i64 {i}, {n}')}, {j}")
            store(finish(Val(aty, fn.load(aty, slot))), lin)


op_kernels["dot_general"] = _dot_general


def _register_data_kernels():
    from .linalg_calls import linalg_kernels
    from .ops_data import data_kernels
    from .user_calls import numba_call_kernel
    op_kernels.update(data_kernels)
    op_kernels.update(linalg_kernels)
    op_kernels["numba_call"] = numba_call_kernel


_register_data_kernels()
