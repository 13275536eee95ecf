"""CUDA kernels for the cuda backend, generated from source templates and cached by source.

* ``fused(eqns, ...)``: one grid-stride kernel for a run of elementwise equations of one
  shape; each element's expression comes from the CPU backend's scalar rules, whose helper
  calls resolve to the device functions of :mod:`.device_fns`.
* ``take``: ``out[i] = src[idx[i]]`` (or a fill value where ``idx[i] < 0``); every structural
  primitive (broadcast, transpose, slice, pad, concatenate, gather, ...) is one take with an
  index map computed on the host from the primitive's own NumPy impl.
* ``reduce``: one block per output element, threads striding over its segment, then a tree
  reduction in shared memory.
* ``matmul``: batched, 16x16 tiles in shared memory.
* ``scan_rows``: cumulative ops, one thread per row.
* ``scatter``: plain or atomic (add, min, max) writes at positions from an index map.
* ``zero``: fills the results of users' CUDA kernels (``user_kernels.py``) with zeros.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from ..lowering.scalar import dtype_ctor, scalar_rules
from .device_fns import NAMESPACES

_cache: dict = {}
TILE = 16
BLOCK = 128


def simulated() -> bool:
    import numba
    return bool(numba.config.ENABLE_CUDASIM)


def launch_shape(n: int) -> tuple[int, int]:
    """(blocks, threads) for a grid-stride loop over n elements; the simulator runs every
    thread as a Python thread, so it gets a small grid."""
    if simulated():
        return 1, max(1, min(8, n))
    threads = BLOCK
    return max(1, min(1024, math.ceil(n / threads))), threads


def _compile(source: str, name: str, consts=()):
    """Compile ``source`` defining kernel ``name``; ``consts`` are (name, NumPy scalar)
    globals of the kernel (typed constants, infinities included)."""
    key = (source, tuple((n, v.dtype.str, v.tobytes()) for n, v in consts))
    kernel = _cache.get(key)
    if kernel is None:
        namespace = dict(NAMESPACES, cuda=cuda, **dict(consts))
        exec(compile(source, f"<functrans cuda kernel {name}>", "exec"), namespace)
        kernel = _cache[key] = cuda.jit(namespace[name])
    return kernel


# ---- fused elementwise --------------------------------------------------------------------
class _Ctx:
    """What a scalar rule may ask of its emitter: temporaries, typed constants, casts."""

    def __init__(self):
        self.lines, self.consts, self.count = [], {}, 0

    def fresh(self) -> str:
        self.count += 1
        return f"t{self.count}"

    def tmp(self, expr: str) -> str:
        n = self.fresh()
        self.lines.append(f"{n} = {expr}")
        return n

    def const(self, value, dtype) -> str:
        v = np.asarray(value).astype(np.dtype(dtype))[()]
        key = (v.dtype.str, v.tobytes())
        if key not in self.consts:
            self.consts[key] = (f"_c{len(self.consts)}", v)
        return self.consts[key][0]

    def cast(self, expr: str, dtype) -> str:
        return f"{dtype_ctor(dtype)}({expr})"


def _int_sign(ctx, a, i, o):
    x = ctx.tmp(a[0])
    if o.dtype.kind in "fc":
        return scalar_rules["sign"](ctx, [x], i, o)
    zero, one = ctx.const(0, o.dtype), ctx.const(1, o.dtype)
    if o.dtype.kind == "u":
        return f"({one} if {x} > {zero} else {zero})"
    return f"({one} if {x} > {zero} else (-{one} if {x} < {zero} else {zero}))"


# Where the CPU rule relies on arithmetic with booleans (fine compiled, not in the simulator).
_RULES = {"sign": _int_sign}


def fused(eqns, inputs, outputs):
    """A kernel ``k(n, *outputs, *inputs)`` for elementwise ``eqns``: array inputs are
    flattened, rank-0 ones are 1-element arrays; literals become constants."""
    from functrans.core.ir import Literal
    ctx = _Ctx()
    names = {}
    loads = []
    for k, v in enumerate(inputs):
        names[v] = f"x{k}"
        loads.append(f"x{k} = in{k}[0]" if v.aval.shape == () else f"x{k} = in{k}[i]")
    for eqn in eqns:
        args = [ctx.const(x.val, x.aval.dtype) if isinstance(x, Literal) else names[x]
                for x in eqn.inputs]
        rule = _RULES.get(eqn.prim.name) or scalar_rules[eqn.prim.name]
        expr = rule(ctx, args, [x.aval for x in eqn.inputs], eqn.outputs[0].aval,
                    **eqn.params)
        names[eqn.outputs[0]] = ctx.tmp(ctx.cast(expr, eqn.outputs[0].aval.dtype))
    stores = [f"out{k}[i] = {names[v]}" for k, v in enumerate(outputs)]
    params = ["n"] + [f"out{k}" for k in range(len(outputs))] + \
        [f"in{k}" for k in range(len(inputs))]
    body = loads + ctx.lines + stores
    source = "\n".join([f"def fused({', '.join(params)}):",
                                 "    i = cuda.grid(1)", "    s = cuda.gridsize(1)",
                                 "    while i < n:"] + [f"        {line}" for line in body] +
                       ["        i += s", ""])
    return _compile(source, "fused", tuple(ctx.consts.values()))


# ---- take: every structural primitive ------------------------------------------------------
_TAKE = """
def take(out, src, idx, fill):
    i = cuda.grid(1)
    s = cuda.gridsize(1)
    while i < out.size:
        j = idx[i]
        out[i] = src[j] if j >= 0 else fill[0]
        i += s
