"""``functrans.tree``: the short pytree names of ``jax.tree`` (``ft.tree.map`` for
``tree_util.tree_map`` and so on), so ``jax.tree.*`` code ports by changing the import.

    >>> ft.tree.map(lambda x: x * 2, {"w": 1.0, "b": (2.0, None)})
    {'b': (4.0, None), 'w': 2.0}
"""
from __future__ import annotations

import dataclasses

from . import tree_util as _tu

__all__ = ["map", "leaves", "structure", "flatten", "unflatten", "reduce", "all", "transpose",
           "broadcast", "flatten_with_path", "leaves_with_path", "map_with_path",
           "reduce_associative", "static"]

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

    An explicit ``initializer=None`` is used as the initial value, not read as "no
    initializer" (as in ``jax.tree.reduce``).

    >>> ft.tree.reduce(lambda a, b: a + b, {"x": 1, "y": [2, 3]})
    6
    >>> ft.tree.reduce(lambda a, b: a + b, [], 0)
    0
    """
    if initializer is _NO_INITIALIZER:
        return _tu.tree_reduce(function, tree, is_leaf=is_leaf)
    return _tu.tree_reduce(function, tree, initializer, is_leaf)


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
    return _tu.tree_broadcast(prefix_tree, full_tree, is_leaf)


def reduce_associative(operation, tree, *, identity=_NO_INITIALIZER, is_leaf=None):
    """Reduce the leaves with an associative ``operation`` in a balanced tree of calls;
    ``identity`` is the result when there are no leaves.

    >>> import operator
    >>> ft.tree.reduce_associative(operator.add, [1, (2, 3), [4, 5, 6]])
    21
    >>> ft.tree.reduce_associative(operator.add, [], identity=0)
    0
    """
    if identity is _NO_INITIALIZER:
        return _tu.tree_reduce_associative(operation, tree, is_leaf=is_leaf)
    return _tu.tree_reduce_associative(operation, tree, identity=identity, is_leaf=is_leaf)


def flatten_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
    """``([(key_path, leaf), ...], treedef)``; ``is_leaf(x)``, or ``is_leaf(key_path, x)`` if
    ``is_leaf_takes_path``, stops the descent.

    >>> pairs, treedef = ft.tree.flatten_with_path([1, {"x": 3}])
    >>> pairs
    [((SequenceKey(idx=0),), 1), ((SequenceKey(idx=1), DictKey(key='x')), 3)]
    >>> treedef
    PyTreeDef([*, {'x': *}])
    """
    return _tu.tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)


def leaves_with_path(tree, is_leaf=None, is_leaf_takes_path=False) -> list:
    """``[(key_path, leaf), ...]`` in flattening order.

    >>> ft.tree.leaves_with_path({"w": (1, 2)})
    [((DictKey(key='w'), SequenceKey(idx=0)), 1), ((DictKey(key='w'), SequenceKey(idx=1)), 2)]
    """
    return _tu.tree_leaves_with_path(tree, is_leaf, is_leaf_takes_path)


def map_with_path(f, tree, *rest, is_leaf=None, is_leaf_takes_path=False):
    """:func:`map` whose ``f`` gets each leaf's key path first: ``f(key_path, x, *xs)``.

    >>> ft.tree.map_with_path(lambda path, x: x + path[0].idx, [1, 2, 3])
    [1, 3, 5]
    """
    return _tu.tree_map_with_path(f, tree, *rest, is_leaf=is_leaf,
                                  is_leaf_takes_path=is_leaf_takes_path)


def static(**kwargs):
    """``dataclasses.field(**kwargs)`` marked ``metadata={"static": True}``: a meta field
    for :func:`functrans.tree_util.register_dataclass`.

    >>> @ft.tree_util.register_dataclass
    ... @dataclasses.dataclass
    ... class Op:
    ...     x: float
    ...     kind: str = ft.tree.static(default="add")
    >>> ft.tree.flatten(Op(1.0))
    ([1.0], PyTreeDef(CustomNode(Op[('add',)], [*])))
    """
    metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
    return dataclasses.field(metadata=metadata, **kwargs)
