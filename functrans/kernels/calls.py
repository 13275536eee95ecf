"""``numba_call`` and ``numba_kernel``: users' own array kernels, written in Python and
compiled by Numba, as steps of functrans programs.

    >>> def cumulative(x, out):
    ...     acc = 0.0
    ...     for i in range(x.shape[0]):
    ...         acc += x[i]
    ...         out[i] = acc
    >>> x = fnp.arange(4.0, dtype="float32")
    >>> ft.jit(lambda v: ft.numba_call(cumulative, ft.ShapeDtypeStruct(v.shape, v.dtype), v))(x)
    Array([0., 1., 3., 6.], dtype=float32)
"""
from __future__ import annotations

import functools
import threading
import weakref

import numpy as np

from functrans import numpy as fnp
from functrans.core.tree import tree_unflatten
from functrans.core.ir import source_info
from functrans.core.array import Array
from functrans.core.trace import EVAL_TRACE, _state, get_aval
from functrans.kernels.callbacks import result_avals
from functrans.primitives.numba_call import (VMAP_METHODS, KernelCode, kernel_failure,
                                            numba_call_p)
from functrans.transforms.autodiff import custom_jvp, custom_vjp
from functrans.transforms.partition.rules import parse_sharding_rule

__all__ = ["numba_call", "numba_kernel", "NumbaKernel"]

_RESERVED = ("vmap_method", "batched_kernel", "zero_outputs", "boundscheck", "launch",
             "sharding_rule")


def _result_avals(result_shape_dtypes):
    avals, tree = result_avals("numba_call", result_shape_dtypes)
    if not avals:
        raise ValueError("numba_call: result_shape_dtypes declares no results; a kernel "
                         "returns what it writes into its result arrays")
    return avals, tree


# kernel function -> {(params, options): KernelCode}. A KernelCode holds the kernel's
# compiled forms, so each call making a new one compiled the kernel again with Numba at every
# eager call and every trace (a static param's wrapper is new Numba code each time); kept per
# function, a signature compiles once per process, as documented.
_codes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_codes_lock = threading.Lock()


def _typed_key(v):
    # 1, 1.0 and True are equal and hash alike but are different constants to Numba.
    if isinstance(v, tuple):
        return (tuple, tuple(_typed_key(x) for x in v))
    return (type(v), v)


def _code(kernel, params, zero_outputs, boundscheck, launch, sharding_rule=None):
    if isinstance(kernel, KernelCode):
        return kernel
    try:
        key = (tuple(sorted((k, _typed_key(v)) for k, v in params.items())),
               bool(zero_outputs), bool(boundscheck), sharding_rule,
               launch if launch is None or isinstance(launch, tuple) else id(launch))
        hash(key)
        with _codes_lock:
            code = _codes.get(kernel, {}).get(key)
    except TypeError:  # unhashable params (KernelCode says so) or a kernel without weakrefs
        key = code = None
    if code is None:
        code = KernelCode(kernel, params, zero_outputs=zero_outputs, boundscheck=boundscheck,
                          launch=launch, sharding_rule=sharding_rule)
        if key is not None:
            with _codes_lock:
                try:
                    _codes.setdefault(kernel, {})[key] = code
                except TypeError:
                    pass
    return code


