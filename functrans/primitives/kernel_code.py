"""A user's Numba kernel as a primitive's parameter: its code, static params and options,
and its compiled forms.

``KernelCode`` is what ``numba_call`` equations carry. It compiles the user's function with
Numba once per signature (operand and result dtypes and ranks: sizes are read from the
arrays, so new sizes compile nothing) in two forms that share the kernel's own compiled
code:

- the *eager* form, called from Python on NumPy arrays (``numba_call`` outside ``jit``);
- the *native* form, a wrapper taking data pointers and sizes that ``jit``'s native code
  generator links into the program's kernel and calls directly (Numba's calling
  convention: a status code, the user's exceptions reported through it).

Static params reach the kernel as keyword arguments whose values are compile-time
constants (Numba freezes them: a loop bound or a flag specializes the code; each distinct
value compiles once).

    >>> import numba
    >>> def add_one(x, out):
    ...     for i in range(x.shape[0]):
    ...         out[i] = x[i] + 1
    >>> code = KernelCode(add_one)
    >>> out = np.zeros(3)
    >>> code.eager([np.arange(3.0)], [out]) is None, out.tolist()
    (True, [1.0, 2.0, 3.0])
"""
from __future__ import annotations

import os
import threading

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

from functrans.core import user_code as user_functions

__all__ = ["KernelCode", "KernelTypingError", "numba_array_type"]

# Options that select the compiled code (not the kernel's static params).
_OPTIONS = ("zero_outputs", "boundscheck")


class KernelTypingError(TypeError):
    """Numba cannot compile a user's kernel for the operand and result types of a call."""


@intrinsic
def _readonly(typingctx, arr):
    """``arr`` typed read-only: inputs reach the kernel as they do eagerly (Numba types a
    NumPy array whose write flag is off as read-only), so both forms call one compiled
    kernel and a kernel writing to an input fails to compile, as it does eagerly."""
    sig = arr.copy(readonly=True)(arr)

    def codegen(context, builder, signature, args):
        return args[0]
    return sig, codegen


def numba_array_type(dtype, ndim: int, readonly: bool):
    """Numba's type of a C-contiguous NumPy array."""
    return types.Array(numba.from_dtype(np.dtype(dtype)), ndim, "C", readonly=readonly)


def _check_param(name, value):
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"numba_call: static param {name}={type(value).__name__} is not "
                        "hashable; static params are compile-time constants (numbers, "
                        "strings, tuples of them): pass arrays as operands") from None
    if isinstance(value, (np.ndarray, list, dict, set)):
        raise TypeError(f"numba_call: static param {name} must be a number, string or tuple, "
                        f"not {type(value).__name__} (pass arrays as operands)")


def _check_signature(fn):
    import inspect
    try:
        sig = inspect.signature(getattr(fn, "py_func", fn))
    except (TypeError, ValueError):
        return
    kwonly = [p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY]
    if kwonly:
        raise TypeError(f"numba_call: kernel '{getattr(fn, '__name__', fn)}' declares "
                        f"keyword-only parameters ({', '.join(kwonly)}), which Numba cannot "
                        "compile; declare static params as ordinary parameters after the "
                        "results (def kernel(x, out, nbins): ...)")


def _checked_launch(fn, launch, name):
    """``launch`` checked by the device backend that runs ``fn`` (None for a CPU kernel)."""
    check = user_functions.device_kernels.checked_launch
    if check is not None:
        return check(fn, launch, name)
    if launch is not None:
        raise TypeError(f"numba_call: launch= is for CUDA kernels (numba.cuda.jit), and "
                        f"functrans's cuda backend is not loaded (kernel '{name}')")
    return None


def _cacheable(fn) -> bool:
    import inspect
    try:
        path = inspect.getsourcefile(fn)
    except TypeError:
        return False
    return bool(path) and os.path.exists(path) and fn.__name__ != "<lambda>" and \
        fn.__closure__ is None


