"""Products: matmul, dot, vdot, inner, outer, tensordot, einsum, kron, cross, vecdot.
All lower to ``dot_general`` (BLAS under jit).

    >>> matmul(fnp.ones((5, 2, 3)), fnp.ones((3, 4))).shape
    (5, 2, 4)
"""
from __future__ import annotations

import string

import numpy as np

from .. import lax
from .. import primitives as P
from ..core.trace import get_aval
from ..core import dtypes
from ..lax import products
from ._core import (_shown, _type_key, asarray, check_strict_promotion, broadcast_shapes, broadcast_to_shape,
                    check_arraylike, convert, normalize_axis, resolve_loop, unsupported_out)

__all__ = ["matmul", "dot", "vdot", "inner", "outer", "tensordot", "einsum", "einsum_path",
           "kron", "cross", "vecdot", "matvec", "vecmat"]


def _dot(a, b, contract, batch=((), ()), precision=None, preferred=None):
    """``dot_general`` of operands of one dtype; ``precision`` canonical, ``preferred`` the
    result dtype (checked as JAX checks preferred_element_type) or None."""
    out_dtype = products.check_dot_preferred(get_aval(a).dtype, preferred, precision)
    return products.bind_dot(a, b, (contract, batch), precision, out_dtype)


def _product_options(precision, preferred_element_type):
    """Canonical ``precision`` and ``preferred_element_type`` (validated as JAX does)."""
    precision = products.canonicalize_precision(precision)
    if preferred_element_type is not None:
        preferred_element_type = dtypes.canonicalize_dtype(preferred_element_type,
                                                           what="preferred_element_type")
    return precision, preferred_element_type


def _scalar_product(a, b, preferred):
    """``dot`` or ``inner`` with a 0-d operand: a product, in the preferred dtype if given."""
    from .ufuncs import multiply
    out = multiply(a, b)
    return out if preferred is None else convert(out, preferred)


def _matmul_dtypes(a, b, ufunc=np.matmul, name="matmul"):
    """Operands cast to NumPy's loop dtypes for the product ``ufunc``."""
    keys = (_type_key(a), _type_key(b))
    check_strict_promotion(keys)
    try:
        in_dtypes, out_dtype = resolve_loop(ufunc, keys,
                                            dtypes.default_int_dtype() == dtypes.int64)
    except (TypeError, np.exceptions.DTypePromotionError) as e:
        raise TypeError(f"fnp.{name} does not support inputs of types ({_shown(keys)}): {e}"
                        ) from None
    return convert(a, in_dtypes[0]), convert(b, in_dtypes[1])


def _check_contraction(sa, sb, ia, ib):
    """JAX's TypeError for a contraction over dimensions of different sizes."""
    if sa[ia] != sb[ib]:
        raise TypeError("dot_general requires contracting dimensions to have the same shape, "
                        f"got {(sa[ia],)} and {(sb[ib],)}.")


def matmul(a, b, out=None, *, precision=None, preferred_element_type=None, out_sharding=None):
    """Matrix product with NumPy's rules (1-D promotion, broadcast batch dims); JAX's
    ``precision`` and ``preferred_element_type`` (the result dtype) as in :func:`lax.dot`.

    >>> matmul(fnp.ones((2, 3)), fnp.ones(3))
    Array([3., 3.], dtype=float64)
    """
    check_arraylike("matmul", a, b)
    unsupported_out("matmul", out)
    if out_sharding is not None:
        return products.out_sharding_call(lambda x, y: matmul(
            x, y, precision=precision, preferred_element_type=preferred_element_type),
            (a, b), out_sharding, "matmul")
    precision, pet = _product_options(precision, preferred_element_type)
    a, b = _matmul_dtypes(asarray(a), asarray(b))
    sa, sb = get_aval(a).shape, get_aval(b).shape
    for i, s in enumerate((sa, sb)):
        if not s:
            raise ValueError(f"matmul input operand {i} must have ndim at least 1, but it has "
                             "ndim 0")
    _check_contraction(sa, sb, -1, -2 if len(sb) > 1 else 0)
    if len(sb) == 1:
        return _dot(a, b, ((len(sa) - 1,), (0,)), precision=precision, preferred=pet)
    if len(sa) == 1:
        return _dot(a, b, ((0,), (len(sb) - 2,)), precision=precision, preferred=pet)
    if len(sb) == 2:
        return _dot(a, b, ((len(sa) - 1,), (0,)), precision=precision, preferred=pet)
    try:
        batch = broadcast_shapes("matmul", sa[:-2], sb[:-2])
    except ValueError:
        raise ValueError(f"Incompatible types for matmul arguments: {get_aval(a).str_short()} "
                         f"and {get_aval(b).str_short()}") from None
    if len(sa) == 2:
        r = _dot(a, b, ((1,), (len(sb) - 2,)), precision=precision,
                 preferred=pet)  # M, batch..., N
        nb = len(sb) - 2
        return lax.transpose(r, tuple(range(1, nb + 1)) + (0, nb + 1)) if nb else r
    a = broadcast_to_shape(a, batch + sa[-2:])
    b = broadcast_to_shape(b, batch + sb[-2:])
    nb = len(batch)
    bd = tuple(range(nb))
    return _dot(a, b, ((nb + 1,), (nb,)), (bd, bd), precision, pet)


