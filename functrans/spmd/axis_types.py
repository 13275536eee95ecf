"""JAX's global-view placement functions: ``reshard``, and ``auto_axes``/``explicit_axes``,
which retype the context mesh's axes while a function runs (``functrans.sharding`` is their
face).

A functrans array holds its global value whatever its sharding: placement says where the
value lives (``x.sharding``, ``x.addressable_shards``). Concrete values are placed by
``device_put``; under jit a split is recorded for the partitioner (as
``with_sharding_constraint`` records it).

    >>> with ft.set_mesh(ft.make_mesh((2,), ("x",))):
    ...     reshard(fnp.arange(4.0), P("x")).sharding.spec
    PartitionSpec('x')
"""
from __future__ import annotations

import contextlib
import functools

from ..core.devices import Device
from ..core.mesh import (AxisType, Mesh, NamedSharding, P, PartitionSpec,  # noqa: F401
                         Sharding, context_sharding, get_abstract_mesh, get_mesh, set_mesh)
from ..core.placement import device_put
from ..core.trace import Tracer, get_aval
from ..core.tree import broadcast_prefix, tree_flatten, tree_unflatten

__all__ = ["auto_axes", "explicit_axes", "reshard"]


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
                from ..primitives.sharding_constraint import sharding_constraint_p
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


def _call_keyword(value, kwargs, name, what):
    """The sharding given to the decorator, else the one the call passes as ``name=``
    (JAX 0.10.2 takes it either way and requires one)."""
    if value is None:
        if name not in kwargs:
            raise TypeError(f"{what}: missing required keyword argument '{name}' (give it to "
                            f"the decorator or to the call)")
        value = kwargs.pop(name)
    return value


@contextlib.contextmanager
def _axes_typed(axes, kind, what):
    """While the block runs, the context mesh with ``axes`` (default: all) of type ``kind``
    (``get_abstract_mesh()`` says so); yields a function retyping an argument's mesh the
    same way (its data stays where it is). Nothing changes without a context mesh."""
    _check_axes(axes, what)
    mesh = get_mesh()
    if mesh.empty:
        yield lambda x: x
        return
    names = mesh.axis_names if axes is None else (axes,) if isinstance(axes, str) else axes
    types = dict(zip(mesh.axis_names, mesh.axis_types)) | {n: kind for n in names}
    retyped = Mesh(mesh.devices, mesh.axis_names, tuple(types[n] for n in mesh.axis_names))

    def retype(x):
        s = getattr(x, "_sharding", None)
        if isinstance(x, Tracer) or type(s) is not NamedSharding or not isinstance(s.mesh, Mesh) \
                or s.mesh.axis_names != mesh.axis_names \
                or list(s.mesh.devices.flat) != list(mesh.devices.flat):
            return x
        return x._with_sharding(NamedSharding(retyped, s.spec, memory_kind=s.memory_kind))

    with set_mesh(retyped):
        yield lambda xs: tree_unflatten(tree_flatten(xs)[1],
                                        [retype(x) for x in tree_flatten(xs)[0]])


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
    """``f`` with the mesh ``axes`` (default: all) switched to ``Auto`` while it runs
    (``get_abstract_mesh()`` inside says so, and the arguments' types are no longer split
    on them), its result placed on ``out_sharding`` as ``reshard`` places it. As in JAX,
    ``out_sharding`` is required, given here or to the call (``g(x, out_sharding=...)``).

    Values are computed whole whatever the axis types; without a context mesh the result
    is returned as it is (as JAX does).

    >>> with ft.set_mesh(ft.make_mesh((2,), ("x",))):
    ...     y = ft.sharding.auto_axes(lambda a: a * 2)(fnp.arange(4.0), out_sharding=P("x"))
    >>> y.tolist(), y.sharding.spec
    ([0.0, 2.0, 4.0, 6.0], PartitionSpec('x'))
    """
    def run(fun, args, kwargs):
        kwargs = dict(kwargs)
        out = _call_keyword(out_sharding, kwargs, "out_sharding", "auto_axes")
        with _axes_typed(axes, AxisType.Auto, "auto_axes") as retype:
            result = fun(*retype(args), **kwargs)
        if get_mesh().empty and _only_specs(out):
            return result
        return _place(result, out, "auto_axes out_sharding")
    return _decorator(f, run)


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
    """``f`` with the mesh ``axes`` (default: all) switched to ``Explicit`` while it runs, its
    positional arguments first placed on ``in_sharding`` (required, as in JAX: given here or
    to the call, ``g(x, in_sharding=...)``). A context mesh is required, as in JAX.

    >>> with ft.set_mesh(ft.make_mesh((2,), ("x",))):
    ...     ft.sharding.explicit_axes(lambda a: a.sharding.spec)(fnp.ones(2), in_sharding=P("x"))
    PartitionSpec('x')
    """
    def run(fun, args, kwargs):
        kwargs = dict(kwargs)
        ins = _call_keyword(in_sharding, kwargs, "in_sharding", "explicit_axes")
        if get_mesh().empty and get_abstract_mesh().empty:
            raise ValueError("explicit_axes: the context mesh is empty; enter one with "
                             "`ft.set_mesh(mesh)` to use explicit_axes")
        with _axes_typed(axes, AxisType.Explicit, "explicit_axes"):
            args = _place(args, ins, "explicit_axes in_sharding")
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
