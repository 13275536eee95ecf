"""``pure_callback``: a host Python function computing values inside a traced program.

The function must be pure (its results depend only on its arguments): unused calls may be
removed and equal ones merged. jit runs it on the host between compiled kernels; vmap follows
``vmap_method`` as JAX does; differentiation raises (wrap it in ``custom_jvp``/``custom_vjp``);
an exception in the callback fails the computation with ``JaxRuntimeError`` (as in JAX)::

    >>> f = lambda x: ft.pure_callback(np.sin, ft.ShapeDtypeStruct(x.shape, x.dtype), x)
    >>> ft.jit(f)(fnp.zeros(2))
    Array([0., 0.], dtype=float64)
"""
from __future__ import annotations

import traceback

import numpy as np

from ..core.avals import ShapedArray
from ..core.errors import JaxRuntimeError
from ..core.trace import Primitive, get_aval
from ..transforms.autodiff.jvp import Zero, is_zero, jvp_rules
from ..transforms import ops
from ..transforms.batching import batching_rules, bdim_at_front, moveaxis
from ..core.tree import tree_flatten, tree_unflatten

VMAP_METHODS = ("sequential", "expand_dims", "broadcast_all")


class PureCallback:
    """The user's function, its argument structure and its declared results (flat avals)."""

    __slots__ = ("fn", "in_tree", "out_tree", "out_avals", "name")
    api = "pure_callback"  # the public function's name, for errors

    def __init__(self, fn, in_tree, out_tree, out_avals, name=None):
        self.fn, self.in_tree, self.out_tree = fn, in_tree, out_tree
        self.out_avals = tuple(out_avals)
        self.name = name or getattr(fn, "__name__", type(fn).__name__)

    def __call__(self, flat):
        """Run on NumPy values; the results checked against the declared shapes/dtypes."""
        args, kwargs = tree_unflatten(self.in_tree, self._arguments(flat))
        try:
            result = self.fn(*args, **kwargs)
        except JaxRuntimeError:
            raise  # a nested callback's failure (vmap's per-element loop), reported already
        except Exception as e:
            # As in JAX, a failing callback fails the computation with a runtime error whose
            # message carries the callback's traceback (equinox's error_if looks for its
            # exception's name there); the original is chained as the cause.
            raise JaxRuntimeError(
                f"{self.api}: the callback {self.name} raised {type(e).__name__}: {e}\n"
                + "".join(traceback.format_exception(e))) from e
        leaves, tree = tree_flatten(result)
        if tree != self.out_tree:
            raise TypeError(f"{self.api}: {self.name} returned a value of structure {tree}, "
                            f"but result_shape_dtypes declares {self.out_tree}")
        outs = []
        for i, (v, aval) in enumerate(zip(leaves, self.out_avals)):
            v = np.asarray(v)
            if v.shape != aval.shape:
                raise TypeError(f"{self.api}: {self.name} returned shape {v.shape} for result "
                                f"{i}, but result_shape_dtypes declares {aval.str_short()}")
            if v.dtype != aval.dtype and not np.can_cast(v.dtype, aval.dtype, "same_kind"):
                raise TypeError(f"{self.api}: {self.name} returned dtype {v.dtype} for result "
                                f"{i}, but result_shape_dtypes declares {aval.str_short()}")
            outs.append(np.asarray(v, aval.dtype))
        return outs

    def _arguments(self, flat):
        return flat  # pure_callback's function gets NumPy arrays

    def __repr__(self):
        return self.name


def _impl(*args, callback, vmap_method):
    return callback([np.array(a) for a in args])  # copies: the callback may keep or mutate them


def _abstract_eval(*avals, callback, vmap_method):
    return [ShapedArray(a.shape, a.dtype) for a in callback.out_avals]


pure_callback_p = Primitive("pure_callback", impl=_impl, abstract_eval=_abstract_eval)
pure_callback_p.multiple_results = True
pure_callback_p.host_only = True  # Python code: runs between compiled kernels


def _jvp(primals, tangents, *, callback, vmap_method):
    outs = pure_callback_p.bind_all(*primals, callback=callback, vmap_method=vmap_method)
    if all(is_zero(t) for t in tangents):
        return outs, [Zero(get_aval(o)) for o in outs]
    raise ValueError(f"pure_callback ({callback.name}) does not support differentiation (JVP or "
                     "grad): wrap the function calling it in ft.custom_jvp or ft.custom_vjp and "
                     "give its derivative there")


class _Sequential:
    """The callback looped over the leading batch axis of the batched arguments, on the host
    (each call sees one element; unbatched arguments are passed whole)."""

    def __init__(self, cb, batched, size):
        self.cb, self.batched, self.size = cb, batched, size
        self.__name__ = f"vmap({cb.name})"

    def __call__(self, *flat):
        rows = [self.cb([v[i] if b else v for v, b in zip(flat, self.batched)])
                for i in range(self.size)]
        return [np.stack([r[k] for r in rows]) if rows else np.zeros((0,) + a.shape, a.dtype)
                for k, a in enumerate(self.cb.out_avals)]


def batched_operands(vmap_method, vals, dims, size) -> list:
    """The operands a callback (or a user's kernel) gets under ``vmap_method``: batched ones
    with the batch axis in front (nested vmaps stack their axes there, outermost first: JAX's
    layout); unbatched ones with a new axis of size 1 (``expand_dims``), broadcast to the
    batch (``broadcast_all``) or as they are (``sequential``)."""
    args = []
    for v, d in zip(vals, dims):
        if d is not None:
            args.append(moveaxis(v, d, 0))
        elif vmap_method == "expand_dims":
            shape = get_aval(v).shape
            args.append(ops.broadcast(v, (1,) + shape, tuple(range(1, len(shape) + 1))))
        elif vmap_method == "broadcast_all":
            args.append(bdim_at_front(v, None, size))
        else:
            args.append(v)
    return args


def _batch(axis, vals, dims, *, callback, vmap_method):
    if vmap_method not in VMAP_METHODS:
        raise NotImplementedError(
            f"vmap of pure_callback ({callback.name}) needs vmap_method= (one of "
            f"{', '.join(map(repr, VMAP_METHODS))}); it was called with {vmap_method!r}")
    size = axis.size
    out_avals = [ShapedArray((size,) + a.shape, a.dtype) for a in callback.out_avals]
    args = batched_operands(vmap_method, vals, dims, size)
    if vmap_method == "sequential":
        fn = _Sequential(callback, [d is not None for d in dims], size)
        in_tree = tree_flatten((tuple(range(len(args))), {}))[1]
        new_cb = PureCallback(fn, in_tree, tree_flatten([0] * len(out_avals))[1], out_avals,
                              fn.__name__)
    else:  # the user's function itself, now returning batched results
        new_cb = PureCallback(callback.fn, callback.in_tree, callback.out_tree, out_avals,
                              f"vmap({callback.name})")
    outs = pure_callback_p.bind_all(*args, callback=new_cb, vmap_method=vmap_method)
    return outs, [0] * len(outs)


jvp_rules[pure_callback_p] = _jvp
batching_rules[pure_callback_p] = _batch
