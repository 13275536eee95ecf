"""Fusion planning: split a flat jaxpr into fused loop nests and standalone operations.

A :class:`Group` is one loop nest over a shape S. It computes elementwise equations (one value
per loop index), reads other values through *index maps* (broadcast_in_dim, transpose, static
slice, rev, unit-dim reshapes and iota are just index arithmetic on an existing buffer), and
finishes with reductions of its values (accumulated in the same pass). Every other equation is
an :class:`Op` with its own emitter. Values get a buffer only when something outside their
group needs them::

    >>> jaxpr = ft.make_jaxpr(lambda x: fnp.sum(fnp.sin(x) * 2.0))(np.ones(4))
    >>> steps, materialized = plan(jaxpr)
    >>> len(steps), len(materialized)   # one loop computes sin, mul and the sum; only it is stored
    (1, 1)
"""
from __future__ import annotations

from dataclasses import dataclass, field

from functrans.core.ir import Jaxpr, Literal, Var

INDEX_MAPS = {"broadcast_in_dim", "transpose", "slice", "rev", "iota", "reshape", "squeeze"}
REDUCTIONS = {"reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and",
              "reduce_or", "argmax", "argmin"}
NOT_FUSED = {"bitcast_convert_type"}  # needs a buffer view


def is_pointwise(eqn) -> bool:
    return "elementwise" in eqn.prim.traits and eqn.prim.name not in NOT_FUSED


def unit_reshape(eqn) -> bool:
    """A reshape that only adds/removes size-1 dims (an index map)."""
    if eqn.prim.name == "squeeze":
        return True
    if eqn.prim.name != "reshape":
        return False
    a = [d for d in eqn.inputs[0].aval.shape if d != 1]
    b = [d for d in eqn.outputs[0].aval.shape if d != 1]
    return a == b


def is_index_map(eqn) -> bool:
    name = eqn.prim.name
    if name in ("reshape", "squeeze"):
        return unit_reshape(eqn)
    return name in INDEX_MAPS


@dataclass(eq=False)  # identity: groups are keys of the planner's tables
class Group:
    shape: tuple
    eqns: list = field(default_factory=list)  # pointwise and index-map equations, in order
    reductions: list = field(default_factory=list)
    computed: set = field(default_factory=set)  # values computed per loop index
    loads: set = field(default_factory=set)  # index-map values (read from buffers)
    finished: set = field(default_factory=set)  # reduction results (available after the loop)


@dataclass
class Op:
    eqn: object