"""


def take():
    return _compile(_TAKE, "take")


# ---- zero fill (users' kernels' results) -----------------------------------------------
_ZERO = """
def zero(out):
    i = cuda.grid(1)
    s = cuda.gridsize(1)
    while i < out.size:
        out[i] = _zero
        i += s
"""


def zero(dtype):
    """``k(out)``: fill the flat array ``out`` with zeros of ``dtype`` on the device."""
    return _compile(_ZERO, "zero", (("_zero", np.zeros((), dtype)[()]),))


# ---- reductions ------------------------------------------------------------------------------
_COMBINE = {
    "sum": "a + b", "prod": "a * b", "max": "rt.fmax(a, b)", "min": "rt.fmin(a, b)",
    "imax": "max(a, b)", "imin": "min(a, b)", "and": "a & b", "or": "a | b",
}


def reduce(op: str, dtype, identity):
    """``k(out, x)``: x is (n_out, m) C-contiguous; block b reduces row b."""
    ctor = dtype_ctor(dtype)
    source = f"""
def reduce(out, x):
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    m = x.shape[1]
    buf = cuda.shared.array({BLOCK}, dtype={ctor})
    acc = _identity
    j = t
    while j < m:
        a = acc
        b = x[row, j]
        acc = {ctor}({_COMBINE[op]})
        j += cuda.blockDim.x
    buf[t] = acc
    cuda.syncthreads()
    step = cuda.blockDim.x // 2
    while step > 0:
        if t < step:
            a = buf[t]
            b = buf[t + step]
            buf[t] = {ctor}({_COMBINE[op]})
        cuda.syncthreads()
        step //= 2
    if t == 0:
        out[row] = buf[0]
"""
    return _compile(source, "reduce", (("_identity", np.asarray(identity, dtype)[()]),))


def arg_reduce(find_max: bool):
    """``k(out, x)``: the first index of the max/min of each row (NaN wins, as in NumPy)."""
    better = "v > best" if find_max else "v < best"
    source = f"""
def arg_reduce(out, x):
    r = cuda.grid(1)
    s = cuda.gridsize(1)
    while r < x.shape[0]:
        best = x[r, 0]
        k = 0
        if best == best:
            for j in range(1, x.shape[1]):
                v = x[r, j]
                if v != v:
                    best = v
                    k = j
                    break
                if {better}:
                    best = v
                    k = j
        out[r] = k
        r += s
"""
    return _compile(source, "arg_reduce")


# ---- matrix products -----------------------------------------------------------------------
def matmul(dtype):
    """``k(c, a, b)``: c[p] = a[p] @ b[p] for (P, M, K) x (P, K, N), tiles in shared memory."""
    ctor = dtype_ctor(dtype)
    source = f"""
