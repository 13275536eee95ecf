"""Pytrees as functrans's transformations see them: nested containers (tuples, lists, dicts,
None, namedtuples, registered classes and dataclasses) whose leaves are arrays. Transformations
flatten their inputs and outputs with this module, which opens typed PRNG key arrays to their
``uint32`` data; the public :mod:`functrans.tree_util` treats them as leaves, as JAX does:

    >>> tree_leaves([ft.random.key(0)])
    [Array([0, 0], dtype=uint32)]
"""
from __future__ import annotations

import dataclasses
import functools
import operator
from typing import Callable

from .pytree import (PyTreeDef, all_leaves, flatten_one_level,  # noqa: F401
                      flatten_one_level_with_keys, flatten_up_to, is_tree_node,
                      register_pytree_node, register_pytree_with_keys, tree_flatten,
                      tree_flatten_with_path, tree_leaves, tree_leaves_with_path,
                      tree_structure, tree_unflatten, treedef_children, treedef_is_leaf,
                      treedef_tuple)
from .tree_keys import (DictKey, FlattenedIndexKey, GetAttrKey, KeyEntry,  # noqa: F401
                         KeyPath, SequenceKey, keystr)


# ---- registration conveniences ------------------------------------------------------------------
def register_pytree_node_class(cls):
    """Class decorator: ``cls`` defines ``tree_flatten(self) -> (children, aux)`` and the
    classmethod ``tree_unflatten(cls, aux, children)``.

    >>> @register_pytree_node_class
    ... class Scaled:
    ...     def __init__(self, x, k): self.x, self.k = x, k
    ...     def tree_flatten(self): return (self.x,), self.k
    ...     @classmethod
    ...     def tree_unflatten(cls, k, children): return cls(children[0], k)
    >>> tree_leaves(Scaled(1.0, 3))
    [1.0]
    """
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls):
    """Class decorator: ``cls`` defines ``tree_flatten_with_keys(self) -> ([(key, child), ...],
    aux)`` and the classmethod ``tree_unflatten(cls, aux, children)`` (and may define
    ``tree_flatten``, returning the same children without keys, for speed).

    >>> @register_pytree_with_keys_class
    ... class Special:
    ...     def __init__(self, x, y): self.x, self.y = x, y
    ...     def tree_flatten_with_keys(self):
    ...         return ((GetAttrKey("x"), self.x), (GetAttrKey("y"), self.y)), None
    ...     @classmethod
    ...     def tree_unflatten(cls, aux, children): return cls(*children)
    >>> [keystr(path) for path, _ in tree_leaves_with_path(Special(1, [2]))]
    ['.x', '.y[0]']
    """
    for method in ("tree_flatten_with_keys", "tree_unflatten"):
        if not hasattr(cls, method):
            raise TypeError(f"register_pytree_with_keys_class: {cls.__name__} has no "
                            f"{method} method")
    flatten = operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
                              cls.tree_unflatten, flatten)
    return cls


def register_static(cls):
    """Class decorator: instances of ``cls`` are pytree nodes without children, carried whole
    as static data in the structure (so jit treats them as static arguments). Instances must
    be hashable for that.

    >>> @register_static
    ... class Mode(str):
    ...     pass
    >>> tree_flatten([Mode("train"), 1.0])
    ([1.0], PyTreeDef([CustomNode(Mode[train], []), *]))
    """
    register_pytree_with_keys(cls, lambda obj: ((), obj), lambda obj, _: obj)
    return cls


