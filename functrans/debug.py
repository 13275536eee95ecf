"""Looking inside running programs: ``debug.print``, ``debug.callback`` and
``debug.breakpoint`` (an interactive prompt on the caller's frames), as in JAX; and
``visualize_array_sharding``, which draws which devices hold which block (implemented in
``functrans/debugging/``).

They work eagerly and under jit, vmap (once per batch element), grad (on primal values),
control flow, and in the shards of pmap/shard_map (every shard, in shard order)::

    >>> ft.vmap(lambda x: ft.debug.print("x={x}", x=x))(fnp.arange(2))
    x=0
    x=1
"""
from __future__ import annotations

from .debugging.callbacks import callback, print  # noqa: A004 - JAX's name
from .debugging.debugger import breakpoint  # noqa: A004 - JAX's name
from .debugging.visualize import (sharding_grid, visualize_array_sharding,  # noqa: F401
                                  visualize_sharding)

__all__ = ["breakpoint", "callback", "print", "visualize_array_sharding", "visualize_sharding"]
