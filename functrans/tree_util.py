"""Pytrees: nested containers (tuples, lists, dicts, None, namedtuples, registered classes and
dataclasses) whose leaves are arrays. Transformations flatten their inputs and outputs with this.

    >>> leaves, tree = tree_flatten({"w": 1.0, "b": (2.0, None)})
    >>> leaves, tree
    ([2.0, 1.0], PyTreeDef({'b': (*, None), 'w': *}))
    >>> tree_unflatten(tree, [3, 4])
    {'b': (3, None), 'w': 4}
"""
from __future__ import annotations

import dataclasses
import functools
from collections import OrderedDict, defaultdict
from typing import Any, Callable, NamedTuple


class _NodeType(NamedTuple):
    to_iterable: Callable  # node -> (children, aux_data)
    from_iterable: Callable  # (aux_data, children) -> node


_registry: dict[type, _NodeType] = {}


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable) -> None:
    """Register ``nodetype`` as a pytree node.

    ``flatten_func(node) -> (children, aux_data)``; ``unflatten_func(aux_data, children) -> node``.
    ``aux_data`` must be hashable: it is part of the tree structure (and of jit cache keys).

    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    """
    if nodetype in _registry:
        raise ValueError(f"{nodetype.__name__} is already registered as a pytree node")
    _registry[nodetype] = _NodeType(flatten_func, unflatten_func)


def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func, flatten_func=None):
    """JAX-compatible spelling; keys are not tracked, so this registers the plain flatten.

    ``flatten_with_keys(node) -> ([(key, child), ...], aux_data)``.
    """
    if flatten_func is None:
        def flatten_func(node):
            children, aux = flatten_with_keys(node)
            return [c for _, c in children], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func)


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
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(cls=None, data_fields=None, meta_fields=None, drop_fields=()):
    """Register a dataclass whose ``data_fields`` are children and ``meta_fields`` static.

    Without field lists, fields marked ``dataclasses.field(metadata=dict(static=True))`` are
    meta fields and the rest are data fields. Usable as a decorator::

        @register_dataclass
        @dataclasses.dataclass
        class Params:
            w: Array
            n: int = dataclasses.field(default=1, metadata=dict(static=True))
    """
    if cls is None:
        return functools.partial(register_dataclass, data_fields=data_fields,
                                 meta_fields=meta_fields, drop_fields=drop_fields)
    if data_fields is None or meta_fields is None:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"register_dataclass: {cls.__name__} is not a dataclass; pass "
                            "data_fields and meta_fields explicitly")
        fields = [f for f in dataclasses.fields(cls) if f.init and f.name not in drop_fields]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)

    def flatten(x):
        return [getattr(x, n) for n in data_fields], tuple(getattr(x, n) for n in meta_fields)

    def unflatten(meta, children):
        kwargs = dict(zip(meta_fields, meta))
        kwargs.update(zip(data_fields, children))
        return cls(**kwargs)

    register_pytree_node(cls, flatten, unflatten)
    return cls


def _sorted_dict_keys(d):
    try:
        return sorted(d)
    except TypeError:
        raise TypeError(f"pytree dict keys must be sortable; got keys {list(d)!r}") from None


register_pytree_node(tuple, lambda t: (t, None), lambda _, c: tuple(c))
register_pytree_node(list, lambda l: (l, None), lambda _, c: list(c))
register_pytree_node(type(None), lambda n: ((), None), lambda _, c: None)


def _flatten_dict(d):
    keys = _sorted_dict_keys(d)
    return [d[k] for k in keys], tuple(keys)


register_pytree_node(dict, _flatten_dict, lambda keys, c: dict(zip(keys, c)))
register_pytree_node(OrderedDict, lambda d: (list(d.values()), tuple(d)),
                     lambda keys, c: OrderedDict(zip(keys, c)))


def _flatten_defaultdict(d):
    keys = _sorted_dict_keys(d)
    return [d[k] for k in keys], (d.default_factory, tuple(keys))


register_pytree_node(defaultdict, _flatten_defaultdict,
                     lambda aux, c: defaultdict(aux[0], zip(aux[1], c)))


def _is_namedtuple(t: type) -> bool:
    return issubclass(t, tuple) and hasattr(t, "_fields") and t is not tuple


def _node_type(x):
    t = type(x)
    node = _registry.get(t)
    if node is None and _is_namedtuple(t):
        return _NodeType(lambda n: (tuple(n), None), lambda _, c, t=t: t(*c))
    return node