def dot(a, b, out=None, *, precision=None, preferred_element_type=None, out_sharding=None):
    """NumPy's dot: products of scalars, inner products, matrix products, and sums over the last
    axis of ``a`` and second-to-last of ``b``; JAX's ``precision`` and
    ``preferred_element_type`` (the result dtype).

    >>> dot(fnp.array([[1, 2], [3, 4]]), fnp.array([1, 1]))
    Array([3, 7], dtype=int64)
    >>> dot(fnp.ones(3, "int8"), fnp.ones(3, "int8"), preferred_element_type="int32")
    Array(3, dtype=int32)
    """
    check_arraylike("dot", a, b)
    unsupported_out("dot", out)
    if out_sharding is not None:
        return products.out_sharding_call(lambda x, y: dot(
            x, y, precision=precision, preferred_element_type=preferred_element_type),
            (a, b), out_sharding, "dot")
    precision, pet = _product_options(precision, preferred_element_type)
    a, b = asarray(a), asarray(b)
    na, nb = get_aval(a).ndim, get_aval(b).ndim
    if na == 0 or nb == 0:
        return _scalar_product(a, b, pet)
    a, b = _matmul_dtypes(a, b, name="dot")
    ib = 0 if nb == 1 else nb - 2
    _check_contraction(get_aval(a).shape, get_aval(b).shape, na - 1, ib)
    return _dot(a, b, ((na - 1,), (ib,)), precision=precision, preferred=pet)


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """Dot product of the flattened arrays (they must have the same size; a complex first
    argument is conjugated).

    >>> vdot(fnp.array([[1, 2], [3, 4]]), fnp.array([1, 1, 1, 1]))
    Array(10, dtype=int64)
    """
    from .shape_ops import ravel
    check_arraylike("vdot", a, b)
    a, b = ravel(a), ravel(b)
    if dtypes.kind(get_aval(a).dtype) == "c":  # NumPy conjugates the first argument
        a = P.conj_p.bind1(a)
    return dot(a, b, precision=precision, preferred_element_type=preferred_element_type)


def _gufunc_batch(name, a, b, core_a, core_b):
    """Broadcast the loop dimensions of two operands of a generalized ufunc."""
    sa, sb = get_aval(a).shape, get_aval(b).shape
    batch = broadcast_shapes(name, sa[:len(sa) - core_a], sb[:len(sb) - core_b])
    return (broadcast_to_shape(a, batch + sa[len(sa) - core_a:]),
            broadcast_to_shape(b, batch + sb[len(sb) - core_b:]), len(batch))


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """Dot product of vectors along ``axis`` (the other dimensions broadcast; a complex
    first argument is conjugated).

    >>> vecdot(fnp.array([[1, 2], [3, 4]]), fnp.array([1, 1]))
    Array([3, 7], dtype=int64)
    """
    from .shape_ops import moveaxis
    check_arraylike("vecdot", x1, x2)
    precision, pet = _product_options(precision, preferred_element_type)
    a, b = asarray(x1), asarray(x2)
    a, b = _matmul_dtypes(a, b, np.vecdot, "vecdot")
    a = moveaxis(a, normalize_axis(axis, get_aval(a).ndim), -1) if get_aval(a).ndim else a
    b = moveaxis(b, normalize_axis(axis, get_aval(b).ndim), -1) if get_aval(b).ndim else b
    if not get_aval(a).ndim or not get_aval(b).ndim:
        raise ValueError("fnp.vecdot: inputs must have at least one dimension")
    if get_aval(a).shape[-1] != get_aval(b).shape[-1]:
        raise ValueError(f"axes must match; got shapes {get_aval(a).shape} and "
                         f"{get_aval(b).shape} with axis={axis}")
    a, b, nb = _gufunc_batch("vecdot", a, b, 1, 1)
    bd = tuple(range(nb))
    return _dot(a, b, ((nb,), (nb,)), (bd, bd), precision, pet)


