"""``io_callback``: an impure host Python function called inside a traced program.

Unlike ``pure_callback`` it is an effect: never removed as dead code, merged with an equal
call or folded, so it runs once per time the program reaches it, in program order (functrans
runs every program's steps in order, so ``ordered=True`` holds too). jit runs it on the host
between compiled kernels; under vmap an unordered callback is called once per batch element
in turn (as JAX's ``lax.map``), and an ordered one raises; differentiating it raises::

    >>> calls = []
    >>> def log(x):
    ...     calls.append(float(x))
    ...     return np.float32(x) * 2
    >>> f = ft.jit(lambda x: io_callback_p.bind_all(x, callback=IOCallback(
    ...     log, tree_flatten(((0,), {}))[1], tree_flatten(0)[1],
    ...     [ShapedArray((), np.float32)]), ordered=False)[0])
    >>> f(fnp.float32(1.5)), calls
    (Array(3., dtype=float32), [1.5])
"""
from __future__ import annotations

import numpy as np

from ..core.array import Array
from ..core.avals import ShapedArray
from ..core.trace import Primitive, get_aval
from ..transforms.autodiff.jvp import Zero, is_zero, jvp_rules
from ..transforms.batching import batching_rules, moveaxis
from ..core.tree import tree_flatten, tree_unflatten  # noqa: F401  (the doctest's)
from .pure_callback import PureCallback, _Sequential

__all__ = ["IOCallback", "io_callback_p"]


class IOCallback(PureCallback):
    """The user's function, its argument structure and declared results; as in JAX, the
    function receives arrays (``functrans.Array``), not NumPy values."""

    __slots__ = ()
    api = "io_callback"

    def _arguments(self, flat):
        return [Array._wrap(np.array(a)) for a in flat]  # copies: the callback may keep them


class _BatchedIOCallback(IOCallback):
    """The per-element loop vmap builds around an IOCallback: it passes NumPy values on."""

    __slots__ = ()

    def _arguments(self, flat):
        return flat


def _impl(*args, callback, ordered):
    return callback([np.asarray(a) for a in args])


def _abstract_eval(*avals, callback, ordered):
    return [ShapedArray(a.shape, a.dtype) for a in callback.out_avals]


io_callback_p = Primitive("io_callback", impl=_impl, abstract_eval=_abstract_eval)
io_callback_p.multiple_results = True
io_callback_p.effectful = True  # runs each time it is reached, even if its results are unused
io_callback_p.host_only = True  # Python code: runs between compiled kernels


def _jvp(primals, tangents, *, callback, ordered):
    # Zero tangents (the callback's inputs do not depend on what is differentiated) are fine:
    # JAX's JVP binds such a primitive without calling its rule.
    if all(is_zero(t) for t in tangents):
        outs = io_callback_p.bind_all(*primals, callback=callback, ordered=ordered)
        return outs, [Zero(get_aval(o)) for o in outs]
    raise ValueError(f"io_callback ({callback.name}) does not support differentiation (JVP or "
                     "grad): IO callbacks do not support JVP")


def _batch(axis, vals, dims, *, callback, ordered):
    if ordered:
        raise ValueError(f"Cannot vmap an ordered io_callback ({callback.name}): its calls "
                         "for the batch elements would have no order")
    size = axis.size
    args = [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    fn = _Sequential(callback, [d is not None for d in dims], size)
    out_avals = [ShapedArray((size,) + a.shape, a.dtype) for a in callback.out_avals]
    in_tree = tree_flatten((tuple(range(len(args))), {}))[1]
    looped = _BatchedIOCallback(fn, in_tree, tree_flatten([0] * len(out_avals))[1], out_avals,
                                fn.__name__)
    outs = io_callback_p.bind_all(*args, callback=looped, ordered=False)
    return outs, [0] * len(outs)


jvp_rules[io_callback_p] = _jvp
batching_rules[io_callback_p] = _batch
