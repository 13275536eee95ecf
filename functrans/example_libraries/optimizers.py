"""First-order optimizers with the API of ``jax.example_libraries.optimizers``.

An optimizer is a triple ``(init_fun, update_fun, get_params)``: ``init_fun(params)`` makes a
state, ``update_fun(step, grads, state)`` a new one, ``get_params(state)`` reads the
parameters back. Parameters may be any pytree; the state is a pytree too, so the update can
be jitted::

    >>> from functrans.example_libraries import optimizers
    >>> init, update, get_params = optimizers.sgd(0.1)
    >>> state = init({"w": fnp.array([1.0, 2.0])})
    >>> state = ft.jit(update)(0, {"w": fnp.array([1.0, 1.0])}, state)
    >>> get_params(state)["w"]
    Array([0.9, 1.9], dtype=float64)

Step sizes are numbers or schedules ``step -> step size`` (:func:`exponential_decay`, ...).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

from .. import numpy as fnp
from ..core.tree import register_pytree_node, tree_flatten, tree_leaves, tree_map, \
    tree_unflatten

__all__ = ["Optimizer", "OptimizerState", "optimizer", "constant", "exponential_decay",
           "inverse_time_decay", "polynomial_decay", "piecewise_constant", "make_schedule",
           "sgd", "momentum", "nesterov", "adagrad", "rmsprop", "rmsprop_momentum", "adam",
           "adamax", "sm3", "l2_norm", "clip_grads", "JoinPoint", "unpack_optimizer_state",
           "pack_optimizer_state"]


class OptimizerState:
    """The state of an optimizer over a pytree of parameters: per parameter, the flattened
    leaves of its state (``packed_state``), with the parameters' tree structure and each
    state's structure (static under jit)."""

    def __init__(self, packed_state, tree_def, subtree_defs):
        self.packed_state = packed_state
        self.tree_def = tree_def
        self.subtree_defs = subtree_defs

    def __iter__(self):
        return iter((self.packed_state, self.tree_def, self.subtree_defs))


register_pytree_node(OptimizerState,
                     lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
                     lambda aux, children: OptimizerState(children[0], *aux))


class Optimizer(NamedTuple):
    init_fn: Callable
    update_fn: Callable
    params_fn: Callable


def optimizer(opt_maker):
    """Lifts an optimizer over one array, ``opt_maker(*args) -> (init, update, get_params)``,
    to one over pytrees of arrays.

    >>> @optimizer
    ... def halve():
    ...     return (lambda x: x), (lambda i, g, x: x / 2), (lambda x: x)
    >>> init, update, get = halve()
    >>> get(update(0, (1.0, 1.0), init((fnp.array(4.0), fnp.array(2.0)))))
    (Array(2., dtype=float64, weak_type=True), Array(1., dtype=float64, weak_type=True))
    """
    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        def tree_init(x0_tree):
            leaves, tree = tree_flatten(x0_tree)
            flat = [tree_flatten(init(x0)) for x0 in leaves]
            return OptimizerState([f[0] for f in flat], tree, tuple(f[1] for f in flat))

        def tree_update(i, grad_tree, opt_state):
            states_flat, tree, subtrees = opt_state
            grads, grad_tree_def = tree_flatten(grad_tree)
            if grad_tree_def != tree:
                raise TypeError(f"optimizer update: the gradient tree {grad_tree_def} does not "
                                f"match the parameter tree {tree}")
            states = [tree_unflatten(s, f) for s, f in zip(subtrees, states_flat)]
            new = [tree_flatten(update(i, g, s)) for g, s in zip(grads, states)]
            for (_, sub), old in zip(new, subtrees):
                if sub != old:
                    raise TypeError(f"optimizer update changed a state's structure from {old} "
                                    f"to {sub}")
            return OptimizerState([n[0] for n in new], tree, subtrees)

        def tree_get_params(opt_state):
            states_flat, tree, subtrees = opt_state
            return tree_unflatten(tree, [get_params(tree_unflatten(s, f))
                                         for s, f in zip(subtrees, states_flat)])
        return Optimizer(tree_init, tree_update, tree_get_params)
    return tree_opt_maker


# ---- step-size schedules ----------------------------------------------------------------------
def constant(step_size) -> Callable:
    """The schedule ``i -> step_size``.

    >>> constant(0.1)(7)
    0.1
    """
    return lambda i: step_size


