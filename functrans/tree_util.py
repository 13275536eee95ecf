"""Pytrees: nested containers (tuples, lists, dicts, None, namedtuples, registered classes and
dataclasses) whose leaves are arrays (``jax.tree_util``).

    >>> leaves, tree = tree_flatten({"w": 1.0, "b": (2.0, None)})
    >>> leaves, tree
    ([2.0, 1.0], PyTreeDef({'b': (*, None), 'w': *}))
    >>> tree_unflatten(tree, [3, 4])
    {'b': (3, None), 'w': 4}

Each leaf also has a key path, the entries naming the children from the root down to it:

    >>> [(keystr(path), leaf) for path, leaf in tree_leaves_with_path({"w": 1.0, "b": (2.0,)})]
    [("['b'][0]", 2.0), ("['w']", 1.0)]

A typed PRNG key array is a leaf, as in JAX (functrans's transformations, which flatten with
:mod:`functrans.core.tree`, carry its ``uint32`` data):

    >>> len(tree_leaves([ft.random.split(ft.random.key(0), 4)]))
    1
"""
from __future__ import annotations

from typing import Callable

from .core import tree as _tree
from .core.pytree import PUBLIC_LEAVES as _PUBLIC_LEAVES, public_flatten as _public_flatten
from .core.pytree import public_leaf as _leaf
from .core.tree import (Partial, PyTreeDef, broadcast_prefix, flatten_one_level,  # noqa: F401
                    flatten_one_level_with_keys, flatten_up_to, is_tree_node,
                    register_dataclass, register_pytree_node, register_pytree_node_class,
                    register_pytree_with_keys, register_pytree_with_keys_class, register_static,
                    tree_transpose, tree_unflatten, treedef_children, treedef_is_leaf,
                    treedef_tuple)
from .core.tree_keys import (DictKey, FlattenedIndexKey, GetAttrKey, KeyEntry,  # noqa: F401
                         KeyPath, SequenceKey, keystr)

_NO_INITIALIZER = _tree._NO_INITIALIZER


def _path_leaf(is_leaf, takes_path):
    if is_leaf is None:
        return lambda _, x: type(x) in _PUBLIC_LEAVES
    if takes_path:
        return lambda path, x: type(x) in _PUBLIC_LEAVES or is_leaf(path, x)
    return lambda _, x: type(x) in _PUBLIC_LEAVES or is_leaf(x)


def tree_flatten(tree, is_leaf: Callable | None = None):
    """``(leaves, treedef)``: leaves in a deterministic order (dicts by sorted key).

    >>> tree_flatten([1, (2, 3)])[0]
    [1, 2, 3]
    """
    return _public_flatten(tree, is_leaf)


def tree_leaves(tree, is_leaf: Callable | None = None) -> list:
    """The leaves of ``tree``, in :func:`tree_flatten` order.

    >>> tree_leaves({"a": 1, "b": [2, None]})
    [1, 2]
    """
    return _public_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf: Callable | None = None) -> PyTreeDef:
    """The structure of ``tree`` (its leaves replaced by ``*``).

    >>> tree_structure((1, {"x": 2}))
    PyTreeDef((*, {'x': *}))
    """
    return _public_flatten(tree, is_leaf)[1]


def tree_flatten_with_path(tree, is_leaf: Callable | None = None,
                           is_leaf_takes_path: bool = False):
    """``([(key_path, leaf), ...], treedef)``: :func:`tree_flatten` with each leaf's key path.

    >>> tree_flatten_with_path([1, {"x": 3}])[0]
    [((SequenceKey(idx=0),), 1), ((SequenceKey(idx=1), DictKey(key='x')), 3)]
    """
    return _tree.tree_flatten_with_path(tree, _path_leaf(is_leaf, is_leaf_takes_path), True)


def tree_leaves_with_path(tree, is_leaf: Callable | None = None,
                          is_leaf_takes_path: bool = False) -> list:
    """``[(key_path, leaf), ...]`` of ``tree``.

    >>> tree_leaves_with_path({"a": 1})
    [((DictKey(key='a'),), 1)]
    """
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map(f: Callable, tree, *rest, is_leaf=None):
    """``f`` applied leafwise to ``tree`` and the trees ``rest`` (which ``tree`` is a prefix
    of), in ``tree``'s structure.

    >>> tree_map(lambda x, y: x + y, {"a": 1, "b": 2}, {"a": 10, "b": 20})
    {'a': 11, 'b': 22}
    """
    leaves, treedef = _public_flatten(tree, is_leaf)
    others = [_tree.flatten_up_to(treedef, r, "tree_map") for r in rest]
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


def tree_map_with_path(f: Callable, tree, *rest, is_leaf=None, is_leaf_takes_path=False):
    """:func:`tree_map` whose ``f`` also takes each leaf's key path first.

    >>> tree_map_with_path(lambda p, x: keystr(p), {"a": 1})
    {'a': "['a']"}
    """
    return _tree.tree_map_with_path(f, tree, *rest,
                                    is_leaf=_path_leaf(is_leaf, is_leaf_takes_path),
                                    is_leaf_takes_path=True)


def tree_broadcast(prefix_tree, full_tree, is_leaf=None):
    """``full_tree``'s structure with each leaf of ``prefix_tree`` repeated over the matching
    subtree.

    >>> tree_broadcast((1, 2), (0, {"a": 0, "b": 0}))
    (1, {'a': 2, 'b': 2})
    """
    return _tree.tree_broadcast(prefix_tree, full_tree, _leaf(is_leaf))


def tree_reduce(function, tree, initializer=_NO_INITIALIZER, is_leaf=None):
    """``functools.reduce(function, tree_leaves(tree)[, initializer])``.

    >>> tree_reduce(lambda a, b: a + b, [1, (2, 3)])
    6
    """
    return _tree.tree_reduce(function, tree, initializer, _leaf(is_leaf))


def tree_reduce_associative(operation, tree, *, identity=_NO_INITIALIZER, is_leaf=None):
    """:func:`tree_reduce` of an associative ``operation``, combined pairwise.

    >>> tree_reduce_associative(lambda a, b: a * b, [2, 3, 4])
    24
    """
    return _tree.tree_reduce_associative(operation, tree, identity=identity,
                                         is_leaf=_leaf(is_leaf))


def tree_all(tree, *, is_leaf=None) -> bool:
    """Whether every leaf of ``tree`` is true.

    >>> tree_all([True, (1, 2)]), tree_all({"a": 0})
    (True, False)
    """
    return _tree.tree_all(tree, is_leaf=_leaf(is_leaf))


def all_leaves(iterable, is_leaf=None) -> bool:
    """Whether every element of ``iterable`` is a leaf.

    >>> all_leaves([1, 2.0]), all_leaves([1, (2,)])
    (True, False)
    """
    return _tree.all_leaves(iterable, _leaf(is_leaf))
