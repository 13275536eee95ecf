"""Meshes and shardings, as in ``jax.sharding``.

    >>> mesh = ft.sharding.make_mesh((2,), ("x",))
    >>> x = ft.device_put(fnp.arange(4.0), ft.sharding.NamedSharding(mesh, P("x")))
    >>> [s.data.tolist() for s in x.addressable_shards]
    [[0.0, 1.0], [2.0, 3.0]]

A functrans array holds its global value whatever its sharding: a sharding says where the
value lives (``x.sharding``, ``x.addressable_shards``), never what a program computes. So
``reshard``, ``auto_axes`` and ``explicit_axes`` place concrete values and leave traced ones
as they are; abstract values (``ft.typeof(x)``) are never split.
"""
from __future__ import annotations

import contextlib
import functools

from .core.devices import Device
from .core.mesh import (AbstractMesh, AxisType, Mesh, NamedSharding, P,  # noqa: F401
                        PartitionSpec, Sharding, SingleDeviceSharding, context_sharding,
                        get_abstract_mesh, get_mesh, make_mesh, set_mesh, use_abstract_mesh)
from .core.trace import Tracer, get_aval
from .core.placement import device_put
from .core.tree import broadcast_prefix, tree_flatten, tree_unflatten

__all__ = ["AbstractMesh", "AxisType", "Mesh", "NamedSharding", "P", "PartitionSpec",
           "Sharding", "SingleDeviceSharding", "auto_axes", "explicit_axes",
           "get_abstract_mesh", "get_mesh", "make_mesh", "reshard", "set_mesh",
           "use_abstract_mesh", "use_mesh"]


@contextlib.contextmanager
def use_mesh(mesh: Mesh):
    """``with use_mesh(mesh):`` is ``with set_mesh(mesh):`` (JAX 0.6-0.7's name, which JAX
    0.10.2's ``jax.sharding`` no longer has; kept so that programs written for it run).

    >>> with ft.sharding.use_mesh(ft.make_mesh((2,), ("x",))):
    ...     ft.sharding.get_mesh().shape
    {'x': 2}
    """
    with set_mesh(mesh):
        yield


def _per_leaf(xs, shardings, what: str) -> list:
    """One sharding entry per leaf of ``xs`` from the prefix ``shardings`` (a bare spec or
    sharding applies to every leaf)."""
    leaves = tree_flatten(xs)[0]
    if shardings is None or isinstance(shardings, (PartitionSpec, Sharding, Device)):
        return [shardings] * len(leaves)
    return broadcast_prefix(shardings, xs, what=what)  # (a PartitionSpec is a pytree leaf)


def _resolve(s, what: str, explicit_only: bool = True) -> NamedSharding:
    """A NamedSharding from a sharding argument of ``what``: a spec names the context mesh."""
    if isinstance(s, PartitionSpec):
        mesh = get_mesh()
        auto = [n for names in s for n in ((names,) if isinstance(names, str) else names or ())
                if n in mesh.shape and mesh.axis_types[mesh.axis_names.index(n)]
                is not AxisType.Explicit]
        s = context_sharding(s, what)
        if auto and explicit_only:  # (as JAX: only Explicit axes are part of a value's type)
            raise ValueError(f"{what}: the PartitionSpec {s.spec} names axis {auto[0]!r}, which "
                             f"is not Explicit in the context mesh {mesh}; use a mesh with "
                             "AxisType.Explicit axes or with_sharding_constraint")
        return s
    if s is None:
        raise ValueError(f"{what}: needs a NamedSharding or a PartitionSpec, got None")
    if not isinstance(s, NamedSharding):
        raise TypeError(f"{what}: out_shardings must be NamedShardings or PartitionSpecs, got "
                        f"{type(s).__name__}: {s!r:.80}")
    return s


def _place(xs, shardings, what: str, explicit_only: bool = True):
    leaves, tree = tree_flatten(xs)
    per_leaf = [_resolve(s, what, explicit_only) for s in _per_leaf(xs, shardings, what)]
    out = []
    for x, s in zip(leaves, per_leaf):
        if isinstance(x, Tracer):
            # Check what a placement would refuse, so a program that fails in JAX fails here
            # at trace time too; a split over several devices is recorded for jit's
            # partitioner (as with_sharding_constraint records it).
            s.shard_shape(get_aval(x).shape)
            if isinstance(s, NamedSharding) and isinstance(s.mesh, Mesh) and s.mesh.size > 1:
                from .primitives.sharding_constraint import sharding_constraint_p
                x = sharding_constraint_p.bind1(x, sharding=s)
            out.append(x)
        else:
            out.append(device_put(x, s))
    return tree_unflatten(tree, out)


