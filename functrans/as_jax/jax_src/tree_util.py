"""``jax._src.tree_util``: JAX's private pytree module, of which flax.nnx reads the registry
of node types (``type(x) in _registry``): a read-only view of functrans's registry; and
orbax calls ``flatten_one_level`` (functrans's public one: a leaf raises ``ValueError``).

    >>> import functrans as ft
    >>> dict in _registry, ft.Array in _registry
    (True, False)
"""
from __future__ import annotations

from collections.abc import Mapping

from functrans.core import pytree as _pytree
from functrans.random import KeyArray
from functrans.tree_util import flatten_one_level, flatten_one_level_with_keys  # noqa: F401


class _RegistryView(Mapping):
    """The registered node types. Typed key arrays are leaves to JAX's libraries (JAX's key
    arrays are arrays), though functrans's transformations open them to reach their data."""

    def __getitem__(self, node_type):
        if node_type is KeyArray:
            raise KeyError(node_type)
        return _pytree._registry[node_type]

    def __contains__(self, node_type):
        return node_type is not KeyArray and node_type in _pytree._registry

    def __iter__(self):
        return (t for t in _pytree._registry if t is not KeyArray)

    def __len__(self):
        return len(_pytree._registry) - (KeyArray in _pytree._registry)


_registry = _RegistryView()
