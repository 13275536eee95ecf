"""``shard_map``: run a function on every device of a mesh on its block of each argument
(JAX 0.10.2's signature, and the older positional one). The per-shard program is traced once
per argument signature and bound as the ``shard_map`` primitive (``bind_shard_map``).

    >>> mesh = ft.sharding.make_mesh((2,), ("x",))
    >>> ft.shard_map(lambda b: b * 2, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(
    ...     fnp.arange(4.0))
    Array([0., 2., 4., 6.], dtype=float64)
"""
from __future__ import annotations

import functools

import numpy as np

from functrans.core.api_util import fun_name, match_prefix
from functrans.core.array import Array
from functrans.core.avals import ShapedArray
from functrans.core.axis_env import _env as _axis_env
from functrans.core.config import config
from functrans.core.hivalues import lower_specs
from functrans.core.mesh import (AbstractMesh, AxisType, Mesh, NamedSharding, PartitionSpec,
                                 canonical_spec, check_divisible, get_mesh, same_grid,
                                 use_abstract_mesh)
from functrans.core.traced_arguments import traced_arguments_placed, traced_sharding
from functrans.core.unreduced import UnreducedArray
from functrans.core.trace import get_aval
from functrans.core.tree import tree_flatten, tree_unflatten
from functrans.primitives.shard_map import bind_shard_map
from functrans.transforms.batching import _leaf_labels

from .partial_sums import stack_argument, stack_names, stacked_spec, unstack_result
from .per_shard import TraceCache, replicated, trace_per_shard
from .varying import shard_body

__all__ = ["Infer", "shard_map"]


class _Infer:
    """The default of ``shard_map``'s ``in_specs``: take each argument's spec from it."""

    def __repr__(self):
        return "functrans.sharding.Infer"


Infer = _Infer()
_NO_OUT_SPECS = object()


