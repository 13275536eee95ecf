"""Convolutions with JAX's names: conv_general_dilated, conv, conv_with_general_padding,
conv_transpose, and the helpers that resolve dimension numbers and padding."""
from __future__ import annotations

import operator
from typing import NamedTuple, Sequence

import numpy as np

from .. import primitives as P
from ..core import dtypes
from ..core.shape_poly import as_dim, max_dim
from ..core.trace import get_aval
from ..primitives.convolution import conv_output_shape, dilate_dim
from .ops import match_weak
from .products import (DotAlgorithmPreset, canonicalize_precision, check_conv_preferred,
                       check_no_out_sharding)

__all__ = ["ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_permutations",
           "conv_general_dilated", "conv", "conv_with_general_padding", "conv_transpose",
           "conv_general_shape_tuple", "conv_shape_tuple", "conv_transpose_shape_tuple",
           "padtype_to_pads"]


class ConvDimensionNumbers(NamedTuple):
    """Dimension indices of (batch, feature, spatial...) in lhs and the output, and of
    (out feature, in feature, spatial...) in the kernel.

    >>> lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2)).rhs_spec
    (3, 2, 0, 1)
    """
    lhs_spec: Sequence[int]
    rhs_spec: Sequence[int]
    out_spec: Sequence[int]


