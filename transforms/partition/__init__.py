"""jit over a mesh: sharding propagation (rules.py), layouts and resharding (layouts.py), the
SPMD partitioner (partitioner.py), eager operations on arrays spread over processes
(eager.py, imported here: it installs core's hook for them)."""
from . import eager  # noqa: F401  (installs core.distributed_array.apply_on_shards)
