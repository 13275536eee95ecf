"""JAX's ``out_sharding=`` keyword on the functions that create or combine arrays
(``jnp.zeros``, ``jnp.dot``, ``random.normal``, ...).

functrans's values are not split over devices in the global view, so a sharding that leaves
every dimension whole on the empty abstract mesh (what ``jax.typeof(x).sharding`` is here) is
what the result is already; any other sharding places a concrete result on its devices
(``device_put``). Traced results carry no sharding, so asking for one there is refused by
name.

    >>> import functrans.numpy as fnp
    >>> fnp.zeros(2, out_sharding=None).tolist()
    [0.0, 0.0]
"""
from __future__ import annotations

import functools
import inspect


def is_unsplit(sharding) -> bool:
    """Whether ``sharding`` is what every functrans value is: None, or nothing split on an
    abstract mesh (the empty one, or the context's: ``typeof(x).sharding`` of an unplaced
    value)."""
    from .mesh import AbstractMesh, NamedSharding
    return sharding is None or (
        isinstance(sharding, NamedSharding) and isinstance(sharding.mesh, AbstractMesh)
        and sharding.is_fully_replicated)


def place(out, sharding, name: str):
    """``out`` with ``sharding`` (the ``out_sharding=`` of function ``name``)."""
    if is_unsplit(sharding):
        return out
    from .mesh import on_context_devices
    sharding = on_context_devices(sharding)
    from .array import Array
    from .trace import Tracer
    from .tree import tree_leaves
    if any(isinstance(leaf, Tracer) or not isinstance(leaf, Array)
           for leaf in tree_leaves(out)):
        raise NotImplementedError(
            f"{name}(..., out_sharding={sharding!r}): functrans's traced values carry no "
            "sharding; place the result with device_put outside the traced function")
    from .placement import device_put
    return device_put(out, sharding)


def accept_out_sharding(namespace: dict, names) -> None:
    """Give each function ``namespace[name]`` an ``out_sharding=None`` keyword (as in JAX)."""
    for name in names:
        fun = namespace[name]
        signature = inspect.signature(fun)
        if "out_sharding" in signature.parameters:
            continue

        def wrapper(*args, out_sharding=None, _fun=fun, _name=name, **kwargs):
            return place(_fun(*args, **kwargs), out_sharding, _name)

        functools.update_wrapper(wrapper, fun)
        params = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        keyword = inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY,
                                    default=None)
        tail = [p for p in signature.parameters.values() if p.kind is p.VAR_KEYWORD]
        wrapper.__signature__ = signature.replace(parameters=params + [keyword] + tail)
        namespace[name] = wrapper