def shard_map(f=None, /, *args, out_specs=_NO_OUT_SPECS, in_specs=Infer, mesh=None,
              axis_names=frozenset(), check_vma=True):
    """Run ``f`` on every device of ``mesh`` on its block of each argument.

    ``in_specs``/``out_specs`` are pytree prefixes of the arguments/outputs made of
    ``PartitionSpec``s: per dimension, the mesh axes splitting it. Inside ``f`` collectives
    over the mesh axes (``lax.psum(x, "x")``) combine the shards. An output whose spec leaves
    out a mesh axis must be the same on every shard along it (the shard at index 0 gives it).

    JAX 0.10.2's signature: ``mesh`` defaults to the context mesh (``ft.set_mesh``);
    ``axis_names`` (default: all) are the mesh axes ``f`` is mapped over, the others staying
    whole inside it; with ``f`` left out this is a decorator. The older positional form
    ``shard_map(f, mesh, in_specs, out_specs)`` works too. ``check_vma`` is accepted, but
    functrans does not check that outputs are replicated where ``out_specs`` says so. Left
    out, ``in_specs`` is inferred, on a mesh of ``Explicit`` axes, from the arguments'
    shardings: a concrete array placed on the mesh gives its spec, anything else (traced
    values carry no sharding in functrans) is replicated.

    >>> mesh = ft.sharding.make_mesh((2,), ("x",))
    >>> ft.shard_map(lambda b: lax.psum(b.sum(), "x"), mesh=mesh, in_specs=P("x"),
    ...              out_specs=P())(fnp.arange(4.0))
    Array(6., dtype=float64)
    >>> @ft.shard_map(in_specs=P("x"), out_specs=P("x"), mesh=mesh)
    ... def double(block):
    ...     return block * 2
    >>> double(fnp.arange(4.0))
    Array([0., 2., 4., 6.], dtype=float64)
    """
    if len(args) > 3:
        raise TypeError(f"shard_map takes at most 4 positional arguments (f, mesh, in_specs, "
                        f"out_specs), got {1 + len(args)}")
    if args:  # the positional form: shard_map(f, mesh, in_specs, out_specs)
        given = dict(zip(("mesh", "in_specs", "out_specs"), args))
        mesh = given.get("mesh", mesh)
        in_specs = given.get("in_specs", in_specs)
        out_specs = given.get("out_specs", out_specs)
    if out_specs is _NO_OUT_SPECS:
        raise TypeError("shard_map() missing 1 required keyword-only argument: 'out_specs'")
    if f is None:
        return lambda g: shard_map(g, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                   axis_names=axis_names, check_vma=check_vma)
    if not callable(f):
        raise TypeError(f"shard_map requires a callable for its first argument, but got {f!r:.60}"
                        f" of type {type(f).__name__}")
    if mesh is not None and not isinstance(mesh, (Mesh, AbstractMesh)):
        raise TypeError(f"shard_map: mesh must be a functrans.sharding.Mesh, got "
                        f"{type(mesh).__name__}")
    manual = frozenset((axis_names,) if isinstance(axis_names, str) else axis_names)
    what = f"shard_map({fun_name(f)})"
    cache = TraceCache()

    @functools.wraps(f)
    def sharded(*args):
        full = _call_mesh(mesh, what)
        run_mesh = _manual_mesh(full, manual, what)
        leaves, in_tree = tree_flatten(args)
        if in_specs is Infer:
            specs = [_inferred_spec(x, full, manual, what) for x in leaves]
        else:
            specs = lower_specs(list(match_prefix(in_specs, args, what, "in_specs",
                                                  "arguments")), args)
        stacked = set()  # arguments unreduced over some axes: their partial values, stacked
        for k, (x, spec) in enumerate(zip(leaves, specs)):
            names = stack_names(spec, run_mesh.axis_names)
            if names:
                leaves[k] = stack_argument(x, spec, names, run_mesh)
                specs[k] = stacked_spec(spec, names)
                stacked.add(k)
        sizes = run_mesh.shape
        labels = _leaf_labels(f, args, {})
        avals, canon = [], []
        for x, spec, label in zip(leaves, specs, labels):
            a = get_aval(x)
            c = canonical_spec(spec, a.ndim, f"{what} {label}")
            _check_names(c, run_mesh, f"{what} {label}", full)
            check_divisible(a.shape, c, sizes, f"{what} {label}")
            avals.append(a)
            canon.append(c)
        blocks = [ShapedArray(tuple(d // _prod(n, sizes) for d, n in zip(a.shape, c)),
                              a.dtype, a.weak_type) for a, c in zip(avals, canon)]
        key = (in_tree, tuple(avals), tuple(canon), config.key(), _axis_env.frames, run_mesh)
        out_store = {}

        def body(*bs):
            bs = [b[0] if k in stacked else b for k, b in enumerate(bs)]
            with use_abstract_mesh(full.abstract_mesh.update_axis_types(
                    {n: AxisType.Manual for n in run_mesh.axis_names})), \
                    shard_body(bs, canon, run_mesh.axis_names):
                out = f(*tree_unflatten(in_tree, list(bs)))
            out_leaves, out_store["tree"] = tree_flatten(out)
            o_specs = lower_specs(list(match_prefix(out_specs, out, what, "out_specs",
                                                    "outputs")), out)
            out_store["partial"] = {}
            for i, spec in enumerate(o_specs):
                names = stack_names(spec, run_mesh.axis_names)
                if names:  # each shard's partial value, stacked along a new dimension
                    out_store["partial"][i] = (spec, names)
                    out_leaves[i] = out_leaves[i][None]
                    o_specs[i] = stacked_spec(spec, names)
            out_store["specs"] = [canonical_spec(s, get_aval(o).ndim, f"{what} output {i}")
                                  for i, (o, s) in enumerate(zip(out_leaves, o_specs))]
            for i, s in enumerate(out_store["specs"]):
                _check_names(s, run_mesh, f"{what} output {i}", full)
            return out_leaves

        def make():
            jaxpr, consts = trace_per_shard(body, blocks, run_mesh, what)
            return jaxpr, consts, out_store["tree"], out_store["specs"], out_store["partial"]

        jaxpr, consts, out_tree, o_specs, partial = cache.get(key, make)
        outs = bind_shard_map(list(consts) + leaves, jaxpr=jaxpr, mesh=run_mesh,
                              in_specs=[replicated(c) for c in consts] + canon,
                              out_specs=o_specs, name=what)
        outs = [unstack_result(o, *partial[i], full) if i in partial else
                o._with_sharding(NamedSharding(full, _user_spec(s))) if type(o) is Array else o
                for i, (o, s) in enumerate(zip(outs, o_specs))]
        return tree_unflatten(out_tree, outs)

    return sharded


def _user_spec(canon) -> PartitionSpec:
    """A canonical spec as users write it (``P('x')``, not ``P(('x',), ())``)."""
    parts = [None if not n else n[0] if len(n) == 1 else n for n in canon]
    while parts and parts[-1] is None:
        parts.pop()
    return PartitionSpec(*parts)


def _call_mesh(mesh, what) -> Mesh:
    """The concrete mesh a call runs on: ``mesh``, or the context mesh."""
    ctx = get_mesh()
    if mesh is None:
        if ctx.empty:
            raise ValueError(f"{what}: no mesh= was given and the context mesh is empty; pass "
                             "mesh= or enter one with `with ft.set_mesh(mesh):`")
        return ctx
    if isinstance(mesh, AbstractMesh):  # functrans runs shards on devices: take the context's
        if ctx.empty or ctx.abstract_mesh != mesh:
            raise ValueError(f"{what}: mesh={mesh} is abstract (it has no devices) and the "
                             f"context mesh {ctx} does not match it; pass a Mesh")
        return ctx
    return mesh


def _manual_mesh(mesh: Mesh, manual, what) -> Mesh:
    """The mesh of the axes ``f`` is mapped over (``axis_names``; all when empty): the others
    stay whole in every block, so one device along each of them runs it."""
    if not manual or manual == set(mesh.axis_names):
        return mesh
    if not manual <= set(mesh.axis_names):
        raise ValueError(f"{what}: axis_names={set(manual)} must be a subset of the mesh's "
                         f"axis names {mesh.axis_names}")
    devs = mesh.devices
    for k in reversed(range(len(mesh.axis_names))):
        if mesh.axis_names[k] not in manual:
            devs = np.take(devs, 0, axis=k)
    names = tuple(n for n in mesh.axis_names if n in manual)
    return Mesh(devs, names, tuple(t for n, t in zip(mesh.axis_names, mesh.axis_types)
                                   if n in manual))


def _inferred_spec(x, mesh, manual, what):
    """in_specs left out: an argument's spec on ``mesh`` (replicated unless placed there)."""
    axes = manual or set(mesh.axis_names)
    if any(t is not AxisType.Explicit for n, t in zip(mesh.axis_names, mesh.axis_types)
           if n in axes):
        raise TypeError(f"{what}: in_specs must be given (a pytree of PartitionSpecs) when "
                        "the mesh axes are not all AxisType.Explicit")
    if type(x) is Array or type(x) is UnreducedArray:
        s = x.sharding
    else:
        s = traced_sharding(x)
        if s is None and traced_arguments_placed():
            # A value computed inside jit from placed arguments: functrans's traced values
            # carry no sharding to infer its spec from (JAX's types do).
            raise NotImplementedError(
                f"{what}: in_specs cannot be inferred for a value computed inside jit (only "
                "for the jit's own arguments, from their placement); pass in_specs=")
    if isinstance(s, NamedSharding) and same_grid(s.mesh, mesh):
        return s.spec
    return PartitionSpec()


def _prod(names, sizes) -> int:
    k = 1
    for n in names:
        k *= sizes[n]
    return k


def _check_names(spec, mesh, what, full=None):
    seen = set()
    for names in spec:
        for n in names:
            if n not in mesh.shape:
                if full is not None and n in full.shape:
                    raise ValueError(f"{what}: the partition spec names axis {n!r}, which is "
                                     f"not one of axis_names {mesh.axis_names} (the axes "
                                     "shard_map maps over)")
                raise ValueError(f"{what}: the partition spec names axis {n!r}, which is not "
                                 f"an axis of the mesh {mesh.axis_names}")
            if n in seen:
                raise ValueError(f"{what}: mesh axis {n!r} splits two dimensions")
            seen.add(n)
