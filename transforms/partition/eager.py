"""Eager operations on arrays spread over processes: each runs as a one-equation program
partitioned over the arrays' mesh (as JAX dispatches eager operations as jitted ones), so a
training loop's optimizer update outside ``jit`` works on every process's blocks.

Core's eager evaluation meets such arrays but knows no transformation: this module installs
:func:`apply_on_shards` into ``core.distributed_array`` when imported (the package does).

    >>> apply_on_shards  # doctest: +ELLIPSIS
    <function apply_on_shards at ...>
"""
from __future__ import annotations

import threading

from functrans.core import distributed_array
from functrans.core.ir import TransposedSource, replay
from functrans.core.staging import trace_to_jaxpr
from functrans.core.trace import get_aval

from .partitioner import mesh_and_specs, partitioned

_programs: dict = {}  # (primitive, params, avals) -> its one-equation jaxpr
_lock = threading.Lock()


def apply_on_shards(prim, args, params, optional: bool = False) -> list | None:
    """``prim.bind(*args, **params)`` computed shard by shard (some argument is a
    DistributedArray, or with ``optional`` an Array placed on a mesh: then None when the
    program needs no partitioning)."""
    avals = tuple(get_aval(x) for x in args)
    transposed = replay.source if type(replay.source) is TransposedSource else None
    try:
        key = (prim, tuple(sorted(params.items())), avals, transposed is not None)
        hash(key)
    except TypeError:  # unhashable params: traced every time
        key = None
    jaxpr = _programs.get(key) if key is not None else None
    if jaxpr is None:
        jaxpr = trace_to_jaxpr(lambda *xs: prim.bind_all(*xs, **params), list(avals),
                               name=prim.name)
        if transposed is not None:  # (a transpose rule's: the partitioner reads the mark)
            for e in jaxpr.eqns:
                e.source = transposed
        if key is not None:
            with _lock:
                if len(_programs) > 512:
                    _programs.clear()
                _programs[key] = jaxpr
    sharded = mesh_and_specs(jaxpr, args)
    if sharded is None and optional:
        return None
    return partitioned(jaxpr, *sharded, prim.name)(*args)


distributed_array.install_apply_on_shards(apply_on_shards)