def register_dataclass(nodetype=None, data_fields=None, meta_fields=None, drop_fields=()):
    """Register a dataclass (or any class whose constructor takes its fields as keywords)
    whose ``data_fields`` are children, named ``GetAttrKey(field)`` in key paths, and whose
    ``meta_fields`` are static data.

    Without field lists, ``nodetype`` must be a dataclass: fields marked
    ``dataclasses.field(metadata=dict(static=True))`` are meta fields, and the others taking
    part in ``__init__`` (less ``drop_fields``) are data fields. Usable as a decorator.

    >>> @register_dataclass
    ... @dataclasses.dataclass
    ... class Params:
    ...     w: float
    ...     n: int = dataclasses.field(default=1, metadata=dict(static=True))
    >>> tree_flatten_with_path(Params(0.5, n=3))
    ([((GetAttrKey(name='w'),), 0.5)], PyTreeDef(CustomNode(Params[(3,)], [*])))
    """
    if nodetype is None:
        return functools.partial(register_dataclass, data_fields=data_fields,
                                 meta_fields=meta_fields, drop_fields=drop_fields)
    if (data_fields is None) != (meta_fields is None):
        raise TypeError("register_dataclass: data_fields and meta_fields must both be given "
                        f"when either is; got data_fields={data_fields!r} "
                        f"meta_fields={meta_fields!r}")
    if data_fields is None:
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError(f"register_dataclass: {nodetype.__name__} is not a dataclass; pass "
                            "data_fields and meta_fields explicitly")
        fields = [f for f in dataclasses.fields(nodetype)
                  if f.init and f.name not in drop_fields]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    # Tuples: the closures below must not see later changes to the caller's lists.
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
    _check_dataclass_fields(nodetype, data_fields, meta_fields, drop_fields)

    def flatten(x):
        return [getattr(x, n) for n in data_fields], tuple(getattr(x, n) for n in meta_fields)

    def flatten_with_keys(x):
        return ([(GetAttrKey(n), getattr(x, n)) for n in data_fields],
                tuple(getattr(x, n) for n in meta_fields))

    def unflatten(meta, children):
        kwargs = dict(zip(meta_fields, meta))
        kwargs.update(zip(data_fields, children))
        return nodetype(**kwargs)

    register_pytree_node(nodetype, flatten, unflatten, flatten_with_keys)
    return nodetype


def _check_dataclass_fields(nodetype, data_fields, meta_fields, drop_fields):
    overlap = set(data_fields) & set(meta_fields)
    if overlap:
        raise ValueError(f"register_dataclass: data_fields and meta_fields must not overlap; "
                         f"both name {sorted(overlap)}")
    if not dataclasses.is_dataclass(nodetype):
        return
    # The constructor rebuilds instances from exactly these fields, so they must be its
    # arguments: all of them, or the rest named in drop_fields.
    init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
    given = set(data_fields) | set(meta_fields)
    if given != init_fields:
        msg = (f"register_dataclass: data_fields and meta_fields of {nodetype.__name__} must "
               "name every dataclass field with init=True, and only those.")
        if init_fields - given:
            msg += (f" Missing fields: {sorted(init_fields - given)} (name them in "
                    "drop_fields to leave them out).")
        if given - init_fields:
            msg += f" Unexpected fields: {sorted(given - init_fields)}."
        raise ValueError(msg)


