"""``pmap`` and ``shard_map``: run one program on many devices, with JAX's signatures.

Both trace the per-shard program once per argument signature and bind the ``shard_map``
primitive (``functrans.primitives.shard_map``), so they compose with every transformation
(``grad(pmap(f))``, ``pmap(grad(f))``, ``vmap(pmap(f))``, ``jit(shard_map(...))``) and their
collectives (``lax.psum`` ...) are real exchanges between device threads::

    >>> ft.pmap(lambda x: x / lax.psum(x, "i"), axis_name="i")(fnp.array([1.0, 3.0]))
    Array([0.25, 0.75], dtype=float64)
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from .core.api_util import fun_name, match_prefix, merge_static, split_static
from .core.array import Array
from .core.avals import ShapedArray
from .core.axis_env import _env as _axis_env
from .core.config import config
from .core.devices import devices as all_devices, local_devices, processes
from .core.mesh import (AbstractMesh, AxisType, Mesh, NamedSharding, PartitionSpec,
                        canonical_spec, check_divisible, get_mesh, use_abstract_mesh)
from .core.staging import hoist_tracer_consts, trace_to_jaxpr
from .core.trace import get_aval
from .core.trace import EVAL_TRACE, _state
from .primitives.structural import squeeze_p
from .primitives.shard_map import bind_shard_map, mesh_axes, shard_map_p
from .transforms.jit.api import _fast_key as _jit_fast_key
# The SPMD runtime shard_map's impl runs on (it installs itself into core/shard_env.py).
from .transforms.parallel import runtime as _spmd_runtime  # noqa: F401
from .transforms import ops
from .transforms.batching import (_axis_size, _check_axes_spec, _leaf_labels,
                                  _normalize_in_axis)
from .core.tree import tree_flatten, tree_unflatten


class _AnonymousAxis:
    """The axis of a pmap without ``axis_name``: no collective can name it."""

    def __repr__(self):
        return "<anonymous pmap axis>"


class _TraceCache:
    """Per-signature traced per-shard programs (like jit's cache), safe across threads."""

    def __init__(self):
        self.entries, self.lock = {}, threading.Lock()

    def get(self, key, make):
        entry = self.entries.get(key)
        if entry is None:
            with self.lock:
                entry = self.entries.get(key)
                if entry is None:
                    entry = make()
                    if not entry[1]:  # closures over outer tracers can't be reused
                        self.entries[key] = entry
                        if len(self.entries) > config.jit_cache_size:
                            self.entries.pop(next(iter(self.entries)))
        return entry


def _trace_per_shard(body, block_avals, mesh, name):
    with mesh_axes(mesh):
        jaxpr = trace_to_jaxpr(body, list(block_avals), name=name)
    return hoist_tracer_consts(jaxpr)


def _replicated(x) -> tuple:
    return ((),) * get_aval(x).ndim


def pmap(fun, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=(),
         global_arg_shapes=None):
    """Map ``fun`` over a leading (or ``in_axes``) axis, one slice per device, in parallel.

    The mapped size must not exceed the number of (local) devices; collectives over
    ``axis_name`` communicate between the devices. The result is sharded over them.

    >>> ft.pmap(lambda x: x * 2)(fnp.arange(2.0))
    Array([0., 2.], dtype=float64)
    """
    what = f"pmap({fun_name(fun)})"
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    _check_axes_spec(in_axes, what, "in_axes")
    _check_axes_spec(out_axes, what, "out_axes")
    if backend not in (None, "cpu"):
        from .core.devices import check_backend
        check_backend(backend)
    static = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) \
        else tuple(static_broadcasted_argnums)
    name = axis_name if axis_name is not None else _AnonymousAxis()
    cache = _TraceCache()
    fast: dict = {}  # positional array arguments seen before -> runner (as jit's fast path)
    simple_axes = all(a in (0, None) for a in tree_flatten(
        in_axes, is_leaf=lambda x: x is None)[0]) and not static

    @functools.wraps(fun)
    def pmapped(*args, **kwargs):
        if not kwargs and simple_axes and _state.trace is EVAL_TRACE:
            key = _fast_key(args)
            runner = fast.get(key) if key is not None else None
            if runner is not None:
                return runner(args)
        dyn_args, dyn_kwargs, static_args, _ = split_static(args, kwargs, static, ())
        leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
        axes = match_prefix((in_axes, 0), (dyn_args, dyn_kwargs), what, "in_axes", "arguments")
        labels = _leaf_labels(fun, dyn_args, dyn_kwargs)
        axes = [_normalize_in_axis(a, x, lab, what) for a, x, lab in zip(axes, leaves, labels)]
        n = _axis_size(leaves, axes, labels, axis_size, what)
        devs, local_io = _pmap_devices(devices, n, what)
        mesh = Mesh(np.array(devs, dtype=object), (name,))
        xs = [x if a is None else ops.moveaxis(x, a, 0) if a else x
              for x, a in zip(leaves, axes)]
        avals = [get_aval(x) for x in xs]
        blocks = [a if ax is None else ShapedArray((1,) + tuple(a.shape[1:]), a.dtype,
                                                   a.weak_type) for a, ax in zip(avals, axes)]
        key = (in_tree, tuple(avals), tuple(a is None for a in axes), static_args,
               config.key(), _axis_env.frames, mesh)
        out_store = {}

        def body(*bs):
            ins = [b if ax is None else squeeze_p.bind1(b, dimensions=(0,))
                   for b, ax in zip(bs, axes)]
            a, k = tree_unflatten(in_tree, ins)
            out = fun(*merge_static(a, static_args), **k)
            out_leaves, tree = tree_flatten(out)
            o_axes = match_prefix(out_axes, out, what, "out_axes", "outputs")
            out_store["tree"], out_store["axes"] = tree, o_axes
            return [o if ax is None else ops.broadcast(o, (1,) + get_aval(o).shape, tuple(
                range(1, get_aval(o).ndim + 1))) for o, ax in zip(out_leaves, o_axes)]

        def make():
            jaxpr, consts = _trace_per_shard(body, blocks, mesh, f"pmap({fun_name(fun)})")
            return jaxpr, consts, out_store["tree"], out_store["axes"]

        jaxpr, consts, out_tree, o_axes = cache.get(key, make)
        in_specs = [_replicated(c) for c in consts] + [
            _replicated(x) if ax is None else ((name,),) + ((),) * (get_aval(x).ndim - 1)
            for x, ax in zip(xs, axes)]
        out_specs = [((),) * a.ndim if ax is None else ((name,),) + ((),) * (a.ndim - 1)
                     for a, ax in zip(jaxpr.out_avals, o_axes)]
        params = dict(jaxpr=jaxpr, mesh=mesh, in_specs=tuple(in_specs),
                      out_specs=tuple(out_specs), name=f"pmap({fun_name(fun)})",
                      local_io=local_io)
        finish = _outputs(o_axes, out_tree, NamedSharding(mesh, PartitionSpec(name)), what)
        if (not kwargs and simple_axes and not consts and _state.trace is EVAL_TRACE
                and len(leaves) == len(args) and len(fast) < config.jit_cache_size):
            key = _fast_key(args)
            if key is not None:
                fast[key] = lambda a: finish(shard_map_p.bind(*a, **params))
        return finish(shard_map_p.bind(*consts, *xs, **params))

    return pmapped


