"""Recording the per-shard program: the global program's equations applied to a shard's
blocks, with the collectives the layouts call for.

:func:`partition` walks the (call-free) global jaxpr once per equation: the equation's rule
(``rules.py``) gives the layouts it needs and produces; inputs in another layout are resharded
(``layouts.reshard``, once per value and layout); params holding global sizes are rewritten
for blocks; the equation is bound in a staging trace, which records the per-shard jaxpr.

Two choices keep the per-shard program lean:

* partial sums all-reduced over the same axes are reduced together: a first walk finds them,
  and the second reduces, at the first one needed, every such value already computed (a
  data-parallel step's gradients: one exchange instead of one per parameter);
* a value broadcast from a replicated operand and then wanted split along a broadcast
  dimension is broadcast to the block's shape directly (no global buffer made and sliced).

The collectives are bound through ``transforms.ops`` (installed by the primitives): the
partitioner sits below the user API (``lax``).
"""
from __future__ import annotations

import numpy as np

from functrans.core.avals import ShapedArray
from functrans.core.ir import Literal, TransposedSource
from functrans.core.mesh import canonical_spec, regrid_spec, same_grid
from functrans.core.staging import trace_to_jaxpr

from .. import ops
from . import explicit
from .layouts import Layout, local_shape, reshard, scatter_dimension, used
from .rules import LINEAR_ONE_OF, LINEAR_SUMS, LINEAR_UNARY, rule_for


class MeshMismatchError(ValueError):
    """Shardings of one program on different meshes."""


def partition(jaxpr, mesh, in_specs):
    """``(per-shard jaxpr, output specs, {var: Layout})`` of a call-free ``jaxpr`` whose
    inputs are laid out as ``in_specs`` on ``mesh``."""
    first = _ShardProgram(jaxpr, mesh, in_specs, groups={})
    result = first.trace()
    groups = {axes: vs for axes, vs in first.all_reduced.items() if len(vs) > 1}
    if not groups:
        return result
    return _ShardProgram(jaxpr, mesh, in_specs, groups).trace()