def exponential_decay(step_size, decay_steps, decay_rate):
    """``step_size * decay_rate ** (i / decay_steps)``.

    >>> float(exponential_decay(1.0, 10, 0.5)(20))
    0.25
    """
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
    """``step_size / (1 + decay_rate * i / decay_steps)`` (``i / decay_steps`` floored when
    ``staircase``).

    >>> float(inverse_time_decay(1.0, 10, 1.0, staircase=True)(15))
    0.5
    """
    if staircase:
        return lambda i: step_size / (1 + decay_rate * fnp.floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
    """From ``step_size`` to ``final_step_size`` over ``decay_steps`` as ``(1 - t) ** power``.

    >>> float(polynomial_decay(1.0, 10, 0.0)(5)), float(polynomial_decay(1.0, 10, 0.1)(50))
    (0.5, 0.1)
    """
    def schedule(i):
        t = fnp.minimum(i, decay_steps) / decay_steps
        return (1 - t) ** power * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries, values):
    """``values[k]`` for steps in ``(boundaries[k-1], boundaries[k]]``.

    >>> s = piecewise_constant([10, 20], [1.0, 0.5, 0.1])
    >>> float(s(10)), float(s(11)), float(s(30))
    (1.0, 0.5, 0.1)
    """
    boundaries, values = fnp.array(boundaries), fnp.array(values)
    if values.shape[0] != boundaries.shape[0] + 1:
        raise ValueError(f"piecewise_constant needs one more value than boundaries, got "
                         f"{values.shape[0]} values and {boundaries.shape[0]} boundaries")
    return lambda i: values[fnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule) -> Callable:
    """A schedule from a schedule or a number.

    >>> make_schedule(0.5)(3)
    0.5
    """
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if fnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(f"step size must be a number or a schedule, got {scalar_or_schedule!r}")


# ---- optimizers -------------------------------------------------------------------------------
@optimizer
def sgd(step_size):
    """Stochastic gradient descent: ``x - step_size(i) * g``.

    >>> init, update, get = sgd(0.5)
    >>> get(update(0, fnp.array(2.0), init(fnp.array(1.0))))
    Array(0., dtype=float64, weak_type=True)
    """
    step_size = make_schedule(step_size)
    return (lambda x0: x0), (lambda i, g, x: x - step_size(i) * g), (lambda x: x)


@optimizer
def momentum(step_size, mass):
    """Heavy-ball momentum: ``v = mass * v + g; x -= step_size(i) * v``.

    >>> init, update, get = momentum(1.0, 0.5)
    >>> s = update(1, fnp.array(1.0), update(0, fnp.array(1.0), init(fnp.array(0.0))))
    >>> get(s)
    Array(-2.5, dtype=float64, weak_type=True)
    """
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, v = state
        v = mass * v + g
        return x - step_size(i) * v, v
    return (lambda x0: (x0, fnp.zeros_like(x0))), update, (lambda s: s[0])


@optimizer
def nesterov(step_size, mass):
    """Nesterov momentum: ``v = mass * v + g; x -= step_size(i) * (mass * v + g)``.

    >>> init, update, get = nesterov(1.0, 0.5)
    >>> get(update(0, fnp.array(1.0), init(fnp.array(0.0))))
    Array(-1.5, dtype=float64, weak_type=True)
    """
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, v = state
        v = mass * v + g
        return x - step_size(i) * (mass * v + g), v
    return (lambda x0: (x0, fnp.zeros_like(x0))), update, (lambda s: s[0])


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad with momentum: steps scaled by the inverse root of summed squared gradients.

    >>> init, update, get = adagrad(1.0, momentum=0.0)
    >>> get(update(0, fnp.array(4.0), init(fnp.array(0.0))))
    Array(-1., dtype=float64, weak_type=True)
    """
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + fnp.square(g)
        inv = fnp.where(g_sq > 0, 1.0 / fnp.sqrt(fnp.where(g_sq > 0, g_sq, 1.0)), 0.0)
        m = (1.0 - momentum) * (g * inv) + momentum * m
        return x - step_size(i) * m, g_sq, m
    return (lambda x0: (x0, fnp.zeros_like(x0), fnp.zeros_like(x0))), update, \
        (lambda s: s[0])


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: steps divided by a running root-mean-square of the gradients.

    >>> init, update, get = rmsprop(0.1, gamma=0.0, eps=0.0)
    >>> get(update(0, fnp.array(3.0), init(fnp.array(1.0))))
    Array(0.9, dtype=float64, weak_type=True)
    """
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg = state
        avg = avg * gamma + fnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / fnp.sqrt(avg + eps), avg
    return (lambda x0: (x0, fnp.zeros_like(x0))), update, (lambda s: s[0])


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp with momentum on the scaled steps.

    >>> init, update, get = rmsprop_momentum(0.1, gamma=0.0, eps=0.0, momentum=0.5)
    >>> get(update(0, fnp.array(3.0), init(fnp.array(1.0))))
    Array(0.9, dtype=float64, weak_type=True)
    """
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg, mom = state
        avg = avg * gamma + fnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / fnp.sqrt(avg + eps)
        return x - mom, avg, mom
    return (lambda x0: (x0, fnp.zeros_like(x0), fnp.zeros_like(x0))), update, \
        (lambda s: s[0])


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma and Ba): bias-corrected first and second moment estimates.

    >>> init, update, get = adam(0.1)
    >>> get(update(0, fnp.array(5.0), init(fnp.array(1.0))))  # the first step is ~step_size
    Array(0.9, dtype=float64)
    """
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * fnp.square(g) + b2 * v
        m_hat = m / (1 - fnp.asarray(b1, m.dtype) ** (i + 1))
        v_hat = v / (1 - fnp.asarray(b2, m.dtype) ** (i + 1))
        return x - step_size(i) * m_hat / (fnp.sqrt(v_hat) + eps), m, v
    return (lambda x0: (x0, fnp.zeros_like(x0), fnp.zeros_like(x0))), update, \
        (lambda s: s[0])


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adamax: Adam with the infinity norm in place of the second moment.

    >>> init, update, get = adamax(0.1, eps=0.0)
    >>> get(update(0, fnp.array(5.0), init(fnp.array(1.0))))
    Array(0.9, dtype=float64)
    """
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = fnp.maximum(b2 * u, fnp.abs(g))
        corrected = step_size(i) / (1 - fnp.asarray(b1, m.dtype) ** (i + 1))
        return x - corrected * m / (u + eps), m, u
    return (lambda x0: (x0, fnp.zeros_like(x0), fnp.zeros_like(x0))), update, \
        (lambda s: s[0])


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (Anil et al., "Memory-Efficient Adaptive Optimization"): Adagrad-like scaling from
    one accumulator per axis (a vector per dimension instead of one value per entry), with
    momentum.

    >>> init, update, get = sm3(0.1, momentum=0.0)
    >>> get(update(0, fnp.array([3.0, -4.0]), init(fnp.array([1.0, 1.0]))))
    Array([0.9, 1.1], dtype=float64)
    """
    step_size = make_schedule(step_size)

    def init(x0):
        x0 = fnp.asarray(x0)
        # a scalar keeps one scalar accumulator; an array one vector per axis
        vs = [fnp.zeros((), x0.dtype)] if x0.ndim == 0 else \
            [fnp.zeros(n, x0.dtype) for n in x0.shape]
        return x0, fnp.zeros_like(x0), vs

    def update(i, g, state):
        x, m, vs = state
        ndim = g.ndim
        # each entry's second-moment estimate: the smallest of its axes' accumulators
        spread = [v if ndim == 0 else
                  fnp.expand_dims(v, tuple(a for a in range(ndim) if a != axis))
                  for axis, v in enumerate(vs)]
        accum = spread[0]
        for v in spread[1:]:
            accum = fnp.minimum(accum, v)
        accum = accum + fnp.square(g)
        scale = fnp.where(accum > 0, 1.0 / fnp.sqrt(fnp.where(accum > 0, accum, 1.0)), 0.0)
        m = (1.0 - momentum) * (g * scale) + momentum * m
        x = x - step_size(i) * m
        vs = [accum] if ndim == 0 else \
            [accum.max(axis=tuple(a for a in range(ndim) if a != axis)) for axis in range(ndim)]
        return x, m, vs
    return init, update, (lambda s: s[0])


