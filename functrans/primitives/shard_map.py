"""``shard_map``: one per-shard program run on every device of a mesh (``pmap`` is built on it).

``outs = shard_map[jaxpr=... mesh=... in_specs=... out_specs=...] *args``: each input is split
into blocks as its spec says (per dimension, the mesh axes splitting it), every shard runs
``jaxpr`` on its blocks on its own device thread, and each output is assembled from the blocks
its spec names (for mesh axes an output spec leaves out, the shard at coordinate 0 supplies the
value). Collectives over the mesh axes inside ``jaxpr`` exchange values between the shards.

Its rules are the shared rules of call-like primitives (``transforms/autodiff/call_rules.py``) with
shard_map's specs: JVP (tangents split like their primals), partial evaluation (per-shard
residuals stacked over all mesh axes), transpose (replicated inputs' cotangents summed with
``psum``), batching (a new unsplit dimension)::

    >>> mesh = ft.sharding.make_mesh((1,), ("x",))
    >>> f = ft.shard_map(lambda b: b * 2, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    >>> f(fnp.arange(3.0))
    Array([0., 2., 4.], dtype=float64)
"""
from __future__ import annotations

import contextlib
import math

import numpy as np

from ..core import compiler, shard_env
from ..core.avals import ShapedArray
from ..core.axis_env import extend_axis_env
from ..core.buffer_pool import take
from ..core.devices import get_backend, processes
from ..core.eval import eval_jaxpr
from ..core.mesh import shard_slices
from ..core.staging import trace_to_jaxpr
from ..core.trace import Primitive, get_aval, set_current_trace
from ..transforms.autodiff.jvp import instantiate
from ..transforms.autodiff.partial_eval import partial_eval_jaxpr
from ..transforms.autodiff.transpose import is_undefined, transpose_jaxpr
from ..transforms.batching import batch_jaxpr, moveaxis
from ..transforms.autodiff.call_rules import CallRules
from . import collectives as C
from . import elementwise as E
from . import structural as S


def _factor(names, sizes) -> int:
    return math.prod(sizes[n] for n in names)


def global_shape(shard_shape, spec, sizes) -> tuple:
    return tuple(d * _factor(names, sizes) for d, names in zip(shard_shape, spec))


def _sub_axes(params):
    return tuple(params["mesh"].shape.items())


@contextlib.contextmanager
def mesh_axes(mesh):
    """Bind the mesh's axis names while (re)tracing a per-shard program."""
    with contextlib.ExitStack() as stack:
        for name, size in mesh.shape.items():
            stack.enter_context(extend_axis_env(name, size))
        yield


def io_sizes(mesh, local_io) -> dict:
    """Mesh axis sizes as the arguments see them: with ``local_io`` (pmap across processes,
    as in JAX) each process passes and receives only the blocks of its own devices."""
    if not local_io:
        return mesh.shape
    (axis,) = mesh.axis_names
    return {axis: sum(d.process_index == processes.index for d in mesh.devices.flat)}


def _abstract_eval(*avals, jaxpr, mesh, in_specs, out_specs, name, local_io=False):
    sizes = io_sizes(mesh, local_io)
    for i, (a, spec, b) in enumerate(zip(avals, in_specs, jaxpr.in_avals)):
        want = global_shape(b.shape, spec, sizes)
        if tuple(a.shape) != want or a.dtype != b.dtype:
            raise TypeError(f"{name}: argument {i} has type {a.str_short()}, but the per-shard "
                            f"program expects blocks {b.str_short()} of a {b.dtype.name}"
                            f"{list(want)} array")
    return [ShapedArray(global_shape(b.shape, spec, sizes), b.dtype, b.weak_type)
            for b, spec in zip(jaxpr.out_avals, out_specs)]


def _shard_contexts(mesh):
    """The contexts of this process's shards of ``mesh`` and their global indices, from the
    SPMD runtime (``transforms/parallel/runtime.py``, reached through ``core/shard_env.py``:
    primitives know no backend)."""
    return shard_env.shard_contexts(mesh)