class PyTreeDef:
    """The structure of a pytree: node kind, static data and child structures.

    >>> tree_structure({"a": 1, "b": (2, 3)}).num_leaves
    3
    """

    __slots__ = ("node_type", "aux", "_children", "num_leaves", "_hash")

    def __init__(self, node_type, aux, children: tuple):
        self.node_type = node_type  # None for a leaf
        self.aux = aux
        self._children = children
        self.num_leaves = 1 if node_type is None else sum(c.num_leaves for c in children)
        self._hash = None

    @property
    def num_nodes(self) -> int:
        return 1 + sum(c.num_nodes for c in self._children)

    def children(self) -> list:
        """The structures of this node's children (as JAX's ``PyTreeDef.children()``)."""
        return list(self._children)

    def node_data(self):
        """``(node type, aux data)`` of the root, or None for a leaf."""
        return None if self.node_type is None else (self.node_type, self.aux)

    def unflatten(self, leaves):
        return tree_unflatten(self, leaves)

    def flatten_up_to(self, tree) -> list:
        return flatten_up_to(self, tree)

    def __eq__(self, other):
        if self is other:
            return True
        return (type(other) is PyTreeDef and self.node_type == other.node_type
                and self.aux == other.aux and self._children == other._children)

    def __hash__(self):
        if self._hash is None:
            self._hash = hash((self.node_type, _hashable(self.aux), self._children))
        return self._hash

    def __repr__(self):
        return f"PyTreeDef({self._str()})"

    def _str(self) -> str:
        t = self.node_type
        if t is None:
            return "*"
        kids = [c._str() for c in self._children]
        if t is tuple:
            return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"
        if t is list:
            return "[" + ", ".join(kids) + "]"
        if t is dict:
            return "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(self.aux, kids)) + "}"
        if t is type(None):
            return "None"
        name = f"namedtuple[{t.__name__}]" if _is_namedtuple(t) else f"{t.__name__}[{self.aux}]"
        return f"CustomNode({name}, [{', '.join(kids)}])"


def _hashable(aux):
    try:
        hash(aux)
        return aux
    except TypeError:
        raise TypeError(f"pytree aux data must be hashable, got {aux!r}") from None


_LEAF = PyTreeDef(None, None, ())


def tree_flatten(tree, is_leaf: Callable[[Any], bool] | None = None):
    """``(leaves, treedef)``: leaves in a deterministic order (dicts by sorted key).

    >>> tree_flatten([1, (2, 3)])[0]
    [1, 2, 3]
    """
    leaves: list = []
    return leaves, _flatten(tree, is_leaf, leaves)


def _flatten(x, is_leaf, leaves) -> PyTreeDef:
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return _LEAF
    if x is None:
        return _NONE
    node = _node_type(x)
    if node is None:
        leaves.append(x)
        return _LEAF
    children, aux = node.to_iterable(x)
    t = type(x)
    return PyTreeDef(t, aux, tuple(_flatten(c, is_leaf, leaves) for c in children))


_NONE = PyTreeDef(type(None), None, ())


def tree_unflatten(treedef: PyTreeDef, leaves):
    """Build a pytree with structure ``treedef`` from ``leaves``.

    >>> tree_unflatten(tree_structure((1, [2])), ["a", "b"])
    ('a', ['b'])
    """
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(f"tree_unflatten: {treedef} has {treedef.num_leaves} leaves, "
                         f"got {len(leaves)}")
    it = iter(leaves)
    return _unflatten(treedef, it)


def _unflatten(td: PyTreeDef, it):
    if td.node_type is None:
        return next(it)
    children = [_unflatten(c, it) for c in td._children]
    node = _registry.get(td.node_type)
    if node is None:  # namedtuple
        return td.node_type(*children)
    return node.from_iterable(td.aux, children)


def tree_leaves(tree, is_leaf=None) -> list:
    """The leaves of ``tree`` in flattening order.

    >>> tree_leaves({"b": [1, None], "a": 2})
    [2, 1]
    """
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None) -> PyTreeDef:
    """The PyTreeDef of ``tree``.

    >>> tree_structure((1, {"a": 2}))
    PyTreeDef((*, {'a': *}))
    """
    return tree_flatten(tree, is_leaf)[1]


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """True for the structure of a single leaf.

    >>> treedef_is_leaf(tree_structure(1.0)), treedef_is_leaf(tree_structure((1.0,)))
    (True, False)
    """
    return treedef.node_type is None


def all_leaves(iterable, is_leaf=None) -> bool:
    """True if every element of ``iterable`` is a leaf.

    >>> all_leaves([1, 2.0]), all_leaves([1, (2,)])
    (True, False)
    """
    return all(treedef_is_leaf(tree_structure(x, is_leaf)) for x in iterable)


