"""What ``pmap`` and ``shard_map`` share: tracing the per-shard program (with the mesh's axes
in scope for collectives) and caching it per argument signature.

Importing this installs the SPMD runtime (shard threads, the collectives' rendezvous) that
the ``shard_map`` primitive runs on (``transforms/parallel/runtime.py`` installs itself into
``core/shard_env.py``).

    >>> cache = TraceCache()
    >>> cache.get("sig", lambda: ("jaxpr", [], "tree"))
    ('jaxpr', [], 'tree')
"""
from __future__ import annotations

import threading

from functrans.core.config import config
from functrans.core.staging import hoist_tracer_consts, trace_to_jaxpr
from functrans.core.trace import get_aval
from functrans.primitives.shard_map import mesh_axes
# The SPMD runtime shard_map's impl runs on (it installs itself into core/shard_env.py).
from functrans.transforms.parallel import runtime as _spmd_runtime  # noqa: F401

__all__ = ["TraceCache", "replicated", "trace_per_shard"]


class TraceCache:
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


def trace_per_shard(body, block_avals, mesh, name):
    with mesh_axes(mesh):
        jaxpr = trace_to_jaxpr(body, list(block_avals), name=name)
    return hoist_tracer_consts(jaxpr)


def replicated(x) -> tuple:
    return ((),) * get_aval(x).ndim