class _ShardProgram:
    def __init__(self, jaxpr, mesh, in_specs, groups):
        self.jaxpr, self.mesh, self.in_specs = jaxpr, mesh, in_specs
        self.sizes = mesh.shape
        self.explicit = bool(explicit.explicit_axes(mesh))
        self.groups = groups  # axes -> vars all-reduced over them (from a first walk)
        self.all_reduced: dict = {}  # what this walk all-reduces, by axes
        self.env: dict = {}
        self.layouts: dict = {}
        self.resharded: dict = {}
        self.reduced: dict = {}  # var where partial sums start -> its all-reduced value
        self.reduced_values: dict = {}  # var -> its all-reduced value
        self.chains: dict = {}  # partial var -> (var its partial sums start at, linear steps)
        self.producer: dict = {}  # var -> the equation that made it
        # Values laid out by a constraint right away (a product's or a reshape's
        # out_sharding=): their layout is not ambiguous on Explicit axes.
        self.constrained = {e.inputs[0] for e in jaxpr.eqns
                            if e.prim.name == "sharding_constraint"}

    def trace(self):
        from functrans.primitives.shard_map import mesh_axes
        avals = [ShapedArray(local_shape(v.aval.shape, s, self.sizes), v.aval.dtype,
                             v.aval.weak_type)
                 for v, s in zip(self.jaxpr.invars, self.in_specs)]
        out_specs = []

        def body(*xs):
            j = self.jaxpr
            self.env = {v: (c, Layout.replicated(np.ndim(c)))
                        for v, c in zip(j.constvars, j.consts)}
            self.env.update({v: (x, Layout(s)) for v, x, s in zip(j.invars, xs, self.in_specs)})
            for eqn in j.eqns:
                self.apply(eqn)
            outs = []
            for v in j.outvars:
                val, lay = self.read(v)
                if lay.partial:
                    val = self.to(v, lay.spec)
                outs.append(val)
                out_specs.append(lay.spec)
            return outs

        with mesh_axes(self.mesh):
            per_shard = trace_to_jaxpr(body, avals, name="partitioned")
        return per_shard, out_specs, self.layouts

    def read(self, x):
        if isinstance(x, Literal):
            return x.bound, Layout.replicated(x.aval.ndim)
        return self.env[x]

    def to(self, x, want):
        """``x``'s value laid out as ``want`` (no partial sums)."""
        want = tuple(want)
        val, have = self.read(x)
        if have.spec == want and not have.partial:
            return val
        key = (x, want)
        if key in self.resharded:
            return self.resharded[key]
        if have.partial and scatter_dimension(have, want, x.aval.shape, self.sizes) is None:
            val, have = self._all_reduced(x), Layout(have.spec)
        if not have.partial and not any(have.spec):
            local = self._local_broadcast(x, want)
            if local is not None:
                self.resharded[key] = local
                return local
        out = self.resharded[key] = reshard(val, have, want, self.sizes)
        return out

    def _all_reduced(self, x):
        """``x``'s partial sums all-reduced. The reduction happens where its partial sums
        started (a dot's or a sum's output; the linear steps after it are applied again to
        the reduced value), together with every other start the first walk all-reduced
        over the same axes that is computed by now and not reduced yet."""
        if x in self.reduced_values:
            return self.reduced_values[x]
        start, steps = self.chains.get(x, (x, ()))
        axes = self.read(start)[1].partial
        if start not in self.reduced:
            self.all_reduced.setdefault(axes, []).append(start)
            group = [start] + [v for v in self.groups.get(axes, ())
                               if v is not start and v in self.env and v not in self.reduced
                               and self.env[v][1].partial == axes]
            for v, total in zip(group, ops.psum([self.env[v][0] for v in group], axes)):
                self.reduced[v] = total
        value = self.reduced[start]
        for prim, vals, params, position in steps:
            vals = list(vals)
            vals[position] = value
            value = prim.bind1(*vals, **params)
        self.reduced_values[x] = value
        return value

    def _local_broadcast(self, x, want):
        """A broadcast of a replicated operand, made at the block's shape when ``want``
        splits only dimensions the broadcast creates (else None)."""
        eqn = self.producer.get(x)
        if eqn is None or eqn.prim.name != "broadcast_in_dim" or len(eqn.inputs) != 1:
            return None
        operand = eqn.inputs[0]
        value, layout = self.read(operand)
        if layout.partial or any(layout.spec):
            return None
        mapped = {o for d, o in enumerate(eqn.params["broadcast_dimensions"])
                  if operand.aval.shape[d] != 1}
        if any(want[d] for d in mapped):
            return None
        shape = local_shape(x.aval.shape, want, self.sizes)
        return eqn.prim.bind1(value, **dict(eqn.params, shape=shape))

    def apply(self, eqn):
        """Apply one equation of the global program to the shard's blocks."""
        if eqn.prim.name == "sharding_constraint":
            s = eqn.params["sharding"]
            want = canonical_spec(s.spec, eqn.inputs[0].aval.ndim, "with_sharding_constraint")
            if not same_grid(s.mesh, self.mesh):
                want = regrid_spec(want, s.mesh, self.mesh)
                if want is None:
                    raise MeshMismatchError(f"jit: with_sharding_constraint names {s.mesh}, "
                                            f"but the program is partitioned over {self.mesh}")
            self._set(eqn.outputs[0], self.to(eqn.inputs[0], want), Layout(want), eqn)
            return
        sizes = self.sizes
        layouts = [self.read(x)[1] for x in eqn.inputs]
        plan = rule_for(eqn.prim)(eqn, [lay.spec for lay in layouts], sizes)
        settled = eqn.prim.name in ("dot_general", "reshape") and (
            type(eqn.source) is TransposedSource
            or (len(eqn.outputs) == 1 and eqn.outputs[0] in self.constrained))
        if self.explicit and not settled:
            explicit.check(eqn, [lay.spec for lay in layouts], plan, self.mesh)
            if eqn.prim.name == "dot_general":
                plan = explicit.dot_plan(eqn, [lay.spec for lay in layouts], plan)
        keep, positions = _kept_partial(eqn, layouts, plan)
        vals = [self.read(x)[0] if i in positions else self.to(x, need)
                for i, (x, need) in enumerate(zip(eqn.inputs, plan.need))]
        params = eqn.params
        if plan.localize is not None:
            ins = [local_shape(x.aval.shape, n, sizes) for x, n in zip(eqn.inputs, plan.need)]
            outs = [local_shape(o.aval.shape, s, sizes) for o, s in zip(eqn.outputs, plan.out)]
            params = plan.localize(params, ins, outs)
        results = eqn.prim.bind_all(*vals, **params)
        order = list(sizes)
        for k, (o, v) in enumerate(zip(eqn.outputs, results)):
            partial = set(keep) | set((plan.partial or [None] * len(results))[k] or ())
            post = (plan.post or [None] * len(results))[k]
            if post is not None:
                v = (ops.pmax if post[0] == "pmax" else ops.pmin)(v, post[1])
            layout = Layout(plan.out[k], tuple(sorted(partial, key=order.index)))
            self._set(o, v, layout, eqn)
            if len(positions) == 1 and len(results) == 1 and layout.partial == keep:
                src = eqn.inputs[positions[0]]  # a linear step on the way from a start
                start, steps = self.chains.get(src, (src, ()))
                self.chains[o] = (start, steps + ((eqn.prim, vals, params, positions[0]),))

    def _set(self, var, value, layout, eqn):
        self.env[var] = (value, layout)
        self.layouts[var] = layout
        self.producer[var] = eqn


def _kept_partial(eqn, layouts, plan):
    """``(axes, input positions)`` of partial sums that pass through ``eqn`` unresolved."""
    partial = [lay.partial for lay in layouts]
    if not any(partial):
        return (), ()
    name = eqn.prim.name
    touched = set().union(*map(used, plan.need), *map(used, plan.out))
    ok = [i for i, (lay, need) in enumerate(zip(layouts, plan.need))
          if lay.partial and lay.spec == tuple(need) and not set(lay.partial) & touched]
    if name in LINEAR_UNARY and ok == [0] and len(eqn.inputs) == 1:
        if name == "convert_element_type" and not (
                np.issubdtype(eqn.inputs[0].aval.dtype, np.inexact)
                and np.issubdtype(eqn.outputs[0].aval.dtype, np.inexact)):
            return (), ()
        return layouts[0].partial, (0,)
    if name in LINEAR_SUMS:
        rank = eqn.outputs[0].aval.ndim
        if len(ok) == len(eqn.inputs) and len({lay.partial for lay in layouts}) == 1 and \
                all(x.aval.ndim == rank for x in eqn.inputs):
            return layouts[0].partial, tuple(ok)
        return (), ()
    if name in LINEAR_ONE_OF and len([p for p in partial if p]) == 1 and len(ok) == 1 \
            and ok[0] in LINEAR_ONE_OF[name]:
        return layouts[ok[0]].partial, (ok[0],)
    return (), ()
