"""Scalar and array helpers that generated kernels call (compiled with Numba, cached).

They pin down semantics where Numba's defaults differ from functrans' primitives: C-style
integer division and remainder (x / 0 == 0), shifts past the bit width, NaN-propagating
max/min, rounding half away from zero, nextafter, population count::

    >>> idiv(-7, 2), irem(-7, 2)
    (-3, -1)
"""
from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir as llvm_ir
from numba.core import cgutils, types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

# Complex max/min in JAX's lexicographic order: the primitives' own (their impls fold with them).
from functrans.primitives.complex_order import cmax, cmin  # noqa: F401

_jit = numba.njit(cache=True, error_model="numpy", nogil=True)


@_jit
def idiv(x, y):
    """Integer division truncating toward zero; division by zero gives 0."""
    if y == 0:
        return x - x
    q = x // y
    if (x % y != 0) and ((x < 0) != (y < 0)):
        q += 1
    return q


@_jit
def irem(x, y):
    """Integer remainder with the sign of the dividend (C fmod); x % 0 gives 0."""
    if y == 0:
        return x - x
    r = x % y
    if r != 0 and ((r < 0) != (x < 0)):
        r -= y
    return r


@_jit
def fmax(x, y):
    """max propagating NaN from either side (as np.maximum)."""
    if x != x:
        return x
    if y != y:
        return y
    return x if x >= y else y


@_jit
def fmin(x, y):
    """min propagating NaN from either side (as np.minimum)."""
    if x != x:
        return x
    if y != y:
        return y
    return x if x <= y else y


@_jit
def round_away(x):
    """Round half away from zero (C round); inf and nan pass through."""
    t = np.trunc(x)
    if abs(x - t) >= 0.5:
        return t + np.copysign(1.0, x)
    return t


@_jit
def round_even(x):
    """Round half to even (np.rint)."""
    return np.rint(x)


_M1, _M2, _M4 = np.uint64(0x5555555555555555), np.uint64(0x3333333333333333), \
    np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


@_jit
def popcount64(x):
    """Number of set bits of a uint64 (typed constants: mixing int64 and uint64 in Numba
    would promote to float64)."""
    x = x - ((x >> np.uint64(1)) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return (x * _H01) >> np.uint64(56)


@_jit
def nextafter64(x, y):
    """The next float64 after x toward y (as np.nextafter)."""
    return np.nextafter(np.float64(x), np.float64(y))


@_jit
def nextafter32(x, y):
    return np.nextafter(np.float32(x), np.float32(y))


@_jit
def logistic(x):
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@_jit
def sort_rows(x, perm_out):
    """Stable argsort of each row of a 2-D array (NaNs last), written into perm_out."""
    for r in range(x.shape[0]):
        perm_out[r, :] = np.argsort(x[r], kind="mergesort")


@_jit
def lexsort_rows(keys, perm_out):
    """Stable lexicographic argsort of rows: keys is (num_keys, rows, n), most significant
    first (NaNs last per key)."""
    nk = keys.shape[0]
    for r in range(keys.shape[1]):
        perm = np.arange(keys.shape[2])
        for k in range(nk - 1, -1, -1):  # least significant key first; each pass is stable
            order = np.argsort(keys[k, r][perm], kind="mergesort")
            perm = perm[order]
        perm_out[r, :] = perm


@_jit
def logaddexp(x, y):
    """log(exp(x) + exp(y)) without overflow; equal infinities give themselves."""
    if x == y:
        return x + math.log(2.0) if math.isfinite(x) else x
    m = x if x > y else y
    if m != m or (x != x) or (y != y):
        return x + y  # nan
    return m + math.log1p(math.exp(-abs(x - y)))


@_jit
def clog1p(z):
    """log(1 + z) for complex z, as NumPy computes it (log|1 + z| + i arg(1 + z))."""
    x, y = z.real + 1.0, z.imag
    return complex(math.log(math.hypot(x, y)), math.atan2(y, x))


@_jit
def cexpm1(z):
    """exp(z) - 1 for complex z, accurate near 0 (NumPy's formula)."""
    x, y = z.real, z.imag
    a = math.sin(y / 2)
    return complex(math.expm1(x) * math.cos(y) - 2 * a * a, math.exp(x) * math.sin(y))


@_jit
def csign(z):
    """z / |z| for complex z (0 at 0; NaN parts give NaN), NumPy 2's sign."""
    if z.real != z.real or z.imag != z.imag:
        return complex(np.nan, np.nan)
    r = abs(z)
    if r == 0:
        return z * 0
    if r == np.inf:  # the direction of the infinite parts
        re = 0.0 if abs(z.real) != np.inf else (1.0 if z.real > 0 else -1.0)
        im = 0.0 if abs(z.imag) != np.inf else (1.0 if z.imag > 0 else -1.0)
        if re != 0 and im != 0:
            return complex(np.nan, np.nan)
        return complex(re, im)
    return z / r


@intrinsic
def mutable(typingctx, arr):
    """The same array typed as writable. Kernels never write to their inputs; this only lets
    read-only input buffers and fresh arrays share a Numba type where values meet (loop
    carries, branch results)."""
    if not isinstance(arr, types.Array):
        return None
    ret = arr.copy(readonly=False)

    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, ret, args[0])

    return ret(arr), codegen


