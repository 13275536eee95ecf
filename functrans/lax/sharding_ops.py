"""``with_sharding_constraint``: ask for a value's sharding (``jax.lax.with_sharding_constraint``).

A concrete array is placed as ``device_put`` places it. Inside a transformation (jit, grad,
vmap) a ``NamedSharding`` over more than one device is recorded in the program as a
``sharding_constraint`` equation, which jit's partitioner follows (the value is laid out so at
that point: ``transforms/partition``); other shardings leave a traced value as it is, as
``device_put`` does there. Values never change.

At import this module also installs into core's ``device_put`` (``core/placement.py``) the
step core cannot take itself: an array spread over processes (MPI) moved to another layout of
its mesh is resharded by a partitioned program, ``jit`` of ``with_sharding_constraint``.

    >>> x = with_sharding_constraint(fnp.arange(4.0), ft.sharding.SingleDeviceSharding(
    ...     ft.devices()[0]))
    >>> x.sharding == ft.sharding.SingleDeviceSharding(ft.devices()[0])
    True
"""
from __future__ import annotations

from ..core import placement as _placement
from ..core.devices import Device
from ..core.mesh import (NamedSharding, PartitionSpec, Sharding, SingleDeviceSharding,
                         context_sharding, on_context_devices)
from ..core.trace import Tracer
from ..core.placement import device_put
from ..primitives.sharding_constraint import sharding_constraint_p
from ..core.tree import broadcast_prefix, tree_flatten, tree_unflatten

__all__ = ["with_out_sharding", "with_sharding_constraint"]


class _NoMeshError(RuntimeError, TypeError):
    """A bare spec without a mesh: JAX raises RuntimeError; functrans raised TypeError before
    it had mesh contexts, so callers catching either still do."""


def with_sharding_constraint(x, shardings):
    """``x`` (a pytree of arrays) with ``shardings``: one ``Sharding`` (or ``Device``) for
    every leaf, or a pytree prefix of ``x`` of them. A bare ``PartitionSpec`` means
    ``NamedSharding(mesh, spec)`` on the mesh ``ft.set_mesh`` made current.

    >>> mesh = ft.sharding.Mesh(np.array(ft.devices()[:2]), ("i",))
    >>> y = with_sharding_constraint(fnp.ones(4), ft.sharding.NamedSharding(mesh, P("i")))
    >>> [s.data.shape for s in y.addressable_shards]
    [(2,), (2,)]
    >>> ft.jit(lambda v: with_sharding_constraint(v * 2, ft.devices()[0]))(fnp.ones(2))
    Array([2., 2.], dtype=float64)
    """
    leaves, tree = tree_flatten(x)
    if isinstance(shardings, PartitionSpec):  # (a tuple: it must not broadcast as a pytree)
        specs = [shardings] * len(leaves)
    else:
        specs = broadcast_prefix(shardings, x, what="with_sharding_constraint shardings")
    out = []
    for i, (leaf, s) in enumerate(zip(leaves, specs)):
        if isinstance(s, Device):
            s = SingleDeviceSharding(s)
        elif isinstance(s, PartitionSpec):
            s = context_sharding(s, "with_sharding_constraint", _NoMeshError)
        elif s is not None and not isinstance(s, Sharding):
            raise TypeError(
                f"with_sharding_constraint: leaf {i} of shardings is a {type(s).__name__} "
                f"({s!r:.60}); expected a Sharding such as NamedSharding(mesh, spec), a "
                "PartitionSpec (under ft.set_mesh) or a Device")
        if isinstance(leaf, Tracer) and isinstance(s, NamedSharding) and s.mesh.size > 1:
            s.shard_shape(leaf.shape)  # checks the rank and that the spec divides the shape
            out.append(sharding_constraint_p.bind1(leaf, sharding=s))
        else:
            out.append(device_put(leaf, s))
    return tree_unflatten(tree, out)