def tree_map(f: Callable, tree, *rest, is_leaf=None):
    """Apply ``f`` leaf-wise over one or more trees of the same structure.

    >>> tree_map(lambda a, b: a + b, {"x": 1}, {"x": 2})
    {'x': 3}
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = [flatten_up_to(treedef, r, "tree_map") for r in rest]
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


def flatten_up_to(treedef: PyTreeDef, tree, what: str = "tree") -> list:
    """Flatten ``tree`` down to the structure ``treedef``: where ``treedef`` has a leaf, the
    whole subtree of ``tree`` there is one element (used for in_axes-style prefixes). A
    mismatch raises ValueError naming the path and what differs.

    >>> flatten_up_to(tree_structure((0, 0)), ([1, 2], {"a": 3}))
    [[1, 2], {'a': 3}]
    """
    out: list = []
    _flatten_up_to(treedef, tree, out, what, "")
    return out


def _flatten_up_to(td: PyTreeDef, x, out, what, path):
    if td.node_type is None:
        out.append(x)
        return
    where = f"{what}: tree structure mismatch at {path or 'the root'}"
    if td.node_type is type(None):
        if x is not None:
            raise ValueError(f"{where}: expected None, got {type(x).__name__} {x!r:.60}")
        return
    node = _node_type(x)
    if type(x) is not td.node_type or node is None:
        raise ValueError(f"{where}: expected a {_type_name(td.node_type)}, got a "
                         f"{_type_name(type(x))}{'' if node else ' (a leaf)'}")
    children, aux = node.to_iterable(x)
    children = list(children)
    if td.node_type in (tuple, list) or _is_namedtuple(td.node_type):
        if len(children) != len(td._children):
            raise ValueError(f"{where}: expected a {_type_name(td.node_type)} of length "
                             f"{len(td._children)}, got length {len(children)}")
    elif td.node_type is dict or td.node_type is OrderedDict:
        if aux != td.aux:
            raise ValueError(f"{where}: expected a {_type_name(td.node_type)} with keys "
                             f"{list(td.aux)}, got keys {list(aux)}")
    elif aux != td.aux or len(children) != len(td._children):
        raise ValueError(f"{where}: expected a {_type_name(td.node_type)} with node data "
                         f"{td.aux!r} and {len(td._children)} children, got node data {aux!r} "
                         f"and {len(children)} children")
    keys = aux if td.node_type in (dict, OrderedDict) else \
        aux[1] if td.node_type is defaultdict else range(len(children))
    for k, c, ctd in zip(keys, children, td._children):
        _flatten_up_to(ctd, c, out, what, f"{path}[{k!r}]")


def _type_name(t) -> str:
    return f"namedtuple {t.__name__}" if _is_namedtuple(t) else t.__name__


def broadcast_prefix(prefix_tree, full_tree, is_leaf=None, what="prefix") -> list:
    """Broadcast each leaf of ``prefix_tree`` over the matching subtree of ``full_tree``;
    returns one value per leaf of ``full_tree`` (None in the prefix is a leaf here).

    >>> broadcast_prefix((0, None), ([1, 2], 3))
    [0, 0, None]
    """
    leaves, treedef = tree_flatten(prefix_tree, is_leaf=lambda x: x is None)
    full = tree_structure(full_tree, is_leaf)
    subtrees = flatten_up_to(tree_structure(prefix_tree, is_leaf=lambda x: x is None),
                             tree_unflatten(full, list(range(full.num_leaves))), what)
    out = []
    for leaf, sub in zip(leaves, subtrees):
        out.extend([leaf] * len(tree_leaves(sub)))
    return out


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
    """Turn a tree of trees (outer of inner) into an inner tree of outer trees.

    >>> tree_transpose(tree_structure([0, 0]), tree_structure((0, 0)), [(1, 2), (3, 4)])
    ([1, 3], [2, 4])
    """
    flat = flatten_up_to(outer_treedef, pytree_to_transpose, "tree_transpose")
    inner_leaves = [flatten_up_to(inner_treedef, x, "tree_transpose") for x in flat]
    columns = list(zip(*inner_leaves)) if inner_leaves else [()] * inner_treedef.num_leaves
    return tree_unflatten(inner_treedef, [tree_unflatten(outer_treedef, c) for c in columns])


def tree_reduce(function, tree, initializer=None, is_leaf=None):
    """``functools.reduce`` over the leaves.

    >>> tree_reduce(lambda a, b: a + b, {"x": 1, "y": [2, 3]})
    6
    """
    leaves = tree_leaves(tree, is_leaf)
    return (functools.reduce(function, leaves) if initializer is None
            else functools.reduce(function, leaves, initializer))


def tree_all(tree) -> bool:
    """True if every leaf is truthy.

    >>> tree_all((True, [1, 2])), tree_all((True, [0]))
    (True, False)
    """
    return all(tree_leaves(tree))


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree: bound args are children, ``func`` static.

    >>> tree_leaves(Partial(max, 1.0, key=abs))
    [1.0, <built-in function abs>]
    """


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, c: Partial(func, *c[0], **c[1]))