@intrinsic
def fma(typingctx, x, y, z):
    """x * y + z rounded once (LLVM's fma intrinsic, which fast-math flags never split)."""
    if not (isinstance(x, types.Float) and x == y == z):
        return None

    def codegen(context, builder, signature, args):
        lty = context.get_value_type(x)
        fnty = llvm_ir.FunctionType(lty, [lty, lty, lty])
        fn = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.fma.f{x.bitwidth}")
        return builder.call(fn, args)

    return x(x, y, z), codegen



@_jit
def im2col3(x, cols, nb, cg, out_shape, strides, lo, ldil, rdil, ksize):
    """Fill ``cols[b, g, n*P + out, k*cg + c]`` from ``x`` of shape (N, S0, S1, S2, C) (three
    spatial dims; unused ones have size 1): for each output position and kernel offset, the
    ``cg`` features of group g at the input position it reads, unless that is padding or an
    lhs-dilation hole (left as is: zero). A helper compiled on its own: inside a
    ``parallel=True`` kernel these loops run several times slower."""
    nbatch, ngroups = cols.shape[0], cols.shape[1]
    k0, k1, k2 = ksize
    o0, o1, o2 = out_shape
    p = o0 * o1 * o2
    for b in range(nbatch):
        for n in range(nb):
            for g in range(ngroups):
                for a0 in range(o0):
                    for a1 in range(o1):
                        for a2 in range(o2):
                            row = n * p + (a0 * o1 + a1) * o2 + a2
                            for w0 in range(k0):
                                q0 = a0 * strides[0] + w0 * rdil[0] - lo[0]
                                if q0 < 0 or q0 % ldil[0] != 0 or q0 // ldil[0] >= x.shape[1]:
                                    continue
                                for w1 in range(k1):
                                    q1 = a1 * strides[1] + w1 * rdil[1] - lo[1]
                                    if (q1 < 0 or q1 % ldil[1] != 0
                                            or q1 // ldil[1] >= x.shape[2]):
                                        continue
                                    for w2 in range(k2):
                                        q2 = a2 * strides[2] + w2 * rdil[2] - lo[2]
                                        if (q2 < 0 or q2 % ldil[2] != 0
                                                or q2 // ldil[2] >= x.shape[3]):
                                            continue
                                        col = ((w0 * k1 + w1) * k2 + w2) * cg
                                        src = x[b * nb + n, q0 // ldil[0], q1 // ldil[1],
                                                q2 // ldil[2]]
                                        for c in range(cg):
                                            cols[b, g, row, col + c] = src[g * cg + c]


@_jit
def im2col2(x, cols, out_shape, strides, lo, ksize):
    """``im2col3`` for the common case (two spatial dims, no dilation, one group, ``x`` of
    shape (N, S0, S1, C) C-contiguous), writing every element of ``cols`` (it need not be
    zeroed): row ``(n, a0, a1)`` gets, per kernel row ``w0``, the input run
    ``x[n, q0, q1:q1 + k1]`` of whole pixels as one contiguous copy (the window's columns
    clipped to the input), and zeros around it. Indices are unsigned so that the copies
    vectorize (no negative-index wraparound checks). For a 3x3 convolution of 32x14x14x16
    values this took 0.18 ms where zeroing the matrix and ``im2col3`` took 0.34 ms (the
    matrix is the input times the window size, so writing it is most of the work)."""
    n_img, s0, s1, c = x.shape
    o0, o1 = out_shape
    k0, k1 = ksize
    xf = x.reshape(-1)
    cf = cols.reshape(-1)
    width = np.uint64(cols.shape[1])
    seg = np.uint64(k1 * c)
    zero = cf.dtype.type(0)
    row = np.uint64(0)
    for n in range(n_img):
        for a0 in range(o0):
            for a1 in range(o1):
                start = row * width
                row += np.uint64(1)
                first = a1 * strides[1] - lo[1]  # input column under window column 0
                w1s = min(max(0, -first), k1)
                w1e = max(min(k1, s1 - first), w1s)
                count = np.uint64((w1e - w1s) * c)
                lead = np.uint64(w1s * c)
                for w0 in range(k0):
                    q0 = a0 * strides[0] + w0 - lo[0]
                    base = start + np.uint64(w0) * seg
                    if q0 < 0 or q0 >= s0 or count == 0:
                        for i in range(seg):
                            cf[base + i] = zero
                        continue
                    for i in range(lead):
                        cf[base + i] = zero
                    src = np.uint64(((n * s0 + q0) * s1 + first + w1s) * c)
                    dst = base + lead
                    for i in range(count):
                        cf[dst + i] = xf[src + i]
                    for i in range(dst + count, base + seg):
                        cf[i] = zero


@_jit
def col2im2(g, out, in_shape, out_shape, lo, ksize):
    """The second half of a convolution computed as products first: ``g`` holds, for every
    input position ``(n, q0, q1)`` and kernel offset ``(k0, k1)``, that position's features
    multiplied by the offset's kernel matrix (``O`` values); output position ``(n, p0, p1)``
    sums the rows ``q = p + k - lo`` inside the input over the offsets. ``out`` is
    (N * P0 * P1, O), written whole. Unsigned indices, so the O-wide adds vectorize."""
    s0, s1 = in_shape
    p0n, p1n = out_shape
    k0n, k1n = ksize
    o = np.uint64(out.shape[1])
    kk = np.uint64(k0n * k1n)
    n_img = out.shape[0] // (p0n * p1n)
    gf = g.reshape(-1)
    of = out.reshape(-1)
    zero = of.dtype.type(0)
    row = np.uint64(0)
    for n in range(n_img):
        for p0 in range(p0n):
            for p1 in range(p1n):
                dst = row * o
                row += np.uint64(1)
                for i in range(o):
                    of[dst + i] = zero
                for k0 in range(k0n):
                    q0 = p0 + k0 - lo[0]
                    if q0 < 0 or q0 >= s0:
                        continue
                    for k1 in range(k1n):
                        q1 = p1 + k1 - lo[1]
                        if q1 < 0 or q1 >= s1:
                            continue
                        src = ((np.uint64((n * s0 + q0) * s1 + q1) * kk)
                               + np.uint64(k0 * k1n + k1)) * o
                        for i in range(o):
                            of[dst + i] += gf[src + i]


def _float_to_int(dtype):
    """An intrinsic ``to_<dtype>(x)``: a float converted to the integer ``dtype`` as XLA
    converts, truncated toward zero, NaN to 0, values out of range to the nearest bound
    (Numba's ``np.int32(x)`` is LLVM's ``fptosi``: poison there, INT_MIN in practice). The
    native generator's ``cast`` emits the same selects, which vectorize with the conversion
    (LLVM's ``fptosi.sat`` means the same but is scalarized on x86)."""
    d = np.dtype(dtype)
    bits, info = 8 * d.itemsize, np.iinfo(d)
    lo, hi = float(info.min), float(info.max) + 1.0  # 0 or powers of two: exact
    top = info.max if d.kind == "i" else -1  # all ones: LLVM writes integers signed

    def typer(typingctx, x):
        if not isinstance(x, types.Float):
            return None

        def codegen(context, builder, signature, args):
            v, ity = args[0], llvm_ir.IntType(bits)
            if isinstance(v.type, llvm_ir.HalfType):  # the bounds are beyond half's range
                v = builder.fpext(v, llvm_ir.FloatType())
            raw = (builder.fptosi if d.kind == "i" else builder.fptoui)(v, ity)
            r = builder.select(builder.fcmp_ordered("<=", v, v.type(lo)), ity(info.min), raw)
            r = builder.select(builder.fcmp_ordered(">=", v, v.type(hi)), ity(top), r)
            return builder.select(builder.fcmp_unordered("uno", v, v), ity(0), r)

        return numba.from_dtype(d)(x), codegen

    typer.__name__ = f"to_{d.name}"
    return intrinsic(typer)


to_int8, to_int16, to_int32, to_int64 = (_float_to_int(f"int{b}") for b in (8, 16, 32, 64))
to_uint8, to_uint16, to_uint32, to_uint64 = (_float_to_int(f"uint{b}") for b in (8, 16, 32, 64))


@intrinsic
def select(typingctx, which, on_true, on_false):
    """``on_true if which else on_false`` as one LLVM ``select``: no branch, so no basic
    blocks for Numba's passes to walk (generated code has thousands of selects)."""
    if not isinstance(which, (types.Boolean, types.Integer)):
        return None
    ty = on_true if on_true == on_false else typingctx.unify_pairs(on_true, on_false)
    if not isinstance(ty, (types.Number, types.Boolean)):
        return None

    def codegen(context, builder, signature, args):
        c, a, b = args
        c = context.cast(builder, c, which, types.boolean)
        a = context.cast(builder, a, on_true, ty)
        b = context.cast(builder, b, on_false, ty)
        return builder.select(c, a, b)

    return ty(which, on_true, on_false), codegen