def with_out_sharding(fun, args, out_sharding, name: str):
    """``fun(*args)`` with its result laid out as ``out_sharding`` (JAX's ``out_sharding=`` of
    a product or a reshape: it says how the result is split where the operands' shardings
    leave it ambiguous). Concrete operands: the global value is computed and placed there.
    Traced ones: the result is constrained to it, and jit's partitioner computes a product
    feeding such a constraint as partial sums, reduced as the constraint asks.

    >>> with ft.set_mesh(ft.make_mesh((2,), ("x",))):
    ...     y = with_out_sharding(lambda a: a * 2, (fnp.ones((2, 2)),), P("x"), "f")
    >>> y.sharding.spec
    PartitionSpec('x')
    """
    from ..core.array import Array
    if isinstance(out_sharding, PartitionSpec):
        out_sharding = context_sharding(out_sharding, f"{name} out_sharding", _NoMeshError)
    elif not isinstance(out_sharding, Sharding):
        raise TypeError(f"{name}: out_sharding must be a PartitionSpec or a Sharding, got "
                        f"{type(out_sharding).__name__}: {out_sharding!r:.60}")
    out_sharding = on_context_devices(out_sharding)
    leaves = tree_flatten(args)[0]
    if not any(isinstance(x, Tracer) for x in leaves):
        if getattr(getattr(out_sharding, "spec", None), "unreduced", None):
            return _partial_sums(fun, args, out_sharding)
        # Operands are global values: compute the whole result, then place it.
        args = tree_unflatten(tree_flatten(args)[1], [
            x._with_sharding(None) if type(x) is Array else x for x in leaves])
        return device_put(fun(*args), out_sharding)
    return with_sharding_constraint(fun(*args), out_sharding)


def _partial_sums(fun, args, out_sharding):
    """The result of a product left unreduced over some mesh axes: each device's block is
    the product of the operands restricted to its part of the dimensions split over those
    axes (the contraction over that part), as JAX's devices compute it locally."""
    import numpy as np
    from ..core.mesh import block_index, canonical_spec, shard_slices
    from ..core.array import Array
    from ..core.unreduced import from_blocks
    mesh, unreduced = out_sharding.mesh, out_sharding.spec.unreduced
    sizes = mesh.shape
    leaves, tree = tree_flatten(args)

    def restricted(x, coords):
        s = getattr(x, "_sharding", None)
        if not isinstance(s, NamedSharding) or not isinstance(x, Array):
            return x
        v = np.array(x._value)
        for dim, names in enumerate(canonical_spec(s.spec, v.ndim, "operand")):
            names = tuple(n for n in names if n in unreduced)
            if names:
                i, k = block_index(names, coords, sizes)
                b = v.shape[dim] // k
                keep = np.zeros(v.shape[dim], bool)
                keep[i * b:(i + 1) * b] = True
                v[(slice(None),) * dim + (~keep,)] = 0
        return Array(v, x.weak_type)

    results, blocks, out = {}, {}, None
    for d, c in zip(mesh.devices.flat, mesh.coords()):
        key = tuple(c[n] for n in sorted(unreduced))
        if key not in results:
            out = fun(*tree_unflatten(tree, [restricted(x, c) for x in leaves]))
            results[key] = np.asarray(out)
        full = results[key]
        spec = canonical_spec(out_sharding.spec, full.ndim, "out_sharding")
        blocks[d] = np.array(full[shard_slices(full.shape, spec, c, sizes)])
    full = next(iter(results.values()))
    return from_blocks(blocks, full.shape, full.dtype, out.weak_type, out_sharding)


def _reshard_across(x, sharding):
    """An array spread over processes laid out anew: a partitioned program moves the blocks."""
    from ..transforms.jit.api import jit
    if not isinstance(sharding, NamedSharding) or sharding.mesh != x.sharding.mesh:
        raise ValueError(f"device_put: an array spread over processes on {x.sharding} can be "
                         f"moved to another layout of the same mesh only, not to {sharding}")
    return jit(lambda v: with_sharding_constraint(v, sharding))(x)


_placement.install_reshard(_reshard_across)