def reshard(xs, out_shardings):
    """``xs`` (a pytree of arrays) placed on ``out_shardings``: a ``NamedSharding``, or a
    ``PartitionSpec`` on the context mesh (``set_mesh``), or a pytree prefix of them. Values
    never change; concrete arrays get the sharding (``device_put``); under jit the layout is
    recorded for the partitioner (as ``with_sharding_constraint``).

    >>> with ft.set_mesh(ft.make_mesh((2,), ("x",))):
    ...     y = ft.reshard(fnp.arange(4.0), P("x"))
    >>> y.sharding.spec, [s.data.tolist() for s in y.addressable_shards]
    (PartitionSpec('x'), [[0.0, 1.0], [2.0, 3.0]])
    """
    return _place(xs, out_shardings, "reshard")


def _decorator(f, run):
    if f is None:
        return lambda g: _decorator(g, run)
    if not callable(f):
        raise TypeError(f"expected a callable to decorate, got {type(f).__name__}: {f!r:.60}")
    return functools.wraps(f)(lambda *args, **kwargs: run(f, args, kwargs))


_REQUIRED = object()


def auto_axes(f=None, /, *, axes=None, out_sharding=_REQUIRED):
    """``f`` with the mesh ``axes`` (default: all) switched to ``Auto`` while it runs, and its
    result placed on ``out_sharding`` (required, as in JAX) as ``reshard`` places it.

    In functrans values are computed whole whatever the axis types, so this runs ``f`` and
    places its result; without a context mesh the result is returned as it is (as JAX does).

    >>> with ft.set_mesh(ft.make_mesh((2,), ("x",))):
    ...     y = ft.sharding.auto_axes(lambda a: a * 2, out_sharding=P("x"))(fnp.arange(4.0))
    >>> y.tolist(), y.sharding.spec
    ([0.0, 2.0, 4.0, 6.0], PartitionSpec('x'))
    """
    def run(fun, args, kwargs):
        if out_sharding is _REQUIRED:
            raise TypeError("auto_axes: missing required keyword argument 'out_sharding'")
        _check_axes(axes, "auto_axes")
        out = fun(*args, **kwargs)
        if get_mesh().empty and _only_specs(out_sharding):
            return out
        return _place(out, out_sharding, "auto_axes out_sharding")
    return _decorator(f, run)


def explicit_axes(f=None, /, *, axes=None, in_sharding=_REQUIRED):
    """``f`` with the mesh ``axes`` (default: all) switched to ``Explicit`` while it runs, its
    positional arguments first placed on ``in_sharding`` (required, as in JAX).

    In functrans values are computed whole whatever the axis types, so this places the
    arguments (concrete ones; traced ones stay as they are) and runs ``f``.

    >>> with ft.set_mesh(ft.make_mesh((2,), ("x",))):
    ...     ft.sharding.explicit_axes(lambda a: a.sharding.spec, in_sharding=P("x"))(fnp.ones(2))
    PartitionSpec('x')
    """
    def run(fun, args, kwargs):
        if in_sharding is _REQUIRED:
            raise TypeError("explicit_axes: missing required keyword argument 'in_sharding'")
        _check_axes(axes, "explicit_axes")
        if not (get_mesh().empty and _only_specs(in_sharding)):
            # Auto axes may be named: they are Explicit inside explicit_axes.
            args = _place(args, in_sharding, "explicit_axes in_sharding", explicit_only=False)
        return fun(*args, **kwargs)
    return _decorator(f, run)


def _only_specs(shardings) -> bool:
    leaves = tree_flatten(shardings, is_leaf=lambda s: isinstance(s, PartitionSpec))[0]
    return all(isinstance(s, PartitionSpec) for s in leaves)


def _check_axes(axes, what):
    names = (axes,) if isinstance(axes, str) else tuple(axes or ())
    mesh = get_mesh()
    for n in names:
        if not mesh.empty and n not in mesh.shape:
            raise ValueError(f"{what}: axes names {n!r}, which is not an axis of the context "
                             f"mesh {mesh}")
