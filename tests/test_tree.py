"""ft.tree: jax.tree's short names agree with the tree_util functions they wrap."""
import pytest

import functrans as ft
from functrans import tree_util as tu

TREES = [1.0, (1, [2, None]), {"b": (3, 4), "a": [5]}, [], {"x": {"y": (1,)}}]


@pytest.mark.parametrize("tree", TREES)
def test_wrappers_agree_with_tree_util(tree):
    assert ft.tree.leaves(tree) == tu.tree_leaves(tree)
    assert ft.tree.structure(tree) == tu.tree_structure(tree)
    leaves, td = ft.tree.flatten(tree)
    assert ft.tree.unflatten(td, leaves) == tree
    assert ft.tree.map(lambda x: x * 2, tree) == tu.tree_map(lambda x: x * 2, tree)


def test_reduce_all_transpose_broadcast():
    assert ft.tree.reduce(max, [3, (7, 1)]) == 7
    assert ft.tree.reduce(lambda a, b: a + [b], [1, 2], []) == [1, 2]
    assert ft.tree.reduce(lambda a, b: (a, b), [1], None) == (None, 1)  # None is an initializer
    with pytest.raises(TypeError):
        ft.tree.reduce(max, [])
    assert ft.tree.all([True, (1,)]) and not ft.tree.all([True, (0,)]) and ft.tree.all([])
    assert ft.tree.all([[0]], is_leaf=lambda x: isinstance(x, list))
    out = ft.tree.transpose(ft.tree.structure([0, 0, 0]), ft.tree.structure({"a": 0, "b": 0}),
                            [{"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": 5, "b": 6}])
    assert out == {"a": [1, 3, 5], "b": [2, 4, 6]}
    assert ft.tree.broadcast((1, 2), ([0, 0], {"k": 0})) == ([1, 1], {"k": 2})


def test_is_leaf_and_rest_trees():
    tree = {"w": (1, 2), "b": 3}
    assert ft.tree.leaves(tree, is_leaf=lambda x: isinstance(x, tuple)) == [3, (1, 2)]
    assert ft.tree.map(lambda a, b: a - b, tree, {"w": (1, 1), "b": 1}) == {"w": (0, 1), "b": 2}
    with pytest.raises(ValueError):
        ft.tree.map(lambda a, b: a, tree, {"w": (1,), "b": 1})