# ---- mapping -----------------------------------------------------------------------------------
def tree_map(f: Callable, tree, *rest, is_leaf=None):
    """Apply ``f`` leaf-wise over one or more trees of the same structure.

    >>> tree_map(lambda a, b: a + b, {"x": 1}, {"x": 2})
    {'x': 3}
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = [flatten_up_to(treedef, r, "tree_map") for r in rest]
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


def tree_map_with_path(f: Callable, tree, *rest, is_leaf=None, is_leaf_takes_path=False):
    """:func:`tree_map` whose ``f`` also gets each leaf's key path first:
    ``f(key_path, leaf, *matching_leaves_of_rest)``.

    >>> tree_map_with_path(lambda path, x: f"{keystr(path)}={x}", {"a": 1, "b": [2]})
    {'a': "['a']=1", 'b': ["['b'][0]=2"]}
    """
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = [flatten_up_to(treedef, r, "tree_map_with_path") for r in rest]
    return tree_unflatten(treedef, [f(path, x, *xs) for (path, x), *xs in zip(pairs, *others)])


def broadcast_prefix(prefix_tree, full_tree, is_leaf=None, what="prefix",
                     prefix_is_leaf=None) -> list:
    """Broadcast each leaf of ``prefix_tree`` over the matching subtree of ``full_tree``;
    returns one value per leaf of ``full_tree`` (None in the prefix is a leaf here, and so
    is whatever ``prefix_is_leaf`` accepts).

    >>> broadcast_prefix((0, None), ([1, 2], 3))
    [0, 0, None]
    """
    def leaf(x):
        return x is None or (prefix_is_leaf is not None and prefix_is_leaf(x))
    leaves, treedef = tree_flatten(prefix_tree, is_leaf=leaf)
    full = tree_structure(full_tree, is_leaf)
    # Placeholder leaves are bare object()s, as JAX's: classes whose flattening decides
    # what is a leaf by its value (distrax's distributions keep ints as metadata) count
    # them as leaves.
    subtrees = flatten_up_to(tree_structure(prefix_tree, is_leaf=leaf),
                             tree_unflatten(full, [object() for _ in range(full.num_leaves)]),
                             what)
    out = []
    for leaf, sub in zip(leaves, subtrees):
        out.extend([leaf] * len(tree_leaves(sub)))
    return out


def tree_broadcast(prefix_tree, full_tree, is_leaf=None):
    """``full_tree``'s structure with each leaf of ``prefix_tree`` repeated over the matching
    subtree. ``is_leaf`` applies to ``prefix_tree``; None in either tree is an empty node.

    >>> tree_broadcast((1, 2, 3), (0, {"a": 0, "b": 0}, (0, 0)))
    (1, {'a': 2, 'b': 2}, (3, 3))
    """
    prefix_leaves, prefix_def = tree_flatten(prefix_tree, is_leaf)
    subtrees = flatten_up_to(prefix_def, full_tree, "tree_broadcast")
    out = []
    for leaf, sub in zip(prefix_leaves, subtrees):
        out.extend([leaf] * tree_structure(sub).num_leaves)
    return tree_structure(full_tree).unflatten(out)


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """Turn a tree of trees (outer of inner) into an inner tree of outer trees. With
    ``inner_treedef=None`` the inner structure is that of the first outer leaf's subtree.

    Only the leaf count is checked: the leaves are regrouped in flattening order.

    >>> tree_transpose(tree_structure([0, 0]), tree_structure((0, 0)), [(1, 2), (3, 4)])
    ([1, 3], [2, 4])
    """
    flat, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        subtrees = outer_treedef.flatten_up_to(pytree_to_transpose)
        if not subtrees:
            raise ValueError(f"tree_transpose: cannot infer inner_treedef: the outer structure "
                             f"{outer_treedef} has no leaves; pass inner_treedef")
        inner_treedef = tree_structure(subtrees[0])
    n_inner, n_outer = inner_treedef.num_leaves, outer_treedef.num_leaves
    if len(flat) != n_inner * n_outer:
        raise TypeError(f"tree_transpose: the tree {treedef} has {len(flat)} leaves, but outer "
                        f"{outer_treedef} of inner {inner_treedef} has {n_inner * n_outer}")
    rows = [flat[i * n_inner:(i + 1) * n_inner] for i in range(n_outer)]
    columns = zip(*rows) if rows else [()] * n_inner
    return tree_unflatten(inner_treedef, [tree_unflatten(outer_treedef, c) for c in columns])


# ---- reductions --------------------------------------------------------------------------------
_NO_INITIALIZER = object()


def tree_reduce(function, tree, initializer=_NO_INITIALIZER, is_leaf=None):
    """``functools.reduce`` over the leaves (an explicit ``initializer=None`` is an
    initializer, as in JAX).

    >>> tree_reduce(lambda a, b: a + b, {"x": 1, "y": [2, 3]})
    6
    >>> tree_reduce(lambda a, b: (a, b), [1], None)
    (None, 1)
    """
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_reduce_associative(operation, tree, *, identity=_NO_INITIALIZER, is_leaf=None):
    """Reduce the leaves with an associative ``operation`` as a balanced tree of calls
    (logarithmic depth). ``identity`` is the result for a tree without leaves.

    >>> tree_reduce_associative(lambda a, b: f"({a}+{b})", [1, (2, 3), [4, 5, 6]])
    '((1+(2+3))+(4+(5+6)))'
    """
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
        if identity is _NO_INITIALIZER:
            raise TypeError("tree_reduce_associative: the tree has no leaves; pass identity= "
                            "for the result of an empty reduction")
        return identity
    return _halving_reduce(operation, leaves)


def _halving_reduce(operation, xs):
    if len(xs) == 1:
        return xs[0]
    half = len(xs) // 2
    return operation(_halving_reduce(operation, xs[:half]), _halving_reduce(operation, xs[half:]))


def tree_all(tree, *, is_leaf=None) -> bool:
    """True if every leaf is truthy.

    >>> tree_all((True, [1, 2])), tree_all((True, [0]))
    (True, False)
    """
    return all(tree_leaves(tree, is_leaf))


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree: bound args are children, ``func`` static.

    >>> tree_leaves(Partial(max, 1.0, key=abs))
    [1.0, <built-in function abs>]
    """


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, c: Partial(func, *c[0], **c[1]))