def matmul(c, a, b):
    p = cuda.blockIdx.z
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * {TILE} + ty
    col = cuda.blockIdx.x * {TILE} + tx
    sa = cuda.shared.array(({TILE}, {TILE}), dtype={ctor})
    sb = cuda.shared.array(({TILE}, {TILE}), dtype={ctor})
    m = a.shape[1]
    k = a.shape[2]
    n = b.shape[2]
    acc = {ctor}(0)
    for t0 in range(0, k, {TILE}):
        sa[ty, tx] = a[p, row, t0 + tx] if (row < m and t0 + tx < k) else {ctor}(0)
        sb[ty, tx] = b[p, t0 + ty, col] if (col < n and t0 + ty < k) else {ctor}(0)
        cuda.syncthreads()
        for j in range({TILE}):
            acc = {ctor}(acc + sa[ty, j] * sb[j, tx])
        cuda.syncthreads()
    if row < m and col < n:
        c[p, row, col] = acc
"""
    return _compile(source, "matmul")


# ---- cumulative ops ----------------------------------------------------------------------------
_SCAN = {"cumsum": "acc + v", "cumprod": "acc * v", "cummax": "rt.fmax(acc, v)",
         "cummin": "rt.fmin(acc, v)", "cumlogsumexp": "rt.logaddexp(acc, v)"}


def scan_rows(name: str, dtype, integer: bool):
    """``k(out, x)``: running ``name`` along each row of the (rows, m) array x."""
    expr = _SCAN[name]
    if integer and name in ("cummax", "cummin"):
        expr = f"{'max' if name == 'cummax' else 'min'}(acc, v)"
    ctor = dtype_ctor(dtype)
    source = f"""
def scan_rows(out, x):
    r = cuda.grid(1)
    s = cuda.gridsize(1)
    while r < x.shape[0]:
        acc = x[r, 0]
        out[r, 0] = acc
        for j in range(1, x.shape[1]):
            v = x[r, j]
            acc = {ctor}({expr})
            out[r, j] = acc
        r += s
"""
    return _compile(source, "scan_rows")


# ---- scatter ---------------------------------------------------------------------------------
def scatter(kind: str):
    """``k(out, updates, pos)``: combine each update into ``out[pos]`` (skipped if pos < 0);
    duplicates race for plain writes (any one wins, as on every GPU backend)."""
    write = {"set": "out[p] = updates[i]", "add": "cuda.atomic.add(out, p, updates[i])",
             "min": "cuda.atomic.min(out, p, updates[i])",
             "max": "cuda.atomic.max(out, p, updates[i])"}[kind]
    source = f"""
def scatter(out, updates, pos):
    i = cuda.grid(1)
    s = cuda.gridsize(1)
    while i < pos.size:
        p = pos[i]
        if p >= 0:
            {write}
        i += s
"""
    return _compile(source, "scatter")


# ---- sort ------------------------------------------------------------------------------------
def sort_rows(n_operands: int, num_keys: int):
    """``k(*ops)``: sort each row of the (rows, m) arrays ``ops`` in place by the first
    ``num_keys`` of them (lexicographically, NaNs last, stable): one thread per row, insertion
    sort (rows are short in practice; long single rows want a parallel merge sort)."""
    ops = [f"o{k}" for k in range(n_operands)]
    less = []
    for k in range(num_keys):
        less += [f"            a = o{k}[r, j]", f"            b = o{k}[r, j - 1]",
                 "            if (a < b) or (a == a and b != b):",
                 "                lt = True", "                break",
                 "            if (b < a) or (b == b and a != a):", "                break"]
    swaps = [f"            t = {o}[r, j]\n            {o}[r, j] = {o}[r, j - 1]\n"
             f"            {o}[r, j - 1] = t" for o in ops]
    source = "\n".join([
        f"def sort_rows({', '.join(ops)}):",
        "    r = cuda.grid(1)", "    s = cuda.gridsize(1)",
        "    while r < o0.shape[0]:",
        "        for i in range(1, o0.shape[1]):",
        "            j = i",
        "            while j > 0:",
        "                lt = False",
        "                for _ in range(1):"] +
        ["        " + line for line in less] +
        ["                if not lt:", "                    break"] +
        ["    " + line for line in "\n".join(swaps).split("\n")] +
        ["                j -= 1", "        r += s", ""])
    return _compile(source, "sort_rows")
