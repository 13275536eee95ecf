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
from .elementwise import (abs_p, acosh_p, add_p, check_dtypes, convert_element_type_p, div_p,
                          elementwise_shape, eq_p, mul_p, neg_p, rsqrt_p, select_n_p, sign_p,
                          sub_p)

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


# ---- JVP rules that differ for complex operands (the real rules stay as they are) --------------
def _for_complex(prim, complex_rule):
    """Route complex operands of ``prim`` to ``complex_rule(g, ans, x)``; others keep the
    existing JVP rule."""
    real_rule = jvp_rules[prim]

    def rule(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        if dtypes.kind(get_aval(x).dtype) != "c":
            return real_rule(primals, tangents, **params)
        ans = prim.bind1(x, **params)
        if is_zero(t):
            return [ans], [Zero(get_aval(ans))]
        return [ans], [complex_rule(t, ans, x)]
    jvp_rules[prim] = rule


def _scalar(value, like):
    return np.asarray(value, get_aval(like).dtype)[()]


def _nonzero_or_one(r):
    """``r`` with zeros replaced by one (guards the derivatives of |z| and sign at 0)."""
    return select_n_p.bind1(eq_p.bind1(r, _scalar(0, r)), r, _scalar(1, r))


def _to(x, dtype):
    return convert_element_type_p.bind1(x, new_dtype=dtype, weak_type=False)


def _abs_jvp(g, ans, x):
    # d|z| = re(conj(z) dz) / |z|, as in JAX (0 at z == 0).
    safe = _to(_nonzero_or_one(ans), get_aval(x).dtype)
    return real_p.bind1(mul_p.bind1(g, div_p.bind1(conj_p.bind1(x), safe)))


def _sign_jvp(g, ans, x):
    # sign(z) = z / |z| is smooth away from 0: d sign = (dz - s re(conj(s) dz)) / |z|.
    # (JAX gives a zero derivative here; the true one keeps finite differences honest.)
    d = get_aval(x).dtype
    r = abs_p.bind1(x)
    radial = _to(real_p.bind1(mul_p.bind1(conj_p.bind1(ans), g)), d)
    out = div_p.bind1(sub_p.bind1(g, mul_p.bind1(ans, radial)), _to(_nonzero_or_one(r), d))
    return select_n_p.bind1(eq_p.bind1(r, _scalar(0, r)), out, _scalar(0, out))


def _acosh_jvp(g, ans, x):
    # 1 / (sqrt(z - 1) sqrt(z + 1)): rsqrt((z - 1)(z + 1)) picks the wrong branch off the
    # real axis.
    one = _scalar(1, x)
    return mul_p.bind1(g, mul_p.bind1(rsqrt_p.bind1(sub_p.bind1(x, one)),
                                      rsqrt_p.bind1(add_p.bind1(x, one))))


_for_complex(abs_p, _abs_jvp)
_for_complex(sign_p, _sign_jvp)
_for_complex(acosh_p, _acosh_jvp)