def _impl(*args, jaxpr, mesh, in_specs, out_specs, name, local_io=False):
    backend = get_backend(mesh.devices.flat[0].platform)
    with mesh_axes(mesh):
        exe = compiler.backend_compile_and_load(backend, jaxpr, name)
    device_context = getattr(backend, "device_context", None)
    flat_devices = list(mesh.devices.flat)
    contexts, local = _shard_contexts(mesh)
    sizes, coords = mesh.shape, mesh.coords()
    if local_io:  # blocks are numbered among this process's devices
        sizes = io_sizes(mesh, True)
        coords = {g: {mesh.axis_names[0]: i} for i, g in enumerate(local)}
        coords = [coords.get(g) for g in range(mesh.size)]
    args = [np.asarray(a) for a in args]

    def run(i):
        c = coords[local[i]]
        ins = [a[shard_slices(a.shape, spec, c, sizes)] for a, spec in zip(args, in_specs)]
        with contextlib.ExitStack() as stack:
            for n, s in contexts[i].sizes.items():
                stack.enter_context(extend_axis_env(n, s))
            if device_context is not None:  # allocations and kernels on this shard's device
                stack.enter_context(device_context(flat_devices[local[i] % len(flat_devices)]))
            return [np.asarray(o) for o in exe(*ins)]

    results = shard_env.run_shards(len(local), run, contexts)
    if local_io:
        by_shard = dict(zip(local, results))
        return [_assemble(b, spec, sizes, [(coords[g], by_shard[g][k]) for g in local])
                for k, (b, spec) in enumerate(zip(jaxpr.out_avals, out_specs))]
    if len(local) < mesh.size:  # other processes hold the other blocks
        gathered = processes.communicator.allgather(dict(zip(local, results)))
        by_shard = {g: r for part in gathered for g, r in part.items()}
    else:
        by_shard = dict(zip(local, results))
    return [_assemble(b, spec, sizes, [(coords[g], by_shard[g][k]) for g in range(mesh.size)])
            for k, (b, spec) in enumerate(zip(jaxpr.out_avals, out_specs))]


def _assemble(block_aval, spec, sizes, blocks):
    """The array made of ``(coords, block)`` pairs; for mesh axes the spec leaves out, the
    block at coordinate 0 is taken."""
    shape = global_shape(block_aval.shape, spec, sizes)
    named = {n for names in spec for n in names}
    writers = [(c, block) for c, block in blocks
               if all(c[n] == 0 for n in sizes if n not in named)]
    if len(writers) == 1 and np.shape(writers[0][1]) == shape:  # one block is the whole
        return np.asarray(writers[0][1], block_aval.dtype)
    out = take(shape, block_aval.dtype)  # a large one reused once no array holds it
    for c, block in blocks:
        if all(c[n] == 0 for n in sizes if n not in named):  # one writer per block
            out[shard_slices(out.shape, spec, c, sizes)] = block
    return out


shard_map_p = Primitive("shard_map", impl=_impl, abstract_eval=_abstract_eval)
shard_map_p.multiple_results = True
shard_map_p.higher_order = True
shard_map_p.host_only = True  # starts device threads; never inside a kernel
shard_map_p.sub_axes = _sub_axes


def bind_shard_map(args, *, jaxpr, mesh, in_specs, out_specs, name, local_io=False):
    return shard_map_p.bind_all(*args, jaxpr=jaxpr, mesh=mesh, in_specs=tuple(in_specs),
                                out_specs=tuple(out_specs), name=name, local_io=local_io)


# ---- the rules (transforms/autodiff/call_rules.py), with shard_map's own specs ---------------------------
class _ShardMapRules(CallRules):
    """JVP: tangents are split exactly like their primals. Partial evaluation, transpose and
    batching differ from a plain call (below)."""

    def retrace(self, params):
        return mesh_axes(params["mesh"])

    def jvp_params(self, params, jaxpr, nonzeros, out_nonzeros):
        in_specs, out_specs = params["in_specs"], params["out_specs"]
        return dict(params, jaxpr=jaxpr, name=f"jvp({params['name']})",
                    in_specs=in_specs + tuple(s for s, nz in zip(in_specs, nonzeros) if nz),
                    out_specs=out_specs + tuple(s for s, nz in zip(out_specs, out_nonzeros)
                                                if nz))

    def partial_eval(self, trace, prim, args, params):
        return _partial_eval(trace, prim, args, params)

    def transpose(self, cts, *args, **params):
        return _transpose(cts, *args, **params)

    def batch(self, axis, vals, dims, **params):
        return _batch(axis, vals, dims, **params)


# ---- partial evaluation: residuals stacked over all mesh axes ---------------------------------
def _residual_spec(mesh, aval):
    return (tuple(mesh.axis_names),) + ((),) * aval.ndim


def _expand(x):
    shape = get_aval(x).shape
    return S.broadcast_in_dim_p.bind1(x, shape=(1,) + tuple(shape),
                                      broadcast_dimensions=tuple(range(1, len(shape) + 1)))


def _squeeze(x):
    return S.squeeze_p.bind1(x, dimensions=(0,))


