"""jit over sharded arrays: a global program turned into one per-shard program with the
collectives it needs (an SPMD partitioner), run as ``shard_map`` runs its shards.

When a jitted function gets arguments placed on a mesh of several devices
(``device_put(x, NamedSharding(mesh, spec))``, ``jit(in_shardings=...)``) or its program
asks for a layout (``with_sharding_constraint``), jit partitions its traced program:

1. calls are inlined, then the equations are walked in order with each value's layout
   (``layouts.Layout``), starting from the arguments' shardings (others are replicated);
2. each equation's rule (``rules.py``) says the layouts it needs its inputs in and its
   outputs' layouts; an input in another layout is resharded on the way (all-gather,
   reduce-scatter, all-reduce, or a local slice), once per (value, layout);
3. the equation is applied to the shard's blocks (params that hold global sizes rewritten),
   which records the per-shard program;
4. results left as partial sums are all-reduced; the program runs on every device of the
   mesh (compiled like any jit program, shards on their threads, collectives at their
   rendezvous, across processes through MPI) and its results are Arrays placed on the mesh
   as their layouts say.

    >>> mesh = ft.make_mesh((2,), ("x",))
    >>> x = ft.device_put(fnp.arange(8.0).reshape(4, 2), ft.NamedSharding(mesh, P("x")))
    >>> y = ft.jit(lambda a: fnp.sin(a) * 2)(x)
    >>> y.sharding.spec
    PartitionSpec('x', None)
"""
from __future__ import annotations

import contextlib

import numpy as np

from functrans.core.array import Array
from functrans.core import compiler
from functrans.core.axis_env import extend_axis_env
from functrans.core.devices import get_backend, processes
from functrans.core.distributed_array import DistributedArray, from_local_blocks
from functrans.core.ir import has_effects
from functrans.core.memo import cache_on_jaxpr
from functrans.core.mesh import (Mesh, NamedSharding, PartitionSpec, canonical_spec, same_grid,
                                 shard_slices)
from functrans.core.trace import Tracer

from ..parallel.runtime import run_shards
from ..passes import inline_calls
from .emit import MeshMismatchError, partition
from .layouts import used

_HOST_STEPS = ("shard_map", "psum", "pmax", "pmin", "all_gather", "psum_scatter",
               "ppermute", "all_to_all", "axis_index")


def mesh_and_specs(jaxpr, args):
    """``(mesh, in_specs)`` when jit must partition ``jaxpr`` for these arguments (some are
    placed on a mesh of several devices, or the program constrains a layout), else None."""
    # The common case, decided without building specs: no argument carries a named
    # sharding and the program names no mesh.
    if not any(type(getattr(x, "_sharding", None)) is NamedSharding for x in args) \
            and _constraint_mesh(jaxpr) is None:
        return None
    mesh, specs, where = None, [], None
    for i, (x, v) in enumerate(zip(args, jaxpr.invars)):
        s = x._sharding if isinstance(x, Array) and not isinstance(x, Tracer) else None
        if type(s) is NamedSharding and isinstance(s.mesh, Mesh) and s.mesh.size > 1:
            if mesh is None:
                mesh, where = s.mesh, i
            elif not same_grid(s.mesh, mesh):
                raise MeshMismatchError(
                    f"jit: argument {where} is placed on {mesh} but argument {i} on "
                    f"{s.mesh}; every sharded argument of one program must be on the same "
                    "mesh (device_put one of them onto the other's)")
            specs.append(canonical_spec(s.spec, v.aval.ndim, f"argument {i}'s sharding"))
        else:
            specs.append(((),) * v.aval.ndim)
    constraint = _constraint_mesh(jaxpr)
    if constraint is not None:
        if mesh is not None and not same_grid(constraint, mesh) and \
                list(constraint.devices.flat) != list(mesh.devices.flat):
            raise MeshMismatchError(
                f"jit: argument {where} is placed on {mesh} but the program's "
                f"with_sharding_constraint names {constraint}; both must be the same mesh")
        if mesh is None:
            mesh = constraint
    if mesh is None or _has_host_parallelism(jaxpr):
        return None
    return mesh, tuple(specs)


@cache_on_jaxpr
def _constraint_mesh(jaxpr):
    meshes = list({e.params["sharding"].mesh for e in inline_calls(jaxpr).eqns
                   if e.prim.name == "sharding_constraint"})
    def apart(m):  # (meshes of the same devices in one order are regridded: emit.py)
        return list(m.devices.flat) != list(meshes[0].devices.flat)
    if any(apart(m) for m in meshes[1:]):
        a, b = meshes[0], next(m for m in meshes[1:] if apart(m))
        raise MeshMismatchError(f"jit: the program's with_sharding_constraint calls name two "
                                f"meshes, {a} and {b}; one program is partitioned over one")
    return next(iter(meshes), None)


@cache_on_jaxpr
def _has_host_parallelism(jaxpr):
    """Programs with their own shard_map/collectives run as they are (their shards split
    the arguments themselves)."""
    from functrans.core.ir import walk_jaxprs

    def visit(j):
        return any(e.prim.name in _HOST_STEPS or any(visit(s) for s in walk_jaxprs(e.params))
                   for e in j.eqns)
    return visit(jaxpr)


