"""User checks: ``check``, ``debug_check``, ``check_error`` and the ``check`` primitive they
bind.

A check is an effect: outside ``checkify`` a failing one raises ``JaxRuntimeError`` (eagerly,
or when a jitted program containing it runs), while ``checkify`` turns it into an ``Error``
value. The primitive carries the error to raise as operands (predicate, code, payload) plus
the error's pytree structure, so transformations treat it like any other operand: JVP checks
the primal values, vmap reduces a batch of errors to one::

    >>> from functrans.experimental import checkify
    >>> def f(x):
    ...     checkify.check(x > 0, "x must be positive, got {}", x)
    ...     return x
    >>> f(fnp.asarray(-2.0))
    Traceback (most recent call last):
      ...
    functrans.experimental.checkify_errors.JaxRuntimeError: x must be positive, got -2.0 (`check`...
"""
from __future__ import annotations

import numpy as np

import functrans.numpy as fnp
from functrans.core.array import Array
from functrans.core.ir import source_info
from functrans.core.trace import Primitive
from functrans.transforms.autodiff.jvp import jvp_rules
from functrans.transforms.batching import batching_rules, bdim_at_front
from functrans.core.tree import tree_flatten, tree_leaves, tree_unflatten

from .checkify_errors import (Error, FailedCheckError, JaxRuntimeError, assert_func, init_error,
                              is_batched, reduce_batched_error)


def _check_impl(*leaves, err_tree, debug):
    if debug:  # a debug_check only acts under checkify
        return []
    exc = tree_unflatten(err_tree, leaves).get_exception()
    if exc is not None:
        raise JaxRuntimeError(str(exc)) from exc
    return []


check_p = Primitive("check", impl=_check_impl, abstract_eval=lambda *avals, **params: [],
                    print_params=lambda params: {"debug": params["debug"]})
check_p.multiple_results = True
check_p.effectful = True  # never removed although it has no outputs
# Under jit, an unchecked (not checkified) check runs between compiled steps, raising there.
check_p.host_only = True


def _check_jvp(primals, tangents, *, err_tree, debug):
    check_p.bind_all(*primals, err_tree=err_tree, debug=debug)
    return [], []


def _check_batch(axis, vals, dims, *, err_tree, debug):
    # One failing element is enough: reduce the batch of errors, then check that one.
    vals = [bdim_at_front(v, d, axis.size) for v, d in zip(vals, dims)]
    err = reduce_batched_error(tree_unflatten(err_tree, vals))
    leaves, tree = tree_flatten(err)
    check_p.bind_all(*leaves, err_tree=tree, debug=debug)
    return [], []


jvp_rules[check_p] = _check_jvp
batching_rules[check_p] = _check_batch


# ---- the public functions -----------------------------------------------------------------------
def check(pred, msg: str, *fmt_args, debug: bool = False, **fmt_kwargs) -> None:
    """Check that ``pred`` holds; if not, the error is ``msg`` formatted with the values of
    ``fmt_args``/``fmt_kwargs`` (arrays, traced ones included).

    Eagerly a failing check raises ``JaxRuntimeError``; under :func:`checkify` it becomes the
    returned ``Error`` instead, also inside ``jit``, ``vmap`` and loops.

        >>> from functrans.experimental import checkify
        >>> def f(x):
        ...     checkify.check(x > 0, "{x} needs to be positive!", x=x)
        ...     return 1 / x
        >>> err, out = ft.jit(checkify.checkify(f))(-3.0)
        >>> err.get()
        '-3.0 needs to be positive! (`check` failed)'
    """
    _check(pred, msg, debug, *fmt_args, **fmt_kwargs)


def debug_check(pred, msg: str, *fmt_args, **fmt_kwargs) -> None:
    """Like :func:`check`, but only acts under ``checkify``; elsewhere it does nothing.

        >>> from functrans.experimental import checkify
        >>> def f(x):
        ...     checkify.debug_check(x != 0, "cannot be zero!")
        ...     return x
        >>> f(0)
        0
        >>> checkify.checkify(f)(0)[0].get()
        'cannot be zero! (`check` failed)'
    """
    _check(pred, msg, True, *fmt_args, **fmt_kwargs)


def check_error(error: Error) -> None:
    """Raise ``JaxRuntimeError`` if ``error`` holds an error; under ``checkify`` the error
    flows into the returned one instead (the inverse of ``checkify``).

        >>> from functrans.experimental import checkify
        >>> def f(x):
        ...     checkify.check(x > 0, "must be positive!")
        ...     return x
        >>> def g(x):
        ...     err, out = ft.jit(checkify.checkify(f))(x)
        ...     checkify.check_error(err)
        ...     return out
        >>> g(1)
        Array(1, dtype=int64, weak_type=True)
        >>> checkify.checkify(g)(-1)[0].get()
        'must be positive! (`check` failed)'
    """
    if not isinstance(error, Error):
        raise TypeError(f"check_error takes an Error as argument, got type {type(error)} "
                        "instead.")
    _check_error(error)


def _is_scalar_pred(pred) -> bool:
    return isinstance(pred, bool) or (isinstance(pred, Array) and pred.shape == ()
                                      and pred.dtype == np.dtype(bool))


def _check(pred, msg, debug, *fmt_args, **fmt_kwargs):
    if not _is_scalar_pred(pred):
        name = "debug_check" if debug else "check"
        raise TypeError(f"{name} takes a scalar pred as argument, got {pred}")
    if not isinstance(msg, str):
        raise TypeError(f"check: msg must be a (format) string, got {type(msg).__name__}")
    for arg in tree_leaves((fmt_args, fmt_kwargs)):
        if not isinstance(arg, (Array, np.ndarray)):
            raise TypeError("Formatting arguments to checkify.check need to be PyTrees of "
                            f"arrays, but got {arg!r} of type {type(arg)}.")
    new_error = FailedCheckError(source_info(), msg, *fmt_args, **fmt_kwargs)
    _check_error(assert_func(init_error, fnp.logical_not(pred), new_error), debug=debug)


def _check_error(error: Error, debug: bool = False) -> None:
    if not error.effects:
        return  # nothing can have failed
    if is_batched(error):
        error = reduce_batched_error(error)
    leaves, tree = tree_flatten(error)
    check_p.bind_all(*leaves, err_tree=tree, debug=debug)
