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


@dataclass
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


def _available(x, group, computed_anywhere) -> bool:
    """Can ``group`` read ``x`` now (it is a literal, or finished before the group started)?"""
    if isinstance(x, Literal):
        return True
    return x not in group.computed and x not in group.loads and x not in group.finished \
        and x in computed_anywhere


def plan(jaxpr: Jaxpr, unrolled=lambda eqn: False):
    """Returns ``(steps, materialized)``: steps in emission order; ``materialized`` is the set
    of group values that need buffers (used outside their group or returned). Equations for
    which ``unrolled(eqn)`` holds are emitted one by one (small arrays, element-wise)."""
    steps: list = []
    # Two groups may be open: ``side`` holds equations of another shape that do not depend
    # on ``open_group`` (a PRNG's scalar key schedule between the rounds over its counters),
    # so they do not split it; it is emitted first.
    open_group: Group | None = None
    side: Group | None = None
    done: set = set(jaxpr.invars) | set(jaxpr.constvars)  # values with buffers/scalars now
    group_of: dict = {}

    def finish(g: Group) -> None:
        steps.append(g)
        done.update(g.computed, g.loads, g.finished)

    def close_side():
        nonlocal side
        if side is not None:
            finish(side)
            side = None

    def close():
        nonlocal open_group
        close_side()
        if open_group is not None:
            finish(open_group)
            open_group = None

    def reads(eqn, g: Group | None) -> bool:
        return g is not None and any(
            isinstance(x, Var) and (x in g.computed or x in g.loads or x in g.finished)
            for x in eqn.inputs)

    def can_join(eqn, g: Group) -> bool:
        out = eqn.outputs[0].aval
        name = eqn.prim.name
        if name in REDUCTIONS:
            x = eqn.inputs[0]
            return isinstance(x, Var) and x.aval.shape == g.shape and (
                x in g.computed or x in g.loads or _available(x, g, done))
        if out.shape != g.shape:
            return False
        if is_index_map(eqn):
            return all(_available(x, g, done) for x in eqn.inputs)
        for x in eqn.inputs:
            if isinstance(x, Literal) or x in g.computed or x in g.loads:
                continue
            if not _available(x, g, done):
                return False
        return True

    def new_group(eqn) -> Group:
        shape = eqn.inputs[0].aval.shape if eqn.prim.name in REDUCTIONS \
            else eqn.outputs[0].aval.shape
        g = Group(tuple(shape))
        if not can_join(eqn, g):  # inputs not ready: cannot happen in order
            raise AssertionError(f"unschedulable equation {eqn}")
        return g

    def add(eqn, g: Group) -> None:
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
        if fusible:
            if open_group is not None and can_join(eqn, open_group):
                add(eqn, open_group)
                continue
            if side is not None and can_join(eqn, side):  # (so it does not read open_group)
                add(eqn, side)
                continue
            if reads(eqn, side):  # the side group's values are ready once it is emitted
                close_side()
                if open_group is not None and can_join(eqn, open_group):
                    add(eqn, open_group)
                    continue
            if open_group is not None and not reads(eqn, open_group):
                if side is not None and not can_join(eqn, side):
                    close_side()
                if side is None:
                    side = new_group(eqn)
                add(eqn, side)
                continue
            close()
            open_group = new_group(eqn)
            add(eqn, open_group)
            continue
        if reads(eqn, open_group):
            close()
        elif reads(eqn, side):
            close_side()
        steps.append(Op(eqn))
        done.update(eqn.outputs)
    close()
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