def numba_call(kernel, result_shape_dtypes, *operands, vmap_method=None, batched_kernel=None,
               zero_outputs=True, boundscheck=False, launch=None, sharding_rule=None,
               **params):
    """Call ``kernel(*operands, *results, **params)``, a Python function compiled by Numba
    that writes its results in place, and return the results.

    ``result_shape_dtypes`` is a ``ShapeDtypeStruct`` or a pytree of them; the results are
    allocated with those shapes and dtypes, filled with zeros first (so a histogram can
    accumulate; ``zero_outputs=False`` skips the fill when the kernel writes every element).
    ``kernel`` is a plain Python function (compiled with ``numba.njit``) or a Numba
    dispatcher (its options kept); it is compiled once per signature (operand and result
    dtypes and ranks, static params): sizes are read from the arrays, so new sizes compile
    nothing. Operands reach it as read-only C-contiguous arrays.

    ``params`` are static: they reach the kernel as keyword arguments whose values are
    compile-time constants to Numba (numbers, strings, tuples); each distinct value compiles
    once. Pass arrays as operands.

    Under ``jit`` the kernel is a step of the compiled program, called from it directly (no
    Python per call). Under ``vmap``, ``vmap_method`` says how it batches, as JAX's
    ``pure_callback``: ``"sequential"`` loops over the batch (a compiled loop under jit),
    ``"expand_dims"`` calls it once with batched operands' batch axis in front and a new
    axis of size 1 on the others, ``"broadcast_all"`` with every operand broadcast to the
    batch; ``batched_kernel=`` gives a kernel of its own for batches (called with every
    operand and result batched in front). Without any, vmap raises. ``boundscheck=True``
    compiles the kernel with bounds checks (an out-of-bounds index raises ``IndexError``).
    Differentiating it needs rules: see :func:`numba_kernel`.

    In ``jit`` over sharded arguments (a mesh of several devices) the call runs replicated
    (every operand gathered), unless ``sharding_rule`` declares which dimensions are
    independent, in JAX's ``custom_partitioning`` notation: ``"i j, j -> i"`` names each
    operand's and result's dimensions; a dimension a result carries may then be split (each
    shard runs the kernel on its blocks), and those only operands carry are gathered.

    ``kernel`` may be a ``numba.cuda.jit`` kernel; then ``launch=`` is its launch
    configuration, ``(blocks, threads_per_block)`` (each an int or a tuple of 1-3 ints) or a
    function called with the operands' shapes (one tuple each) returning that pair, and it is
    launched as ``kernel[blocks, threads_per_block](*operands, *results, *params)``: a launch
    takes no keywords, so the static params follow the results positionally in the order the
    kernel's signature declares them (matched by name). Eagerly it runs on the CUDA device,
    operands copied there and results back; in ``jit(..., backend="cuda")`` programs it is a
    step launched on the device buffers of the steps before it, its results zero-filled and
    kept on the device. The cpu backend's ``jit`` refuses it; a CPU kernel in a CUDA program
    runs on the host between the device steps. See ``transforms/cuda/user_kernels.py``.

        >>> def scale(x, out, factor):
        ...     for i in range(x.shape[0]):
        ...         out[i] = factor * x[i]
        >>> ft.numba_call(scale, ft.ShapeDtypeStruct((3,), "float32"),
        ...               fnp.ones(3, "float32"), factor=3.0)
        Array([3., 3., 3.], dtype=float32)
    """
    if _state.trace is EVAL_TRACE and launch is None and batched_kernel is None:
        # An eager call seen before (same kernel, declaration object and static params):
        # straight to the compiled kernel.
        try:
            plan = _eager_plans.get((kernel, id(result_shape_dtypes), zero_outputs,
                                     boundscheck, sharding_rule, tuple(params.items())))
        except TypeError:  # unhashable params: the general path says why
            plan = None
        if plan is not None and plan[0] is result_shape_dtypes and \
                all(type(a) is Array for a in operands):
            return tree_unflatten(plan[3], _eager_call(plan[1], operands, plan[2]))
    if vmap_method is not None and vmap_method not in VMAP_METHODS:
        raise ValueError(f"numba_call: vmap_method must be one of "
                         f"{', '.join(map(repr, VMAP_METHODS))} or None, got {vmap_method!r}")
    code = _code(kernel, params, zero_outputs, boundscheck, launch, sharding_rule)
    batched = None if batched_kernel is None else \
        _code(batched_kernel, params, zero_outputs, boundscheck, launch)
    out_avals, out_tree = _result_avals(result_shape_dtypes)
    args = [x if hasattr(x, "aval") else fnp.asarray(x) for x in operands]
    if sharding_rule is not None:
        try:
            parse_sharding_rule(sharding_rule, len(args), len(out_avals),
                                [len(get_aval(a).shape) for a in args] +
                                [len(a.shape) for a in out_avals])
        except ValueError as e:
            raise ValueError(f"numba_call ({code.name}): {e}") from None
    if code.launch is None and _state.trace is EVAL_TRACE and \
            all(type(a) is Array for a in args):
        # Eagerly, on concrete arrays: the compiled kernel called at once (no primitive
        # dispatch), so a call costs little more than calling the Numba function.
        outs = _eager_call(code, args, out_avals)
        if batched is None:
            if len(_eager_plans) >= 256:
                _eager_plans.clear()
            _eager_plans[(kernel, id(result_shape_dtypes), zero_outputs, boundscheck,
                          sharding_rule, tuple(params.items()))] = \
                (result_shape_dtypes, code, out_avals, out_tree)
        return tree_unflatten(out_tree, outs)
    if code.launch is None:
        code.typed([get_aval(a) for a in args], out_avals, _where)
    outs = numba_call_p.bind_all(*args, kernel=code, out_avals=tuple(out_avals),
                                 vmap_method=vmap_method, loops=(),
                                 looped=tuple(() for _ in args), batched_kernel=batched)
    return tree_unflatten(out_tree, outs)


# (kernel, id of the result declaration, options, params) -> (the declaration, its
# KernelCode, result avals, result tree): the declaration is kept, so its id is not reused.
_eager_plans: dict = {}


def _where():
    src = source_info()
    return src and str(src)


