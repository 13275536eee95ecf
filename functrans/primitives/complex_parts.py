"""Complex numbers' parts: ``real``, ``imag``, ``conj`` and ``complex`` (``lax.complex``).

Each is elementwise (batching and lowering come with the trait) and linear over the reals.
Their transposes follow JAX's convention, a plain (non-conjugating) transpose, so that
``grad`` of a real-valued function of ``z = x + iy`` is ``df/dx - i df/dy``::

    >>> real_p.bind1(np.complex64(1 + 2j))
    Array(1., dtype=float32)
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.avals import ShapedArray
from ..core.trace import Primitive, get_aval
from ..transforms.autodiff.rules import (Zero, deflinear, is_undefined, is_zero, jvp_rules,
                                         unbroadcast)
from .elementwise import (abs_p, check_dtypes, convert_element_type_p, div_p, elementwise_shape,
                          eq_p, mul_p, neg_p, select_n_p)

__all__ = ["real_p", "imag_p", "conj_p", "complex_p"]


def _part(name, fn):
    def abstract_eval(x):
        d = check_dtypes(name, [x], "c")
        return [ShapedArray(x.shape, dtypes.real_dtype(d), x.weak_type)]
    return Primitive(name, impl=lambda x: [np.asarray(fn(x))], abstract_eval=abstract_eval,
                     traits={"elementwise"})


real_p = _part("real", np.real)
imag_p = _part("imag", np.imag)


def _conj_abstract_eval(x):
    check_dtypes("conj", [x], "c")
    return [x]


conj_p = Primitive("conj", impl=lambda x: [np.conjugate(x)], abstract_eval=_conj_abstract_eval,
                   traits={"elementwise"})


def _complex_abstract_eval(x, y):
    shape = elementwise_shape("complex", [x, y])
    d = check_dtypes("complex", [x, y], "f")
    if d == dtypes.float16:
        raise TypeError("complex requires float32 or float64 parts (there is no complex32), "
                        f"got {x.str_short()}, {y.str_short()}")
    return [ShapedArray(shape, dtypes.complex_dtype(d), x.weak_type and y.weak_type)]


def _complex_impl(x, y):
    out = np.empty(np.broadcast_shapes(np.shape(x), np.shape(y)), dtypes.complex_dtype(x.dtype))
    out.real, out.imag = x, y
    return [out]


complex_p = Primitive("complex", impl=_complex_impl, abstract_eval=_complex_abstract_eval,
                      traits={"elementwise"})


def _zeros_like_aval(aval):
    return np.zeros((), aval.dtype)[()]


def _real_transpose(cts, x):
    ct = cts[0]
    if is_zero(ct):
        return [Zero(x.aval)]
    return [complex_p.bind1(ct, _zeros_like_aval(get_aval(ct)))]


def _imag_transpose(cts, x):
    ct = cts[0]
    if is_zero(ct):
        return [Zero(x.aval)]
    return [complex_p.bind1(_zeros_like_aval(get_aval(ct)), neg_p.bind1(ct))]


def _conj_transpose(cts, x):
    ct = cts[0]
    return [Zero(x.aval) if is_zero(ct) else conj_p.bind1(ct)]


def _complex_transpose(cts, x, y):
    ct = cts[0]
    out = []
    for operand, part in ((x, lambda c: real_p.bind1(c)),
                          (y, lambda c: neg_p.bind1(imag_p.bind1(c)))):
        if not is_undefined(operand):
            out.append(None)
        elif is_zero(ct):
            out.append(Zero(operand.aval))
        else:
            out.append(unbroadcast(part(ct), operand.aval))
    return out


deflinear(real_p, _real_transpose)
deflinear(imag_p, _imag_transpose)
deflinear(conj_p, _conj_transpose)
deflinear(complex_p, _complex_transpose)


# |z| of a complex z: d|z| = re(conj(z) dz) / |z| (JAX's rule; 0 where z == 0).
_real_abs_jvp = jvp_rules[abs_p]


def _abs_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    if get_aval(x).dtype.kind != "c":
        return _real_abs_jvp(primals, tangents)
    ans = abs_p.bind1(x)
    if is_zero(t):
        return [ans], [Zero(get_aval(ans))]
    d = get_aval(x).dtype
    one = np.ones((), get_aval(ans).dtype)[()]
    safe = select_n_p.bind1(eq_p.bind1(ans, np.zeros((), get_aval(ans).dtype)[()]), ans, one)
    safe_c = convert_element_type_p.bind1(safe, new_dtype=d, weak_type=False)
    return [ans], [real_p.bind1(mul_p.bind1(t, div_p.bind1(conj_p.bind1(x), safe_c)))]


jvp_rules[abs_p] = _abs_jvp