def inner(a, b, *, precision=None, preferred_element_type=None):
    """Sum product over the last axes.

    >>> inner(fnp.array([1, 2]), fnp.array([3, 4]))
    Array(11, dtype=int64)
    """
    check_arraylike("inner", a, b)
    precision, pet = _product_options(precision, preferred_element_type)
    a, b = asarray(a), asarray(b)
    na, nb = get_aval(a).ndim, get_aval(b).ndim
    if na == 0 or nb == 0:
        return _scalar_product(a, b, pet)
    a, b = _matmul_dtypes(a, b, name="inner")
    _check_contraction(get_aval(a).shape, get_aval(b).shape, -1, -1)
    return _dot(a, b, ((na - 1,), (nb - 1,)), precision=precision, preferred=pet)


def outer(a, b, out=None):
    """Outer product of flattened inputs.

    >>> outer(fnp.array([1, 2]), fnp.array([3, 4]))
    Array([[3, 4],
           [6, 8]], dtype=int64)
    """
    from .shape_ops import ravel, reshape
    from .ufuncs import multiply
    check_arraylike("outer", a, b)
    unsupported_out("outer", out)
    a, b = ravel(a), ravel(b)
    return multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


def matvec(x1, x2, /):
    """Matrix-vector products over the last dimensions (the others broadcast).

    >>> matvec(fnp.array([[1, 2], [3, 4]]), fnp.array([1, 1]))
    Array([3, 7], dtype=int64)
    """
    check_arraylike("matvec", x1, x2)
    m, v = _matmul_dtypes(asarray(x1), asarray(x2), np.matvec, "matvec")
    if get_aval(m).ndim < 2 or get_aval(v).ndim < 1:
        raise ValueError("fnp.matvec: needs a matrix (rank >= 2) and a vector (rank >= 1)")
    _check_core("matvec", "(n,m),(m)->(n)", "m", get_aval(m).shape[-1], get_aval(v).shape[-1])
    m, v, nb = _gufunc_batch("matvec", m, v, 2, 1)
    bd = tuple(range(nb))
    return _dot(m, v, ((nb + 1,), (nb,)), (bd, bd))


def _check_core(name, signature, dim, size1, size2):
    if size1 != size2:
        raise ValueError(f"fnp.{name}: inconsistent size for core dimension '{dim}': {size2} vs "
                         f"{size1} (signature {signature})")


def vecmat(x1, x2, /):
    """Vector-matrix products over the last dimensions (the others broadcast).

    >>> vecmat(fnp.array([1, 1]), fnp.array([[1, 2], [3, 4]]))
    Array([4, 6], dtype=int64)
    """
    check_arraylike("vecmat", x1, x2)
    v, m = _matmul_dtypes(asarray(x1), asarray(x2), np.vecmat, "vecmat")
    if get_aval(m).ndim < 2 or get_aval(v).ndim < 1:
        raise ValueError("fnp.vecmat: needs a vector (rank >= 1) and a matrix (rank >= 2)")
    _check_core("vecmat", "(n),(n,m)->(m)", "n", get_aval(v).shape[-1], get_aval(m).shape[-2])
    v, m, nb = _gufunc_batch("vecmat", v, m, 1, 2)
    bd = tuple(range(nb))
    return _dot(v, m, ((nb,), (nb,)), (bd, bd))


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None,
              out_sharding=None):
    """Sum products over ``axes`` (an int N = last N of a with first N of b, or two lists).

    >>> tensordot(fnp.ones((2, 3)), fnp.ones((3, 4)), axes=1).shape
    (2, 4)
    """
    check_arraylike("tensordot", a, b)
    if out_sharding is not None:
        return products.out_sharding_call(lambda x, y: tensordot(
            x, y, axes, precision=precision, preferred_element_type=preferred_element_type),
            (a, b), out_sharding, "tensordot")
    precision, pet = _product_options(precision, preferred_element_type)
    a, b = asarray(a), asarray(b)
    na, nb = get_aval(a).ndim, get_aval(b).ndim
    if isinstance(axes, (int, np.integer)):
        if axes > min(na, nb) or axes < 0:
            raise ValueError(f"tensordot: axes={axes} is too large for ranks {na} and {nb}")
        ca, cb = tuple(range(na - axes, na)), tuple(range(axes))
    else:
        ca, cb = axes
        ca = tuple(normalize_axis(x, na) for x in np.atleast_1d(ca).tolist())
        cb = tuple(normalize_axis(x, nb) for x in np.atleast_1d(cb).tolist())
    a, b = _matmul_dtypes(a, b)
    products.check_dot_dimensions(get_aval(a).shape, get_aval(b).shape, ((ca, cb), ((), ())))
    return _dot(a, b, (ca, cb), precision=precision, preferred=pet)