def _eager_call(code, args, out_avals):
    ins = [a._value for a in args]
    outs = [(np.zeros if code.zero_outputs else np.empty)(a.shape, a.dtype) for a in out_avals]
    fn = code.eager_fn(ins, outs, _where)
    try:
        fn(*ins, *outs)
    except Exception as e:
        raise kernel_failure(code, e, _where()) from e
    return [Array._wrap(o) for o in outs]


class NumbaKernel:
    """An array kernel as a function of its operands (made by :func:`numba_kernel`)."""

    def __init__(self, fn, result, *, vmap_method=None, batched_kernel=None, jvp=None,
                 vjp=None, zero_outputs=True, boundscheck=False, launch=None,
                 sharding_rule=None):
        if jvp is not None and vjp is not None:
            raise ValueError(f"numba_kernel ({getattr(fn, '__name__', fn)}): give jvp= or "
                             "vjp=, not both")
        if vjp is not None and not (isinstance(vjp, tuple) and len(vjp) == 2):
            raise TypeError("numba_kernel: vjp= must be a pair (fwd, bwd), as "
                            "custom_vjp.defvjp takes")
        # First: it copies the kernel's attributes (a simulated CUDA kernel's own ``fn``).
        functools.update_wrapper(self, fn)
        self.fn, self.result = fn, result
        self.options = dict(vmap_method=vmap_method, batched_kernel=batched_kernel,
                            zero_outputs=zero_outputs, boundscheck=boundscheck, launch=launch,
                            sharding_rule=sharding_rule)
        self.jvp, self.vjp = jvp, vjp

    def results(self, *operands, **params):
        """The declared results for these operands (``ShapeDtypeStruct`` pytree)."""
        if callable(self.result) and not hasattr(self.result, "shape"):
            return self.result(*operands, **params)
        return self.result

    def _plain(self, operands, params):
        return numba_call(self.fn, self.results(*operands, **params), *operands,
                          **self.options, **params)

    @functools.lru_cache(maxsize=256)
    def _with_rules(self, params):
        kw = dict(params)

        def call(*operands):
            return self._plain(operands, kw)
        call.__name__ = call.__qualname__ = self.__name__
        if self.jvp is not None:
            f = custom_jvp(call)
            f.defjvp(lambda primals, tangents: self.jvp(primals, tangents, **kw))
            return f
        fwd, bwd = self.vjp
        f = custom_vjp(call)
        f.defvjp(lambda *ops: fwd(*ops, **kw), lambda res, ct: bwd(res, ct, **kw))
        return f

    def __call__(self, *operands, **params):
        bad = [k for k in params if k in _RESERVED]
        if bad:
            raise TypeError(f"numba_kernel ({self.__name__}): {bad[0]}= is set when the "
                            "kernel is declared, not at the call")
        if self.jvp is None and self.vjp is None:
            return self._plain(operands, params)
        try:
            key = tuple(sorted(params.items()))
            hash(key)
        except TypeError:
            raise TypeError(f"numba_kernel ({self.__name__}): static params must be "
                            "hashable (numbers, strings, tuples)") from None
        return self._with_rules(key)(*operands)

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other


def numba_kernel(fn=None, *, result, vmap_method=None, batched_kernel=None, jvp=None,
                 vjp=None, zero_outputs=True, boundscheck=False, launch=None,
                 sharding_rule=None):
    """Declare an array kernel once; call it like a function of its operands.

    ``result`` is a ``ShapeDtypeStruct`` pytree or a function of the operands (and static
    params) returning one. ``jvp(primals, tangents, **params) -> (out, out_tangent)``, or
    ``vjp=(fwd, bwd)`` with ``fwd(*operands, **params) -> (out, residuals)`` and
    ``bwd(residuals, cotangent, **params) -> operand cotangents``, are its derivative rules
    (``custom_jvp``/``custom_vjp``), written as functrans code or other kernels. The other
    options are :func:`numba_call`'s (they apply to this kernel's calls; kernels the rules
    call take their own, e.g. a ``vmap_method`` so that ``vmap(grad)`` batches them too).
    Usable as a decorator::

        >>> @ft.numba_kernel(result=lambda x: ft.ShapeDtypeStruct(x.shape, x.dtype),
        ...                  jvp=lambda p, t: (square(*p), 2 * p[0] * t[0]))
        ... def square(x, out):
        ...     for i in range(x.size):
        ...         out.flat[i] = x.flat[i] ** 2
        >>> ft.grad(lambda v: square(v).sum())(fnp.arange(3.0, dtype="float32"))
        Array([0., 2., 4.], dtype=float32)
    """
    def wrap(f):
        return NumbaKernel(f, result, vmap_method=vmap_method, batched_kernel=batched_kernel,
                           jvp=jvp, vjp=vjp, zero_outputs=zero_outputs,
                           boundscheck=boundscheck, launch=launch,
                           sharding_rule=sharding_rule)
    return wrap if fn is None else wrap(fn)
