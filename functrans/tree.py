"""``functrans.tree``: the short pytree names of ``jax.tree`` (``ft.tree.map`` for
``tree_util.tree_map`` and so on), so ``jax.tree.*`` code ports by changing the import.

    >>> ft.tree.map(lambda x: x * 2, {"w": 1.0, "b": (2.0, None)})
    {'b': (4.0, None), 'w': 2.0}

The path-keyed variants (``map_with_path``, ``flatten_with_path``, ``leaves_with_path``) are not
provided: functrans's pytree registry does not record key paths.
"""
from __future__ import annotations

import functools

from . import tree_util as _tu

__all__ = ["map", "leaves", "structure", "flatten", "unflatten", "reduce", "all", "transpose",
           "broadcast"]

_NO_INITIALIZER = object()


def map(f, tree, *rest, is_leaf=None):  # noqa: A001  (jax.tree.map)
    """Apply ``f`` to the leaves of ``tree`` (and the matching leaves of each of ``rest``,
    which must have ``tree``'s structure or a finer one).

    >>> ft.tree.map(lambda a, b: a + b, [1, (2, 3)], [10, (20, 30)])
    [11, (22, 33)]
    """
    return _tu.tree_map(f, tree, *rest, is_leaf=is_leaf)


def leaves(tree, is_leaf=None) -> list:
    """The leaves of ``tree`` in flattening order (dicts by sorted key; None is no leaf).

    >>> ft.tree.leaves({"b": [1, None], "a": 2})
    [2, 1]
    """
    return _tu.tree_leaves(tree, is_leaf)


def structure(tree, is_leaf=None):
    """The ``PyTreeDef`` of ``tree``.

    >>> ft.tree.structure((1, {"a": 2}))
    PyTreeDef((*, {'a': *}))
    """
    return _tu.tree_structure(tree, is_leaf)


def flatten(tree, is_leaf=None):
    """``(leaves, treedef)``; :func:`unflatten` inverts it.

    >>> ft.tree.flatten([1, (2, 3)])
    ([1, 2, 3], PyTreeDef([*, (*, *)]))
    """
    return _tu.tree_flatten(tree, is_leaf)


def unflatten(treedef, leaves):
    """The pytree with structure ``treedef`` whose leaves are ``leaves``.

    >>> ft.tree.unflatten(ft.tree.structure((0, [0])), ["a", "b"])
    ('a', ['b'])
    """
    return _tu.tree_unflatten(treedef, leaves)


def reduce(function, tree, initializer=_NO_INITIALIZER, is_leaf=None):
    """``functools.reduce(function, leaves(tree)[, initializer])``.

    Unlike ``tree_util.tree_reduce``, an explicit ``initializer=None`` is used as the initial
    value (as in ``jax.tree.reduce``), not read as "no initializer".

    >>> ft.tree.reduce(lambda a, b: a + b, {"x": 1, "y": [2, 3]})
    6
    >>> ft.tree.reduce(lambda a, b: a + b, [], 0)
    0
    """
    xs = _tu.tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:
        return functools.reduce(function, xs)
    return functools.reduce(function, xs, initializer)


def all(tree, *, is_leaf=None) -> bool:  # noqa: A001  (jax.tree.all)
    """True if every leaf is truthy (an empty tree gives True).

    >>> ft.tree.all((True, [1, 2])), ft.tree.all({"a": 0})
    (True, False)
    """
    import builtins
    return builtins.all(_tu.tree_leaves(tree, is_leaf))


def transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """Turn an outer tree of inner trees into an inner tree of outer trees.

    >>> ft.tree.transpose(ft.tree.structure([0, 0]), ft.tree.structure((0, 0)),
    ...                   [(1, 2), (3, 4)])
    ([1, 3], [2, 4])
    """
    return _tu.tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose)


def broadcast(prefix_tree, full_tree, is_leaf=None):
    """``prefix_tree`` with each leaf repeated over the matching subtree of ``full_tree``.

    >>> ft.tree.broadcast([1, 2], [(0, 0), [0]])
    [(1, 1), [2]]
    """
    prefix_leaves, prefix_def = _tu.tree_flatten(prefix_tree, is_leaf)
    subtrees = _tu.flatten_up_to(prefix_def, full_tree, "tree.broadcast")
    return _tu.tree_unflatten(prefix_def, [
        _tu.tree_map(lambda _: leaf, sub, is_leaf=is_leaf)
        for leaf, sub in zip(prefix_leaves, subtrees)])
