"""``numba_vectorize``: a user's scalar function as an elementwise primitive.

The function is compiled by Numba for the operands' dtypes (its result dtype is what Numba
infers). Being elementwise, it batches under ``vmap`` by construction and, under ``jit``,
fuses into the generated loops: the native backend links Numba's code for it into the loop
body, where LLVM inlines and vectorizes it like any other operation (its scalar rule is
``transforms/lowering/scalar.py``'s ``numba_vectorize``). Its derivative comes from one
function per operand giving the partial derivative (another scalar kernel, or functrans
code), so ``grad`` transposes the product of partials and tangents.

    >>> import math
    >>> code = ScalarCode(lambda x: math.exp(-x * x))
    >>> numba_vectorize_p.bind1(np.array([0.0, 1.0]), code=code).round(4)
    Array([1.    , 0.3679], dtype=float64)
"""
from __future__ import annotations

import threading

import numba
import numpy as np
from numba.np.numpy_support import as_dtype

from ..core.avals import ShapedArray
from ..core.trace import Primitive, get_aval
from ..transforms import ops
from ..transforms.autodiff.jvp import Zero, jvp_rules
from ..core import user_code as user_functions
from .elementwise import elementwise_shape, mul_p

__all__ = ["numba_vectorize_p", "ScalarCode", "ScalarKernelError"]


class ScalarKernelError(TypeError):
    """Numba cannot compile a scalar kernel for its operands' dtypes."""


class ScalarCode:
    """A user's scalar function and its partial derivatives (``derivatives[i]`` maps the
    operands to d f / d operand_i; None where none was given)."""

    def __init__(self, fn, derivatives=None, name=None):
        self.fn = fn
        self.name = name or getattr(fn, "__name__", type(fn).__name__)
        self.derivatives = tuple(derivatives) if derivatives is not None else None
        self.key = user_functions.fingerprint(fn)
        # Generated code finds the compiled function by this key (see user_functions).
        self.lookup_key = user_functions.register(self.dispatcher(), "sv_" + self.key)
        self._ident = (self.key, tuple(id(d) for d in self.derivatives or ()))
        self._out: dict = {}
        self._ufuncs: dict = {}
        self._lock = threading.Lock()

    def __eq__(self, other):
        return type(other) is ScalarCode and other._ident == self._ident

    def __hash__(self):
        return hash(self._ident)

    def __repr__(self):
        return self.name

    def dispatcher(self):
        """The function compiled by Numba with NumPy's error model (as a ufunc computes:
        division by zero gives inf or nan, not an exception, so loops stay vectorizable)."""
        d = getattr(self, "_dispatcher", None)
        if d is None:
            fn = getattr(self.fn, "py_func", self.fn)
            opts = dict(getattr(self.fn, "targetoptions", {}))
            opts.setdefault("error_model", "numpy")
            opts.pop("nopython", None)
            d = self._dispatcher = numba.njit(**opts)(fn)
        return d

    def out_dtype(self, dtypes_, where=None) -> np.dtype:
        """The result dtype for operands of ``dtypes_`` (compiling for them once): what Numba
        infers, in the operands' precision when both are floating."""
        key = tuple(np.dtype(d).str for d in dtypes_)
        hit = self._out.get(key)
        if hit is not None:
            return hit
        with self._lock:
            sig = tuple(numba.from_dtype(np.dtype(d)) for d in dtypes_)
            try:
                self.dispatcher().compile(sig)
                ret = self.dispatcher().overloads[sig].signature.return_type
                out = as_dtype(ret)
            except Exception as e:
                lines = [ln for ln in str(e).splitlines() if ln.strip()][:10]
                loc = f" (called from {where})" if where else ""
                raise ScalarKernelError(
                    f"numba_vectorize: Numba cannot compile scalar kernel '{self.name}' for "
                    f"operands ({', '.join(str(np.dtype(d)) for d in dtypes_)}){loc}; it must "
                    "take and return scalars (numbers, not arrays). Numba said:\n"
                    + "\n".join("    " + ln for ln in lines)) from None
            if out.kind not in "biufc":
                raise ScalarKernelError(f"numba_vectorize: scalar kernel '{self.name}' returns "
                                        f"{ret} for operands {key}; it must return a number")
            # Numba computes Python float constants in float64: a float32 kernel's
            # ``max(x, 0.0)`` would widen the result. Floating results keep the operands'
            # precision, as functrans's own operations do.
            ins = np.result_type(*[np.dtype(d) for d in dtypes_])
            if out.kind in "fc" and ins.kind in "fc":
                out = np.result_type(ins, np.complex64) if out.kind == "c" else ins
            self._out[key] = out
            return out

    def ufunc(self, dtypes_, out_dtype):
        """A NumPy ufunc of the function for these operand dtypes (eager calls)."""
        key = tuple(np.dtype(d).str for d in dtypes_)
        u = self._ufuncs.get(key)
        if u is None:
            sig = numba.from_dtype(out_dtype)(*[numba.from_dtype(np.dtype(d)) for d in dtypes_])
            u = self._ufuncs[key] = numba.vectorize([sig])(getattr(self.fn, "py_func", self.fn))
        return u


def _impl(*args, code):
    out = code.out_dtype([a.dtype for a in args])
    return [np.asarray(code.ufunc([a.dtype for a in args], out)(*args), out)]


def _abstract_eval(*avals, code):
    shape = elementwise_shape(f"numba_vectorize ({code.name})", avals)
    out = code.out_dtype([a.dtype for a in avals])
    return [ShapedArray(shape, out)]


numba_vectorize_p = Primitive("numba_vectorize", impl=_impl, abstract_eval=_abstract_eval,
                              traits={"elementwise"})


def _jvp(primals, tangents, *, code):
    ans = numba_vectorize_p.bind1(*primals, code=code)
    aval = get_aval(ans)
    if all(type(t) is Zero for t in tangents):
        return [ans], [Zero(aval)]
    if code.derivatives is None:
        raise TypeError(
            f"numba_vectorize: scalar kernel '{code.name}' has no derivative, so it cannot be "
            "differentiated (grad, jvp, jacfwd...); give one partial derivative per operand: "
            f"ft.numba_vectorize({code.name}, derivatives=(d{code.name}_dx, ...)), each a "
            "scalar kernel (numba_vectorize) or a functrans function of the operands")
    derivs = code.derivatives
    if len(derivs) > len(primals):
        raise TypeError(f"numba_vectorize: scalar kernel '{code.name}' has {len(derivs)} "
                        f"derivatives for {len(primals)} operands; give one per operand")
    # Fewer derivatives than operands: the last operands have none (zip alone would drop
    # their tangents and give a silently zero derivative).
    derivs = derivs + (None,) * (len(primals) - len(derivs))
    out = None
    for k, (d, t) in enumerate(zip(derivs, tangents)):
        if type(t) is Zero:
            continue
        if d is None:
            raise TypeError(f"numba_vectorize: scalar kernel '{code.name}' has no derivative "
                            f"for operand {k}")
        slope = d(*primals)
        if get_aval(slope).dtype != aval.dtype:
            slope = ops.convert(slope, aval.dtype)
        if get_aval(t).dtype != aval.dtype:
            t = ops.convert(t, aval.dtype)
        part = mul_p.bind1(t, slope)
        if get_aval(part).shape != aval.shape:  # a rank-0 operand's tangent
            part = ops.broadcast(part, aval.shape, ())
        out = part if out is None else ops.add_any(out, part)
    return [ans], [Zero(aval) if out is None else out]


jvp_rules[numba_vectorize_p] = _jvp
