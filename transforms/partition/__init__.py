"""jit over a mesh: sharding propagation (rules.py), layouts and resharding (layouts.py), the
SPMD partitioner (partitioner.py)."""