class KernelCode:
    """A user's kernel function (plain Python or a Numba dispatcher), its static ``params``
    and options; equal when they would compile to the same code."""

    def __init__(self, fn, params=None, *, zero_outputs=True, boundscheck=False, launch=None,
                 sharding_rule=None, name=None):
        if not callable(fn):
            raise TypeError(f"numba_call: expected a kernel function, got {type(fn).__name__}")
        params = dict(params or {})
        for k, v in params.items():
            _check_param(k, v)
        _check_signature(fn)
        self.fn = fn
        self.name = name or getattr(fn, "__name__", type(fn).__name__)
        self.params = tuple(sorted(params.items()))
        self.zero_outputs = bool(zero_outputs)
        self.boundscheck = bool(boundscheck)
        # A CUDA kernel's launch configuration: (blocks, threads) or a function of the
        # operands' shapes returning it (transforms/cuda/user_kernels.py runs such kernels).
        self.launch = launch = _checked_launch(fn, launch, self.name)
        # How partitioned jit may split the call ("i j, j -> i"; None: replicated).
        self.sharding_rule = sharding_rule
        self.key = user_functions.fingerprint(fn)
        self._ident = (self.key, self.params, self.zero_outputs, self.boundscheck, sharding_rule,
                       launch if launch is None or isinstance(launch, tuple) else id(launch))
        self._lock = threading.Lock()
        self._eager: dict = {}  # signature -> callable on arrays
        self._native: dict = {}  # signature -> harvested symbol
        self._fast: dict = {}  # (dtype, ndim) of the eager call's arrays -> its callable

    @property
    def parallel(self) -> bool:
        """Whether the kernel runs loops on Numba's thread pool (``njit(parallel=True)``)."""
        return bool(getattr(self.fn, "targetoptions", {}).get("parallel"))

    def __eq__(self, other):
        return type(other) is type(self) and other._ident == self._ident

    def __hash__(self):
        return hash(self._ident)

    def __repr__(self):
        return self.name

    # -- compiling ----------------------------------------------------------------------
    def dispatcher(self):
        """The kernel as a Numba dispatcher (compiled lazily, per signature)."""
        d = getattr(self, "_dispatcher", None)
        if d is None:
            fn = self.fn
            if isinstance(fn, numba.core.registry.CPUDispatcher):
                opts = dict(fn.targetoptions)
                if self.boundscheck and not opts.get("boundscheck"):
                    opts["boundscheck"] = True
                    fn = numba.njit(**opts)(fn.py_func)
                d = fn
            else:
                # Numba's own disk cache keeps the kernel's compiled code between processes
                # when it has a source file to key it by (not for lambdas or exec'd code).
                # (Not with bounds checks: Numba's cache index does not tell the two
                # compilations apart, so one would load the other's code.)
                d = numba.njit(boundscheck=self.boundscheck or None,
                               cache=_cacheable(fn) and not self.boundscheck)(fn)
            self._dispatcher = d
        return d

    def _call_source(self, args, call_args):
        """Source of a function of ``args`` calling the kernel on ``call_args`` with the
        static params as keyword arguments (module globals: constants to Numba)."""
        kw = "".join(f", {k}=P_{k}" for k, _ in self.params)
        return f"def call({', '.join(args)}):\n    kernel({', '.join(call_args)}{kw})\n"

    def _namespace(self):
        ns = {"kernel": self.dispatcher(), "carray": numba.carray, "readonly": _readonly}
        ns.update({f"P_{k}": v for k, v in self.params})
        return ns

    def _signature(self, in_avals, out_avals):
        return (tuple((np.dtype(a.dtype).str, len(a.shape)) for a in in_avals),
                tuple((np.dtype(a.dtype).str, len(a.shape)) for a in out_avals))

    def typed(self, in_avals, out_avals, where=None):
        """Compile the kernel for these operand and result types now (once per signature);
        a kernel Numba cannot type raises :class:`KernelTypingError` naming the kernel, the
        types and ``where`` (the user's line). A CUDA kernel is compiled by numba-cuda when
        it is first launched."""
        if self.launch is not None:
            return
        self._eager_callable(in_avals, out_avals, where)

    def eager_callable(self, in_avals, out_avals):
        """The compiled eager form for these types (a Numba dispatcher taking operands then
        results; generated Numba code calls it too)."""
        return self._eager_callable(in_avals, out_avals)

    def _eager_callable(self, in_avals, out_avals, where=None):
        sig = self._signature(in_avals, out_avals)
        fn = self._eager.get(sig)
        if fn is not None:
            return fn
        with self._lock:
            fn = self._eager.get(sig)
            if fn is not None:
                return fn
            arg_types = [numba_array_type(a.dtype, len(a.shape), True) for a in in_avals] + \
                        [numba_array_type(a.dtype, len(a.shape), False) for a in out_avals]
            if self.params:
                n_in, n_out = len(in_avals), len(out_avals)
                names = [f"a{k}" for k in range(n_in)] + [f"o{k}" for k in range(n_out)]
                ns = self._namespace()
                exec(compile(self._call_source(names, names),
                             f"<numba_call of {self.name}>", "exec"), ns)
                fn = numba.njit(ns["call"])
            else:
                fn = self.dispatcher()
            try:
                fn.compile(tuple(arg_types))
            except Exception as e:  # Numba's typing and lowering errors
                raise KernelTypingError(self._typing_message(e, in_avals, out_avals, where)) \
                    from None
            self._eager[sig] = fn
            return fn

    def _typing_message(self, err, in_avals, out_avals, where):
        ins = ", ".join(a.str_short() for a in in_avals) or "no operands"
        outs = ", ".join(a.str_short() for a in out_avals)
        lines = [ln for ln in str(err).splitlines() if ln.strip()]
        # Numba's report: keep what it says went wrong, not the stack of frames it walked.
        detail = "\n".join("    " + ln for ln in lines[:12])
        where = where() if callable(where) else where
        loc = f" (called from {where})" if where else ""
        params = "".join(f", {k}={v!r}" for k, v in self.params)
        return (f"numba_call: Numba cannot compile kernel '{self.name}' for operands "
                f"({ins}) and results ({outs}){params}{loc}; check that the kernel's "
                f"arguments are its operands followed by its results, and that "
                f"result_shape_dtypes matches what it writes. Numba said:\n{detail}")

    def eager_fn(self, ins, outs, where=None):
        """The compiled eager form for NumPy arrays ``ins`` and ``outs`` (read-only operands
        are what it is compiled for: ``ins`` must not be writeable). ``where()`` names the
        user's line if compiling fails."""
        key = tuple((a.dtype, a.ndim) for a in ins) + (None,) + \
            tuple((o.dtype, o.ndim) for o in outs)
        fn = self._fast.get(key)
        if fn is None:
            from functrans.core.avals import ShapedArray
            fn = self._fast[key] = self._eager_callable(
                [ShapedArray(a.shape, a.dtype) for a in ins],
                [ShapedArray(o.shape, o.dtype) for o in outs], where)
        return fn

    def eager(self, ins, outs):
        """Run on NumPy arrays: ``ins`` (C-contiguous, read-only or not), ``outs`` written."""
        from functrans.core.avals import ShapedArray
        fn = self._eager_callable([ShapedArray(a.shape, a.dtype) for a in ins],
                                  [ShapedArray(o.shape, o.dtype) for o in outs])
        ro = []
        for a in ins:
            if a.flags.writeable:
                a = a.view()
                a.flags.writeable = False
            ro.append(a)
        return fn(*ro, *outs)

    def native(self, in_avals, out_avals):
        """``(ident, compile)`` of the native form for these types: a function in Numba's
        calling convention, ``i32 f(ptr ret, ptr excinfo, [ptr data, i64 sizes...] per
        operand, then per result)``. ``ident`` is what its code depends on (besides the
        target machine); ``compile()`` returns ``(Numba's name for it, its LLVM IR)``,
        called once per machine (the IR is cached on disk)."""
        sig = self._signature(in_avals, out_avals)
        hit = self._native.get(sig)
        if hit is not None:
            return hit
        self.typed(in_avals, out_avals)
        args, call_args, arg_types, lines = [], [], [], []
        ns = self._namespace()
        for role, avals in (("a", in_avals), ("o", out_avals)):
            for k, a in enumerate(avals):
                p, dims = f"p{role}{k}", [f"d{role}{k}_{j}" for j in range(len(a.shape))]
                args += [p] + dims
                arg_types += [types.voidptr] + [types.int64] * len(dims)
                ns[f"T{role}{k}"] = np.dtype(a.dtype).type
                shape = "(" + "".join(d + ", " for d in dims) + ")"
                arr = f"carray({p}, {shape}, T{role}{k})"
                lines.append(f"    {role}{k} = {'readonly(' + arr + ')' if role == 'a' else arr}")
                call_args.append(f"{role}{k}")
        kw = "".join(f", {k}=P_{k}" for k, _ in self.params)
        source = (f"def call({', '.join(args)}):\n" + "\n".join(lines) +
                  f"\n    kernel({', '.join(call_args)}{kw})\n")
        # What the compiled form depends on (the native backend adds the target machine).
        ident = "\0".join(("v2", self.key, repr(self.params), str(self.boundscheck), repr(sig),
                           source))
        nb_sig = types.none(*arg_types)

        def compile_():
            exec(compile(source, f"<numba_call of {self.name}>", "exec"), ns)
            d = numba.njit(nb_sig, no_cpython_wrapper=True, no_cfunc_wrapper=True)(ns["call"])
            cres = d.overloads[nb_sig.args]
            return cres.fndesc.llvm_func_name, cres.library.get_llvm_str()

        hit = self._native[sig] = (ident, compile_)
        return hit
