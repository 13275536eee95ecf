"""``pmap`` and ``shard_map``: run one program on many devices, with JAX's signatures.

Both trace the per-shard program once per argument signature and bind the ``shard_map``
primitive (``functrans.primitives.shard_map``), so they compose with every transformation
(``grad(pmap(f))``, ``pmap(grad(f))``, ``vmap(pmap(f))``, ``jit(shard_map(...))``) and their
collectives (``lax.psum`` ...) are real exchanges between device threads::

    >>> ft.pmap(lambda x: x / lax.psum(x, "i"), axis_name="i")(fnp.array([1.0, 3.0]))
    Array([0.25, 0.75], dtype=float64)

``pmapping.py`` holds pmap, ``shard_mapping.py`` shard_map, ``per_shard.py`` what they share
(tracing and caching the per-shard program; importing it installs the SPMD runtime).
"""
from .pmapping import pmap
from .shard_mapping import shard_map

__all__ = ["pmap", "shard_map"]