def conv_general_permutations(dimension_numbers):
    """``(lhs_perm, rhs_perm, out_perm)`` from spec strings such as ``('NHWC', 'HWIO', 'NHWC')``;
    spatial dims are ordered as they appear in the kernel's string.

    >>> lax.conv_general_permutations(("NHWC", "HWIO", "NHWC"))
    ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    """
    lhs_s, rhs_s, out_s = dimension_numbers
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (spec, (a, b)) in enumerate(zip(dimension_numbers, pairs)):
        if spec.count(a) != 1 or spec.count(b) != 1:
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                            f"'{a}' and '{b}' exactly once, got {spec!r}")
        if len(spec) != len(set(spec)):
            raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate "
                            f"characters, got {spec!r}")
    spatial = [set(s) - set(p) for s, p in zip(dimension_numbers, pairs)]
    if not spatial[0] == spatial[1] == spatial[2]:
        raise TypeError(f"convolution dimension_numbers elements must each have the same set "
                        f"of spatial characters, got {tuple(dimension_numbers)}")

    def perm(spec, pair):
        sp = [i for i, c in enumerate(spec) if c not in pair]
        sp.sort(key=lambda i: rhs_s.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(sp)
    return tuple(perm(s, p) for s, p in zip(dimension_numbers, pairs))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """Canonical :class:`ConvDimensionNumbers` from None (``NCHW``/``OIHW``/``NCHW`` order), a
    triple of spec strings, or ConvDimensionNumbers.

    >>> lax.conv_dimension_numbers((1, 5, 5, 3), (2, 2, 3, 4), ("NHWC", "HWIO", "NHWC"))
    ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return ConvDimensionNumbers(*(tuple(int(d) for d in s) for s in dimension_numbers))
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got "
                        f"{len(lhs_shape)} and {len(rhs_shape)}")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (list, tuple)):
        raise TypeError(f"convolution dimension_numbers must be tuple/list or None, got "
                        f"{type(dimension_numbers).__name__}")
    if len(dimension_numbers) != 3:
        raise TypeError(f"convolution dimension_numbers list/tuple must be length 3, got "
                        f"{len(dimension_numbers)}")
    if not all(isinstance(s, str) for s in dimension_numbers):
        raise TypeError(f"convolution dimension_numbers elements must be strings, got "
                        f"{tuple(type(s).__name__ for s in dimension_numbers)}")
    for i, s in enumerate(dimension_numbers):
        if len(s) != len(lhs_shape):
            raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the ndim "
                            f"of lhs and rhs, got {len(s)} for lhs and rhs shapes "
                            f"{tuple(lhs_shape)} and {tuple(rhs_shape)}")
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """``(low, high)`` pads for ``'VALID'``, ``'SAME'`` (extra pad at the end) or
    ``'SAME_LOWER'`` (extra pad at the start).

    >>> lax.padtype_to_pads((5,), (2,), (2,), "SAME")
    [(0, 1)]
    """
    if not isinstance(padding, str):
        raise TypeError(f"padding must be a string, got {padding!r}")
    mode = padding.upper()
    if mode == "VALID":
        return [(0, 0)] * len(in_shape)
    if mode not in ("SAME", "SAME_LOWER"):
        raise RuntimeError(f"Unrecognized padding type: expected 'VALID', 'SAME', or "
                           f"'SAME_LOWER', got {padding}.")
    pads = []
    for d, w, s in zip(in_shape, window_shape, window_strides):
        d, w, s = as_dim(d), as_dim(w), as_dim(s)  # (sizes may be symbolic)
        out = -(-d // s)
        total = max_dim((out - 1) * s + w - d, 0)
        small, big = total // 2, total - total // 2
        pads.append((small, big) if mode == "SAME" else (big, small))
    return pads


def _int_tuple(vals, what, n):
    try:
        out = tuple(operator.index(v) for v in vals)
    except TypeError:
        raise TypeError(f"conv_general_dilated: {what} must be a sequence of integers, got "
                        f"{vals!r}") from None
    if len(out) != n:
        raise ValueError(f"conv_general_dilated: {what} needs one entry per spatial dimension "
                         f"({n}), got {vals!r}")
    return out


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None,
                         out_sharding=None):
    """General n-d convolution (cross-correlation, as XLA's Conv) with strides, padding
    (``'SAME'``, ``'SAME_LOWER'``, ``'VALID'`` or ``(low, high)`` pairs), lhs dilation
    (transposed convolution), rhs dilation (atrous) and feature/batch groups. ``precision``
    is validated as JAX does and changes nothing (CPU computes at full precision);
    ``preferred_element_type`` is the result's dtype (integers may become floats, never a
    narrower type).

    >>> x, k = fnp.ones((1, 4, 4, 1)), fnp.ones((3, 3, 1, 2))
    >>> lax.conv_general_dilated(x, k, (1, 1), "SAME",
    ...                          dimension_numbers=("NHWC", "HWIO", "NHWC"))[0, :, :, 0]
    Array([[4., 6., 6., 4.],
           [6., 9., 9., 6.],
           [6., 9., 9., 6.],
           [4., 6., 6., 4.]], dtype=float64)
    """
    check_no_out_sharding("conv_general_dilated", out_sharding)
    preset = canonicalize_precision(precision)
    if isinstance(preset, DotAlgorithmPreset) and preset is not DotAlgorithmPreset.DEFAULT:
        raise NotImplementedError(f"conv_general_dilated: precision={precision}: functrans "
                                  "computes convolutions in their operands' dtype only")
    lhs, rhs = match_weak(lhs, rhs, name="conv_general_dilated")
    la, ra = get_aval(lhs), get_aval(rhs)
    dnums = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    ns = la.ndim - 2
    lhs_dilation = (1,) * ns if lhs_dilation is None else _int_tuple(lhs_dilation,
                                                                    "lhs_dilation", ns)
    rhs_dilation = (1,) * ns if rhs_dilation is None else _int_tuple(rhs_dilation,
                                                                    "rhs_dilation", ns)
    window_strides = _int_tuple(window_strides, "window_strides", ns)
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dilation):
            raise ValueError("String padding is not implemented for transposed convolution "
                             "using this op. Please either exactly specify the required "
                             "padding or use conv_transpose.")
        lhs_sp = [la.shape[d] for d in dnums.lhs_spec[2:]]
        window = [dilate_dim(ra.shape[d], r) for d, r in zip(dnums.rhs_spec[2:], rhs_dilation)]
        padding = padtype_to_pads(lhs_sp, window, window_strides, padding)
    try:
        padding = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise ValueError(f"padding argument to conv_general_dilated should be a string or a "
                         f"sequence of (low, high) pairs, got {padding!r}") from None
    pet = la.dtype
    if preferred_element_type is not None:
        pet = dtypes.canonicalize_dtype(preferred_element_type,
                                        what="conv_general_dilated preferred_element_type")
        check_conv_preferred(la.dtype, pet)
    return P.conv_general_dilated_p.bind1(
        lhs, rhs, window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, dimension_numbers=tuple(tuple(s) for s in dnums),
        feature_group_count=operator.index(feature_group_count),
        batch_group_count=operator.index(batch_group_count), precision=None,
        preferred_element_type=np.dtype(pet))


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """:func:`conv_general_dilated` in ``NCHW``/``OIHW`` order without dilation.

    >>> lax.conv(fnp.ones((1, 1, 3, 3)), fnp.ones((1, 1, 2, 2)), (1, 1), "VALID")[0, 0]
    Array([[4., 4.],
           [4., 4.]], dtype=float64)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
    """:func:`conv_general_dilated` in ``NCHW``/``OIHW`` order.

    >>> lax.conv_with_general_padding(fnp.ones((1, 1, 3)), fnp.ones((1, 1, 2)), (1,),
    ...                               [(1, 0)], None, None)[0, 0]
    Array([1., 2., 2.], dtype=float64)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


def _conv_transpose_padding(k, s, padding):
    if padding == "SAME":
        total = k + s - 2
        before = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        before = k - 1
    elif isinstance(padding, tuple):
        pads = tuple(k - p - 1 for p in padding)
        before, total = pads[0], sum(pads)
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return before, total - before


_TRANSPOSE_DEFAULT_DNUMS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                            4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None,
                   use_consistent_padding=False):
    """Transposed ("fractionally strided") convolution, as JAX's: lhs dilated by
    ``strides``; ``'SAME'``/``'VALID'`` give the padding of the matching forward
    convolution; ``transpose_kernel=True`` flips the kernel spatially and swaps its feature
    dims (the gradient of ``conv``, Keras' Conv2DTranspose). Default dims: TensorFlow's
    ``NHWC``/``HWIO``.

    >>> lax.conv_transpose(fnp.ones((1, 2, 1)), fnp.ones((3, 1, 1)), (2,), "SAME")[0, :, 0]
    Array([1., 1., 2., 1.], dtype=float64)
    """
    la, ra = get_aval(lhs), get_aval(rhs)
    if la.ndim != ra.ndim or la.ndim < 2:
        raise ValueError(f"conv_transpose: lhs and rhs must have the same rank (at least 2), "
                         f"got {la.str_short()} and {ra.str_short()}")
    ns = la.ndim - 2
    if dimension_numbers is None:
        if la.ndim not in _TRANSPOSE_DEFAULT_DNUMS:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = _TRANSPOSE_DEFAULT_DNUMS[la.ndim]
    dn = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    k_sdims = [ra.shape[d] for d in dn.rhs_spec[2:]]
    rhs_dilation = (1,) * ns if rhs_dilation is None else tuple(rhs_dilation)
    strides = _int_tuple(strides, "strides", ns)
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        eff = [dilate_dim(k, r) for k, r in zip(k_sdims, rhs_dilation)]
        per_dim = [padding] * ns if isinstance(padding, str) else [tuple(p) for p in padding]
        pads = tuple(_conv_transpose_padding(k, s, p) for k, s, p in zip(eff, strides, per_dim))
    else:
        pads = padding
    if transpose_kernel:
        rhs = P.rev_p.bind1(rhs, dimensions=tuple(dn.rhs_spec[2:]))
        perm = list(range(ra.ndim))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = perm[dn.rhs_spec[1]], perm[dn.rhs_spec[0]]
        rhs = P.transpose_p.bind1(rhs, permutation=tuple(perm))
    return conv_general_dilated(lhs, rhs, (1,) * ns, pads, strides, rhs_dilation, dn,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """Output shape of a convolution in canonical (``NCHW``/``OIHW``) order.

    >>> lax.conv_shape_tuple((2, 3, 8, 8), (4, 3, 3, 3), (2, 2), "SAME")
    (2, 4, 4, 4)
    """
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                        f"{len(lhs_shape) - 2}, got {len(pads)}.")
    for d, (lo, hi) in zip(lhs_shape[2:], pads):
        if d + lo + hi < 0:
            raise ValueError(f"Negative padding is larger than the size of the corresponding "
                             f"dimension: got padding={pads} for lhs_shape[2:]={lhs_shape[2:]}")
    ident = tuple(range(len(lhs_shape)))
    ones = (1,) * (len(lhs_shape) - 2)
    return conv_output_shape(tuple(lhs_shape), tuple(rhs_shape), (ident, ident, ident),
                             tuple(strides), tuple(pads), ones, ones, batch_group_count)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """Output shape of :func:`conv_general_dilated` (without dilation) for given dims.

    >>> lax.conv_general_shape_tuple((1, 5, 5, 3), (2, 2, 3, 4), (1, 1), "VALID",
    ...                              ("NHWC", "HWIO", "NHWC"))
    (1, 4, 4, 4)
    """
    lp, rp, op = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple([lhs_shape[d] for d in lp], [rhs_shape[d] for d in rp],
                           window_strides, padding)
    return tuple(int(out[i]) for i in np.argsort(op))


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
    """Output shape of :func:`conv_transpose` for the given dims.

    >>> lax.conv_transpose_shape_tuple((1, 2, 1), (3, 1, 1), (2,), "SAME",
    ...                                ("NHC", "HIO", "NHC"))
    (1, 4, 1)
    """
    lp, rp, op = conv_general_permutations(dimension_numbers)
    lt, rt = [lhs_shape[d] for d in lp], [rhs_shape[d] for d in rp]
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(k, s, padding) for k, s in zip(rt[2:],
                                                                          window_strides)]
    totals = [sum(p) for p in padding]
    space = [(i - 1) * s - k + 2 + p for i, k, s, p in zip(lt[2:], rt[2:], window_strides,
                                                           totals)]
    out = [lt[0], rt[0]] + space
    return tuple(int(out[i]) for i in np.argsort(op))