def _outputs(o_axes, out_tree, sharding, what):
    """Put each output's mapped axis where out_axes says and rebuild the output tree."""
    def finish(outs):
        result = []
        for o, ax in zip(outs, o_axes):
            if ax is not None:
                nd = get_aval(o).ndim
                if not -nd <= ax < nd:
                    raise ValueError(f"{what}: out_axes {ax} is out of range for an output "
                                     f"of rank {nd}")
                if ax % nd:
                    o = ops.moveaxis(o, 0, ax % nd)
                elif type(o) is Array:
                    o = o._with_sharding(sharding)
            result.append(o)
        return tree_unflatten(out_tree, result)
    return finish


def _fast_key(args):
    """jit's cheap signature of positional arrays, plus what decides the devices."""
    key = _jit_fast_key(args)
    return None if key is None else key + (config.num_cpu_devices, processes.count)


def _pmap_devices(devices, n, what):
    """The devices to map over, and whether arguments hold only this process's blocks."""
    if devices is not None:
        devs = list(devices)
        if len(devs) != n:
            raise ValueError(f"{what}: the mapped axis has size {n} but {len(devs)} devices "
                             "were given; they must match")
        return devs, False
    devs = local_devices()
    if processes.count > 1 and n == len(devs):
        # As in JAX: across processes each passes its local devices' slices and the
        # collectives span every process's devices.
        return all_devices(), True
    if n > len(devs):
        raise ValueError(f"{what}: the mapped axis has size {n}, more than the {len(devs)} "
                         f"available devices; use a size <= {len(devs)} (vmap inside pmap "
                         "for more), or raise ft.config.update('num_cpu_devices', n)")
    if n < 1:
        raise ValueError(f"{what}: the mapped axis has size 0; pmap needs at least one slice")
    return devs[:n], False


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
    cache = _TraceCache()

    @functools.wraps(f)
    def sharded(*args):
        full = _call_mesh(mesh, what)
        run_mesh = _manual_mesh(full, manual, what)
        leaves, in_tree = tree_flatten(args)
        if in_specs is Infer:
            specs = [_inferred_spec(x, full, manual, what) for x in leaves]
        else:
            specs = match_prefix(in_specs, args, what, "in_specs", "arguments")
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
            with use_abstract_mesh(full.abstract_mesh.update_axis_types(
                    {n: AxisType.Manual for n in run_mesh.axis_names})):
                out = f(*tree_unflatten(in_tree, list(bs)))
            out_leaves, out_store["tree"] = tree_flatten(out)
            o_specs = match_prefix(out_specs, out, what, "out_specs", "outputs")
            out_store["specs"] = [canonical_spec(s, get_aval(o).ndim, f"{what} output {i}")
                                  for i, (o, s) in enumerate(zip(out_leaves, o_specs))]
            for i, s in enumerate(out_store["specs"]):
                _check_names(s, run_mesh, f"{what} output {i}", full)
            return out_leaves

        def make():
            jaxpr, consts = _trace_per_shard(body, blocks, run_mesh, what)
            return jaxpr, consts, out_store["tree"], out_store["specs"]

        jaxpr, consts, out_tree, o_specs = cache.get(key, make)
        outs = bind_shard_map(list(consts) + leaves, jaxpr=jaxpr, mesh=run_mesh,
                              in_specs=[_replicated(c) for c in consts] + canon,
                              out_specs=o_specs, name=what)
        outs = [o._with_sharding(NamedSharding(full, _user_spec(s)))
                if type(o) is Array else o for o, s in zip(outs, o_specs)]
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
    s = x.sharding if type(x) is Array else None
    if isinstance(s, NamedSharding) and s.mesh == mesh:
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


__all__ = ["pmap", "shard_map"]