def _partial_eval(trace, prim, args, params):
    jaxpr, mesh = params["jaxpr"], params["mesh"]
    in_specs, out_specs = params["in_specs"], params["out_specs"]
    unknowns = [trace.is_unknown(x) for x in args]
    with mesh_axes(mesh):
        jaxpr_k, jaxpr_u, out_unknowns, num_res = partial_eval_jaxpr(jaxpr, unknowns)
        n_known = len(jaxpr_k.outvars) - num_res
        res_avals = jaxpr_k.out_avals[n_known:]

        def known(*xs):
            outs = eval_jaxpr(jaxpr_k, *xs)
            return outs[:n_known] + [_expand(r) for r in outs[n_known:]]

        def unknown(*xs):
            return eval_jaxpr(jaxpr_u, *[_squeeze(r) for r in xs[:num_res]], *xs[num_res:])

        known_j = trace_to_jaxpr(known, jaxpr_k.in_avals, name="partial_eval")
        stacked = [ShapedArray((1,) + tuple(a.shape), a.dtype, a.weak_type) for a in res_avals]
        unknown_j = trace_to_jaxpr(unknown, stacked + jaxpr_u.in_avals[num_res:],
                                   name="partial_eval")
    res_specs = tuple(_residual_spec(mesh, a) for a in res_avals)
    known_args = [x for x, u in zip(args, unknowns) if not u]
    with set_current_trace(trace.parent):
        known_outs = bind_shard_map(
            known_args, jaxpr=known_j, mesh=mesh,
            in_specs=[s for s, u in zip(in_specs, unknowns) if not u],
            out_specs=[s for s, u in zip(out_specs, out_unknowns) if not u] + list(res_specs),
            name=params["name"], local_io=params["local_io"])
    residuals = known_outs[n_known:]
    unknown_args = [x for x, u in zip(args, unknowns) if u]
    unknown_outs = trace.stage(prim, residuals + unknown_args, dict(
        params, jaxpr=unknown_j,
        in_specs=res_specs + tuple(s for s, u in zip(in_specs, unknowns) if u),
        out_specs=tuple(s for s, u in zip(out_specs, out_unknowns) if u)))
    k, u = iter(known_outs[:n_known]), iter(unknown_outs)
    return [next(u) if unk else next(k) for unk in out_unknowns]


# ---- transpose ------------------------------------------------------------------------------
def _missing_axes(mesh, spec) -> tuple:
    named = {n for names in spec for n in names}
    return tuple(n for n in mesh.axis_names if n not in named)


def _only_at_origin(ct, axes):
    """``ct`` on the shards at coordinate 0 along ``axes``, zero elsewhere: the forward
    program took a replicated output from those shards only."""
    aval = get_aval(ct)
    at_origin = None
    for a in axes:
        here = E.eq_p.bind1(C.axis_index_p.bind1(axis_name=a), np.int32(0))
        at_origin = here if at_origin is None else E.and_p.bind1(at_origin, here)
    pred = S.broadcast_in_dim_p.bind1(at_origin, shape=aval.shape, broadcast_dimensions=())
    zeros = S.broadcast_in_dim_p.bind1(np.zeros((), aval.dtype)[()], shape=aval.shape,
                                       broadcast_dimensions=())
    return E.select_n_p.bind1(pred, zeros, ct)


def _transpose(cts, *args, jaxpr, mesh, in_specs, out_specs, name, local_io=False):
    linear = [is_undefined(x) for x in args]
    nonlin = [x for x in args if not is_undefined(x)]
    nonlin_avals = [a for a, lin in zip(jaxpr.in_avals, linear) if not lin]
    lin_specs = [s for s, lin in zip(in_specs, linear) if lin]
    with mesh_axes(mesh):
        t_jaxpr = transpose_jaxpr(jaxpr, linear)

        def body(*xs):
            ins, cts_ = xs[:len(nonlin_avals)], xs[len(nonlin_avals):]
            cts_ = [_only_at_origin(c, _missing_axes(mesh, s)) if _missing_axes(mesh, s) else c
                    for c, s in zip(cts_, out_specs)]
            res = eval_jaxpr(t_jaxpr, *ins, *cts_)
            return [C.psum_p.bind1(r, axis_name=_missing_axes(mesh, s))
                    if _missing_axes(mesh, s) else r for r, s in zip(res, lin_specs)]

        body_j = trace_to_jaxpr(body, nonlin_avals + list(jaxpr.out_avals), name="transpose")
    ct_in = bind_shard_map(nonlin + [instantiate(ct) for ct in cts], jaxpr=body_j, mesh=mesh,
                           in_specs=[s for s, lin in zip(in_specs, linear) if not lin]
                           + list(out_specs), out_specs=lin_specs, name=f"transpose({name})",
                           local_io=local_io)
    it = iter(ct_in)
    return [next(it) if lin else None for lin in linear]


# ---- batching: the batch dimension becomes a new leading, unsplit dimension --------------------
def _batch(axis, vals, dims, *, jaxpr, mesh, in_specs, out_specs, name, local_io=False):
    vals = [v if d is None else moveaxis(v, d, 0) for v, d in zip(vals, dims)]
    in_dims = [None if d is None else 0 for d in dims]
    specs = [s if d is None else ((),) + s for s, d in zip(in_specs, dims)]
    with mesh_axes(mesh):
        batched, _ = batch_jaxpr(jaxpr, axis, in_dims, 0)
    outs = bind_shard_map(vals, jaxpr=batched, mesh=mesh, in_specs=specs,
                          out_specs=[((),) + s for s in out_specs], name=f"vmap({name})",
                          local_io=local_io)
    return outs, [0] * len(outs)


_ShardMapRules(shard_map_p)