# ---- utilities -------------------------------------------------------------------------------
def l2_norm(tree):
    """The l2 norm of all the leaves of a pytree together.

    >>> l2_norm({"a": fnp.array([3.0]), "b": fnp.array(4.0)})
    Array(5., dtype=float64)
    """
    return fnp.sqrt(sum(fnp.vdot(x, x) for x in tree_leaves(tree)))


def clip_grads(grad_tree, max_norm):
    """Scale a gradient pytree down to l2 norm ``max_norm`` if it is larger.

    >>> clip_grads([fnp.array([3.0, 4.0])], 1.0)
    [Array([0.6, 0.8], dtype=float64)]
    """
    norm = l2_norm(grad_tree)
    return tree_map(lambda g: fnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


class JoinPoint:
    """Marks where a parameter's state subtree joins the parameter tree in
    :func:`unpack_optimizer_state`."""

    def __init__(self, subtree: Any):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree


def unpack_optimizer_state(opt_state):
    """The state as a pytree of the parameters' structure whose leaves are
    :class:`JoinPoint`s holding each parameter's state (e.g. to save it).

    >>> init, update, get = momentum(0.1, 0.9)
    >>> marked = unpack_optimizer_state(init([fnp.array(1.0)]))
    >>> marked[0].subtree
    (Array(1., dtype=float64, weak_type=True), Array(0., dtype=float64, weak_type=True))
    """
    states_flat, tree, subtrees = opt_state
    joins = [JoinPoint(tree_unflatten(s, f)) for s, f in zip(subtrees, states_flat)]
    return tree_unflatten(tree, joins)


def pack_optimizer_state(marked_pytree):
    """The inverse of :func:`unpack_optimizer_state`.

    >>> init, update, get = momentum(0.1, 0.9)
    >>> s = init([fnp.array(1.0)])
    >>> get(pack_optimizer_state(unpack_optimizer_state(s)))
    [Array(1., dtype=float64, weak_type=True)]
    """
    joins, tree = tree_flatten(marked_pytree, is_leaf=lambda x: isinstance(x, JoinPoint))
    if not all(isinstance(j, JoinPoint) for j in joins):
        raise TypeError("pack_optimizer_state expects a pytree whose leaves are JoinPoints")
    flat = [tree_flatten(j.subtree) for j in joins]
    return OptimizerState([f[0] for f in flat], tree, tuple(f[1] for f in flat))