class Partitioned:
    """The executable of a partitioned program: call it with the global arguments.

    ``per_shard`` is the per-shard program, ``layouts`` the layout the partitioner chose for
    each equation output of the (inlined) global program, ``out_shardings`` the results'."""

    def __init__(self, jaxpr, mesh, in_specs, name):
        self.mesh, self.in_specs, self.name = mesh, in_specs, name
        self.global_jaxpr = inline_calls(jaxpr)
        self.per_shard, out_specs, self.layouts = partition(self.global_jaxpr, mesh, in_specs)
        self.out_specs = tuple(out_specs)
        full = bool(mesh.explicit_axes)  # JAX's explicit mode keeps every dimension's entry
        self.out_shardings = [NamedSharding(mesh, _public_spec(s, full)) for s in out_specs]
        self._out_types = [(a.dtype, a.weak_type) for a in jaxpr.out_avals]
        self._in_dtypes = [a.dtype for a in jaxpr.in_avals]

        self._direct = _runs_direct(self.per_shard, mesh, self.out_specs)
        self._across = not all(d.process_index == processes.index for d in mesh.devices.flat)
        self._exe = None

    def __call__(self, *args):
        if self._across:
            return self._run_across(args)
        args = [np.asarray(a._value if type(a) is Array else a, d)
                for a, d in zip(args, self._in_dtypes)]
        if self._direct is not None:
            outs = self._run_direct(args)
        else:
            from functrans.primitives.shard_map import shard_map_p
            outs = shard_map_p.impl(*args, jaxpr=self.per_shard, mesh=self.mesh,
                                    in_specs=self.in_specs, out_specs=self.out_specs,
                                    name=self.name)
        result = []
        for o, (dtype, weak), s in zip(outs, self._out_types, self.out_shardings):
            a = Array._wrap(np.asarray(o, dtype), weak)
            a._sharding = s
            result.append(a)
        return result


    def _run_direct(self, args):
        """Shards that do not communicate, run one after the other on this thread (each
        uses every core, as one device's program does: threads and BLAS are not split), and
        only those whose blocks some output takes (a replicated output needs one)."""
        from functrans.primitives.shard_map import _assemble
        exe = self._exe
        if exe is None or getattr(exe, "interim", False):  # still interpreting (tiered jit)
            exe = self._exe = compiler.backend_compile_and_load(
                get_backend(self.mesh.devices.flat[0].platform), self.per_shard, self.name)
        sizes, coords = self.mesh.shape, self.mesh.coords()
        results = {}
        for g in self._direct:
            c = coords[g]
            results[g] = exe(*[a[shard_slices(a.shape, spec, c, sizes)]
                               for a, spec in zip(args, self.in_specs)])
        return [_assemble(b, spec, sizes, [(coords[g], np.asarray(r[k]))
                                           for g, r in results.items()])
                for k, (b, spec) in enumerate(zip(self.per_shard.out_avals, self.out_specs))]


    def _run_across(self, args):
        """Under MPI: each process runs its devices' shards on their blocks (an argument
        spread over processes gives its own blocks, others are sliced) and keeps its blocks
        of the results, which are DistributedArrays: no process assembles a global value."""
        from functrans.primitives.shard_map import _shard_contexts, mesh_axes
        mesh, sizes, coords = self.mesh, self.mesh.shape, self.mesh.coords()
        flat = list(mesh.devices.flat)
        with mesh_axes(mesh):
            exe = compiler.backend_compile_and_load(get_backend(flat[0].platform),
                                                    self.per_shard, self.name)
        contexts, local = _shard_contexts(mesh)
        if not local:  # none of the mesh's devices is here: this process holds no blocks
            return [from_local_blocks(a.shape, dtype, weak, s, {}) for a, (dtype, weak), s in
                    zip(self.global_jaxpr.out_avals, self._out_types, self.out_shardings)]
        args = [a if isinstance(a, DistributedArray) else
                np.asarray(a._value if type(a) is Array else a, d)
                for a, d in zip(args, self._in_dtypes)]

        def run(i):
            g = local[i]
            ins = [a.block(flat[g]) if isinstance(a, DistributedArray) else
                   a[shard_slices(a.shape, spec, coords[g], sizes)]
                   for a, spec in zip(args, self.in_specs)]
            with contextlib.ExitStack() as stack:
                for n, k in contexts[i].sizes.items():
                    stack.enter_context(extend_axis_env(n, k))
                return [np.asarray(o) for o in exe(*ins)]

        results = run_shards(len(local), run, contexts)
        return [from_local_blocks(a.shape, dtype, weak, s,
                                  {flat[g]: np.asarray(r[k], dtype) for g, r in zip(local, results)})
                for k, (a, (dtype, weak), s) in enumerate(zip(
                    self.global_jaxpr.out_avals, self._out_types, self.out_shardings))]


def _runs_direct(per_shard, mesh, out_specs):
    """The shards to run one by one on the calling thread (None: run them as shard_map
    does, on their threads): possible when the program has no collectives or shard
    positions, no effects (skipped shards would skip them), and every device is this
    process's CPU device."""
    devices = list(mesh.devices.flat)
    if any(d.platform != "cpu" or d.process_index != processes.index for d in devices) or \
            any(has_effects(e) for e in per_shard.eqns) or _has_host_parallelism(per_shard):
        return None
    return _writers(mesh, out_specs)


def _writers(mesh, out_specs):
    """Shards whose blocks some output takes (shard_map's _assemble reads the block at
    coordinate 0 of the mesh axes an output's spec leaves out)."""
    return [g for g, c in enumerate(mesh.coords()) if any(
        all(c[n] == 0 for n in mesh.shape if n not in used(spec)) for spec in out_specs)]


@cache_on_jaxpr
def partitioned(jaxpr, mesh, in_specs, name):
    """The :class:`Partitioned` executable of ``jaxpr`` for arguments laid out as
    ``in_specs`` on ``mesh`` (built once per combination)."""
    return Partitioned(jaxpr, mesh, in_specs, name)


def _public_spec(spec, full=False) -> PartitionSpec:
    parts = [None if not names else names[0] if len(names) == 1 else names for names in spec]
    while parts and parts[-1] is None and not full:
        parts.pop()
    return PartitionSpec(*parts)