def plan(jaxpr: Jaxpr, unrolled=lambda eqn: False):
    """Returns ``(steps, materialized)``: steps in emission order; ``materialized`` is the set
    of group values that need buffers (used outside their group or returned). Equations for
    which ``unrolled(eqn)`` holds are emitted one by one (small arrays, element-wise).

    One loop may be open per shape at a time, so equations join the loop of their shape
    wherever they stand in the program: an optimizer's update written step by step over every
    leaf of a parameter tree (all first moments, then all second moments, ...) becomes one
    loop per leaf shape instead of one per step and leaf. Open loops are emitted in an order
    that respects what they read from each other; an equation that would make two of them
    read each other (a global norm's scalar, computed from sums over the leaves, scaling the
    leaves) closes its shape's loop and starts another. A loop is emitted when another kind
    of step reads it, or at the end.
    """
    steps: list = []
    done: set = set(jaxpr.invars) | set(jaxpr.constvars)  # values with buffers/scalars now
    group_of: dict = {}
    open_by_shape: dict = {}  # shape -> its open Group
    preds: dict = {}  # open Group -> the open Groups it reads (emitted before it)

    def owner(x):
        """The open group computing ``x``, or None."""
        g = group_of.get(x) if isinstance(x, Var) else None
        return g if g is not None and g in preds else None

    def ancestors(g) -> set:
        seen, todo = set(), [g]
        while todo:
            for p in preds[todo.pop()]:
                if p not in seen and p in preds:
                    seen.add(p)
                    todo.append(p)
        return seen

    def close(g: Group) -> None:
        """Emit ``g`` after the open groups it reads."""
        for p in sorted(preds[g] & preds.keys(), key=order.__getitem__):
            if p in preds:
                close(p)
        del preds[g]
        if open_by_shape.get(g.shape) is g:
            del open_by_shape[g.shape]
        steps.append(g)
        done.update(g.computed, g.loads, g.finished)

    def close_readers_of(eqn) -> None:
        for x in eqn.inputs:
            g = owner(x)
            if g is not None:
                close(g)

    def sources(eqn, g: Group):
        """The other open groups ``eqn`` would make ``g`` read, or None if it cannot join
        ``g`` (an input not computed yet, read through an index map from ``g`` itself, or
        from a group that reads ``g``)."""
        name = eqn.prim.name
        if name in REDUCTIONS:
            x = eqn.inputs[0]
            if not isinstance(x, Var) or x.aval.shape != g.shape:
                return None
            return set() if x in g.computed or x in g.loads or x in done else None
        if eqn.outputs[0].aval.shape != g.shape:
            return None
        mapped = is_index_map(eqn)
        found = set()
        for x in eqn.inputs:
            if isinstance(x, Literal) or x in done:
                continue
            if x in g.computed or x in g.loads or x in g.finished:
                if mapped or x in g.finished:  # needs its buffer, written after the loop
                    return None
                continue
            h = owner(x)
            if h is None or g in ancestors(h) or h is g:
                return None
            found.add(h)
        return found

    order: dict = {}  # Group -> creation index (a deterministic emission order)

    def start(eqn) -> Group:
        shape = eqn.inputs[0].aval.shape if eqn.prim.name in REDUCTIONS \
            else eqn.outputs[0].aval.shape
        old = open_by_shape.get(tuple(shape))
        if old is not None:
            close(old)
        g = Group(tuple(shape))
        order[g] = len(order)
        preds[g] = set()
        open_by_shape[g.shape] = g
        return g

    def add(eqn, g: Group, found) -> None:
        preds[g].update(found)
        out = eqn.outputs[0]
        if eqn.prim.name in REDUCTIONS:
            g.reductions.append(eqn)
            g.finished.add(out)
        else:
            g.eqns.append(eqn)
            (g.loads if is_index_map(eqn) else g.computed).add(out)
        group_of[out] = g

    for eqn in jaxpr.eqns:
        fusible = (len(eqn.outputs) == 1 and not unrolled(eqn)
                   and (is_pointwise(eqn) or is_index_map(eqn) or eqn.prim.name in REDUCTIONS))
        if not fusible:
            close_readers_of(eqn)
            steps.append(Op(eqn))
            done.update(eqn.outputs)
            continue
        shape = eqn.inputs[0].aval.shape if eqn.prim.name in REDUCTIONS \
            else eqn.outputs[0].aval.shape
        g = open_by_shape.get(tuple(shape))
        found = sources(eqn, g) if g is not None else None
        if found is None:
            g = start(eqn)
            found = sources(eqn, g)
            if found is None:  # an input of its own shape read through a buffer
                close_readers_of(eqn)
                found = sources(eqn, g)
            if found is None:  # inputs not ready: cannot happen in order
                raise AssertionError(f"unschedulable equation {eqn}")
        add(eqn, g, found)
    for g in sorted(preds, key=order.__getitem__):
        if g in preds:
            close(g)
    return steps, _materialized(jaxpr, steps, group_of)


def _materialized(jaxpr, steps, group_of):
    """Group values read by another step, or returned, need buffers."""
    need = {x for x in jaxpr.outvars if isinstance(x, Var) and x in group_of}
    for step in steps:
        eqns = step.eqns + step.reductions if isinstance(step, Group) else [step.eqn]
        for eqn in eqns:
            for x in eqn.inputs:
                if isinstance(x, Var) and x in group_of and group_of[x] is not step:
                    need.add(x)
    return need