def kron(a, b):
    """Kronecker product.

    >>> kron(fnp.array([1, 2]), fnp.array([1, 10]))
    Array([ 1, 10,  2, 20], dtype=int64)
    """
    from .shape_ops import reshape
    from .ufuncs import multiply
    check_arraylike("kron", a, b)
    a, b = asarray(a), asarray(b)
    sa, sb = get_aval(a).shape, get_aval(b).shape
    nd = max(len(sa), len(sb))
    sa, sb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
    a = reshape(a, tuple(v for d in sa for v in (d, 1)))
    b = reshape(b, tuple(v for d in sb for v in (1, d)))
    return reshape(multiply(a, b), tuple(x * y for x, y in zip(sa, sb)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """Cross product of 3-vectors, or of 2-vectors (the z component only), along the given
    axes; the vector dimensions broadcast. A missing third component is an exact zero, as in
    NumPy (so ``-(a0 * b2)`` keeps its sign).

    >>> cross(fnp.array([1, 0, 0]), fnp.array([0, 1, 0]))
    Array([0, 0, 1], dtype=int64)
    """
    from ._core import promote
    from .joining import stack
    from .shape_ops import broadcast_arrays, moveaxis
    from .ufuncs import multiply, negative, subtract
    check_arraylike("cross", a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = asarray(a), asarray(b)
    for x, ax, what in ((a, axisa, "axisa"), (b, axisb, "axisb")):
        normalize_axis(ax, get_aval(x).ndim, what)
    a, b = promote(moveaxis(a, axisa, -1), moveaxis(b, axisb, -1))
    na, nb = get_aval(a).shape[-1], get_aval(b).shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"fnp.cross: incompatible dimensions for cross product (dimension must "
                         f"be 2 or 3), got {na} and {nb}")
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    z = subtract(multiply(a0, b1), multiply(a1, b0))
    if na == 2 and nb == 2:
        return z
    if na == 2:
        b2 = b[..., 2]
        x, y = multiply(a1, b2), negative(multiply(a0, b2))
    elif nb == 2:
        a2 = a[..., 2]
        x, y = negative(multiply(a2, b1)), multiply(a2, b0)
    else:
        a2, b2 = a[..., 2], b[..., 2]
        x = subtract(multiply(a1, b2), multiply(a2, b1))
        y = subtract(multiply(a2, b0), multiply(a0, b2))
    x, y, z = broadcast_arrays(x, y, z)
    out = stack([x, y, z], -1)
    return moveaxis(out, -1, normalize_axis(axisc, get_aval(out).ndim, "axisc"))


# ---- einsum -----------------------------------------------------------------------------------------
def _parse_einsum(subscripts, shapes):
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        ins, out = subscripts.split("->")
    else:
        ins, out = subscripts, None
    terms = ins.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: {len(terms)} operand subscripts for {len(shapes)} operands")
    used = set(subscripts) - set(".,->")
    free_letters = [c for c in string.ascii_letters if c not in used]
    ell_rank = max((len(s) - (len(t) - 3) for t, s in zip(terms, shapes) if "..." in t),
                   default=0)
    ell = "".join(free_letters[:ell_rank])
    expanded = []
    for t, s in zip(terms, shapes):
        if "..." in t:
            k = len(s) - (len(t) - 3)
            t = t.replace("...", ell[ell_rank - k:] if k else "")
        if len(t) != len(s):
            raise ValueError(f"einsum: subscript '{t}' does not match operand rank {len(s)}")
        expanded.append(t)
    if out is None:
        counts = {}
        for t in expanded:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
    return expanded, out


def einsum(subscripts, *operands, out=None, optimize="greedy", precision=None,
           preferred_element_type=None, out_sharding=None):
    """Einstein summation, contracted pairwise with ``dot_general`` in an order chosen by
    ``np.einsum_path``. As NumPy, the subscripts may also be given as sublists of integers
    (0-51, and ``...``) after each operand: ``einsum(a, [0, 1], b, [1, 2], [0, 2])``.

    >>> einsum("ij,jk->ik", fnp.ones((2, 3)), fnp.ones((3, 4))).shape
    (2, 4)
    >>> einsum(fnp.ones((2, 3)), [0, 1], fnp.ones((3, 4)), [1, 2], [0, 2]).shape
    (2, 4)
    """
    from .shape_ops import transpose
    unsupported_out("einsum", out)
    if not isinstance(subscripts, str):
        subscripts, operands = _sublists_to_subscripts((subscripts,) + operands)
    check_arraylike("einsum", *operands)
    if out_sharding is not None:
        return products.out_sharding_call(lambda *xs: einsum(
            subscripts, *xs, optimize=optimize, precision=precision,
            preferred_element_type=preferred_element_type), operands, out_sharding, "einsum")
    precision, pet = _product_options(precision, preferred_element_type)
    ops = [asarray(o) for o in operands]
    if len(ops) > 1:
        from ._core import promote
        ops = promote(*ops)
    if pet is not None:
        in_dtype = get_aval(ops[0]).dtype
        pet = products.check_dot_preferred(in_dtype, pet, precision)
        # A widening preferred type (int8 -> int32) is computed in from the start, as JAX
        # accumulates in it; otherwise the result is converted at the end.
        if products.widens(in_dtype, pet):
            ops, pet = [convert(o, pet) for o in ops], None
    shapes = [get_aval(o).shape for o in ops]
    terms, out_sub = _parse_einsum(subscripts, shapes)
    sizes = {}
    for t, s in zip(terms, shapes):
        for c, d in zip(t, s):
            if sizes.setdefault(c, d) != d:
                if d == 1 or sizes[c] == 1:
                    sizes[c] = max(d, sizes[c])
                else:
                    raise ValueError(f"einsum: index '{c}' has sizes {sizes[c]} and {d}")
    # Broadcast size-1 dims, take diagonals of repeated indices.
    prepared = []
    for t, o in zip(terms, ops):
        target = tuple(sizes[c] for c in t)
        if get_aval(o).shape != target:
            o = broadcast_to_shape(o, target)
        while len(set(t)) != len(t):
            c = next(ch for ch in t if t.count(ch) > 1)
            i, j = t.index(c), t.index(c, t.index(c) + 1)
            from .creation import diagonal
            o = diagonal(o, 0, i, j)
            t = t[:i] + t[i + 1:j] + t[j + 1:] + c
        prepared.append((t, o))
    if optimize and len(prepared) > 2:
        path = np.einsum_path(",".join(t for t, _ in prepared) + "->" + out_sub,
                              *[np.broadcast_to(np.zeros((), np.float64), get_aval(o).shape)
                                for _, o in prepared], optimize="greedy")[0][1:]
    else:
        path = [(0, 1)] * (len(prepared) - 1)
    for pair in _pairwise_path(path, len(prepared)):
        if len(pair) == 1:  # an operand reduced alone: its indices are summed with the next
            prepared.append(prepared.pop(pair[0]))
            continue
        i, j = sorted(pair)
        (ta, a), (tb, b) = prepared[i], prepared[j]
        rest = [t for k, (t, _) in enumerate(prepared) if k not in (i, j)]
        needed = set(out_sub).union(*map(set, rest)) if rest else set(out_sub)
        # Sum out indices used by only one side and not needed later.
        a, ta = _sum_unneeded(a, ta, needed | set(tb))
        b, tb = _sum_unneeded(b, tb, needed | set(ta))
        batch = [c for c in ta if c in tb and c in needed]
        contract = [c for c in ta if c in tb and c not in needed]
        r = _dot(a, b, (tuple(ta.index(c) for c in contract), tuple(tb.index(c) for c in contract)),
                 (tuple(ta.index(c) for c in batch), tuple(tb.index(c) for c in batch)),
                 precision)
        tr = "".join(batch) + "".join(c for c in ta if c not in tb) + \
            "".join(c for c in tb if c not in ta)
        prepared = [p for k, p in enumerate(prepared) if k not in (i, j)] + [(tr, r)]
    (t, o), = prepared
    o, t = _sum_unneeded(o, t, set(out_sub))
    result = transpose(o, tuple(t.index(c) for c in out_sub)) if t != out_sub else o
    return result if pet is None else convert(result, pet)


def _pairwise_path(path, n):
    """NumPy's contraction path as steps of one or two operands. ``np.einsum_path`` may join
    three or more at once (several scalars: ``",,->"``); such a step becomes pairwise steps,
    each appending its result last as NumPy's steps do, so later positions stay valid.

        >>> list(_pairwise_path([(0, 1, 2)], 3))
        [(0, 1), (0, 1)]
        >>> list(_pairwise_path([(1, 3, 4), (0, 1, 2)], 5))
        [(1, 3), (2, 3), (0, 1), (0, 1)]
    """
    for step in path:
        step = sorted(step)
        if len(step) <= 2:
            yield tuple(step)
            n -= len(step) - 1
            continue
        first, second, *rest = step
        yield first, second
        n -= 1
        for k, r in enumerate(rest):  # each r lost the operands removed below it
            yield r - 2 - k, n - 1
            n -= 1


def _sum_unneeded(x, t, needed):
    drop = [k for k, c in enumerate(t) if c not in needed]
    if not drop:
        return x, t
    dt = get_aval(x).dtype
    if dtypes.kind(dt) == "b":
        r = P.reduce_or_p.bind1(x, axes=tuple(drop))
    else:
        r = P.reduce_sum_p.bind1(x, axes=tuple(drop))
    return r, "".join(c for k, c in enumerate(t) if k not in drop)


def _sublist_letters(sub, where):
    try:
        items = list(sub)
    except TypeError:
        raise TypeError(f"fnp.einsum: {where} must be a list of integers (or ...), got "
                        f"{type(sub).__name__}") from None
    out = []
    for k in items:
        if k is Ellipsis:
            out.append("...")
        elif isinstance(k, (int, np.integer)) and not isinstance(k, bool) and 0 <= k < 52:
            # NumPy's mapping: 0-25 -> A-Z, 26-51 -> a-z (so implicit outputs sort by integer)
            out.append(chr(ord("A") + k) if k < 26 else chr(ord("a") + k - 26))
        else:
            raise ValueError(f"fnp.einsum: subscripts in {where} must be integers in [0, 52) "
                             f"or ..., got {k!r}")
    return "".join(out)


def _sublists_to_subscripts(args):
    """``(op0, sub0, op1, sub1, ..., [out])`` as ``("subs->out", operands)``."""
    n = len(args) // 2
    if n == 0:
        raise TypeError("fnp.einsum: the sublist form needs operand, sublist pairs")
    operands = args[0:2 * n:2]
    terms = [_sublist_letters(args[2 * i + 1], f"the sublist of operand {i}") for i in range(n)]
    subscripts = ",".join(terms)
    if len(args) % 2:
        subscripts += "->" + _sublist_letters(args[-1], "the output sublist")
    return subscripts, operands


def einsum_path(subscripts, *operands, optimize="greedy", einsum_call=False):
    """NumPy's contraction order for :func:`einsum` on operands of these shapes (only the
    shapes matter, so traced operands work).

    >>> einsum_path("ij,jk,kl->il", fnp.ones((2, 3)), fnp.ones((3, 4)), fnp.ones((4, 5)))[0]
    ['einsum_path', (1, 2), (0, 1)]
    """
    if einsum_call:
        raise NotImplementedError("fnp.einsum_path: einsum_call=True is internal to NumPy")
    shaped = [np.broadcast_to(np.zeros((), get_aval(asarray(o)).dtype), get_aval(asarray(o)).shape)
              for o in operands]
    return np.einsum_path(subscripts, *shaped, optimize=optimize)
