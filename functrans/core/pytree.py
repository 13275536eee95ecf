"""The pytree registry and ``PyTreeDef``: which types are containers, how each one splits into
children (each named by a key path entry) and static data, and the structure that flattening
leaves behind. :mod:`functrans.tree_util` builds the public API on this.

    >>> leaves, tree = tree_flatten({"w": 1.0, "b": (2.0, None)})
    >>> leaves, tree
    ([2.0, 1.0], PyTreeDef({'b': (*, None), 'w': *}))
"""
from __future__ import annotations

import os
from collections import OrderedDict, defaultdict
from typing import Any, Callable, NamedTuple

from .tree_keys import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey


class _NodeType(NamedTuple):
    to_iterable: Callable  # node -> (children, aux_data)
    from_iterable: Callable  # (aux_data, children) -> node
    to_iterable_with_keys: Callable | None = None  # node -> ([(key, child), ...], aux_data)
    # The node type structures record (None: the value's own type). High-level values'
    # classes record HiVal's, so a value and its traced form have one structure.
    as_type: type | None = None


class _Registry(dict):
    """The node types (the single source of truth): entries are mirrored into the C++
    traversal (``pytree_fast``) when it is in use, whoever adds them."""

    def __setitem__(self, nodetype, node):
        super().__setitem__(nodetype, node)
        if _fast is not None and _fast is not _UNLOADED:
            _fast.mirror(nodetype)


class _PublicLeaves(set):
    def add(self, nodetype):
        super().add(nodetype)
        if _fast is not None and _fast is not _UNLOADED and nodetype in _registry:
            _fast.mirror(nodetype)


_registry: dict[type, _NodeType] = _Registry()
PUBLIC_LEAVES: set = _PublicLeaves()
"""Node types that the public tree functions (``functrans.tree_util``) treat as leaves: typed
PRNG key arrays, arrays to their users, pytree nodes around their data to transformations."""

# The C++ traversal (optree, when installed; FUNCTRANS_OPTREE=0 turns it off): loaded once a
# process has flattened LOAD_AFTER trees (a program called in a loop: jit's arguments, a
# library's modules at every step), so that neither ``import functrans`` nor a program's
# first trace and compile pays its import (about 20 ms). None: not in use.
_UNLOADED = object()
_fast = _UNLOADED if os.environ.get("FUNCTRANS_OPTREE", "1") != "0" else None
LOAD_AFTER = 256
_flattens_left = [LOAD_AFTER]  # until optree loads


def _load_fast():
    global _fast
    try:
        from . import pytree_fast
    except ImportError:  # optree is not installed
        _fast = None
    else:
        pytree_fast.mirror_all()
        _fast = pytree_fast
    return _fast


def use_optree(enabled: bool) -> bool:
    """Flatten and unflatten with optree's C++ traversal (when it is installed) or with the
    pure-Python one; returns whether the C++ one is now in use. Results are the same either
    way (``tests/test_pytree_fast.py`` checks it); only the speed differs.

    >>> previous = use_optree(False)
    >>> tree_flatten({"b": 1, "a": 2})
    ([2, 1], PyTreeDef({'a': *, 'b': *}))
    >>> _ = use_optree(True)
    """
    global _fast
    _fast = _UNLOADED if enabled else None
    return enabled and _load_fast() is not None


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None) -> None:
    """Register ``nodetype`` as a pytree node.

    ``flatten_func(node) -> (children, aux_data)``; ``unflatten_func(aux_data, children) -> node``.
    ``aux_data`` is part of the tree structure (and of jit cache keys): structures are equal
    when their aux data compare equal (``==``); as in JAX it need not be hashable.
    ``flatten_with_keys_func(node) -> ([(key, child), ...], aux_data)`` names the children in
    key paths; without it the ``i``-th child's key is ``FlattenedIndexKey(i)``.

    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    >>> tree_leaves_with_path(Pair(1, 2))
    [((FlattenedIndexKey(key=0),), 1), ((FlattenedIndexKey(key=1),), 2)]
    """
    if nodetype in _registry:
        raise ValueError(f"{nodetype.__name__} is already registered as a pytree node")
    _registry[nodetype] = _NodeType(flatten_func, unflatten_func, flatten_with_keys_func)


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable,
                              unflatten_func: Callable, flatten_func: Callable | None = None):
    """Register ``nodetype`` as a pytree node whose children have key path entries.

    ``flatten_with_keys(node) -> ([(key, child), ...], aux_data)``. ``flatten_func``, if
    given, must return the same children (without keys) and aux data; it only saves time.

    >>> class Span:
    ...     def __init__(self, lo, hi): self.lo, self.hi = lo, hi
    >>> register_pytree_with_keys(
    ...     Span, lambda s: (((GetAttrKey("lo"), s.lo), (GetAttrKey("hi"), s.hi)), None),
    ...     lambda _, c: Span(*c))
    >>> tree_leaves_with_path(Span(0, 1))
    [((GetAttrKey(name='lo'),), 0), ((GetAttrKey(name='hi'),), 1)]
    """
    if flatten_func is None:
        def flatten_func(node):
            children, aux = flatten_with_keys(node)
            return [c for _, c in children], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def _sorted_dict_keys(d):
    try:
        return sorted(d)
    except TypeError:
        raise TypeError(f"pytree dict keys must be sortable; got keys {list(d)!r}") from None


def _flatten_dict(d):
    keys = _sorted_dict_keys(d)
    return tuple(d[k] for k in keys), tuple(keys)


def _flatten_dict_with_keys(d):
    keys = _sorted_dict_keys(d)
    return tuple((DictKey(k), d[k]) for k in keys), tuple(keys)


def _flatten_defaultdict(d):
    keys = _sorted_dict_keys(d)
    return [d[k] for k in keys], (d.default_factory, tuple(keys))


def _flatten_defaultdict_with_keys(d):
    keys = _sorted_dict_keys(d)
    return [(DictKey(k), d[k]) for k in keys], (d.default_factory, tuple(keys))


register_pytree_node(tuple, lambda t: (t, None), lambda _, c: tuple(c),
                     lambda t: (tuple((SequenceKey(i), c) for i, c in enumerate(t)), None))
register_pytree_node(list, lambda l: (l, None), lambda _, c: list(c),
                     lambda l: (tuple((SequenceKey(i), c) for i, c in enumerate(l)), None))
register_pytree_node(type(None), lambda n: ((), None), lambda _, c: None, lambda n: ((), None))
register_pytree_node(dict, _flatten_dict, lambda keys, c: dict(zip(keys, c)),
                     _flatten_dict_with_keys)
register_pytree_node(OrderedDict, lambda d: (list(d.values()), tuple(d)),
                     lambda keys, c: OrderedDict(zip(keys, c)),
                     lambda d: (tuple((DictKey(k), v) for k, v in d.items()), tuple(d)))
register_pytree_node(defaultdict, _flatten_defaultdict,
                     lambda aux, c: defaultdict(aux[0], zip(aux[1], c)),
                     _flatten_defaultdict_with_keys)


def _is_namedtuple(t: type) -> bool:
    return issubclass(t, tuple) and hasattr(t, "_fields") and t is not tuple


def plain_namedtuple(t: type) -> bool:
    """Whether class ``t`` is a namedtuple flattened as one: its fields in order, no
    registration of its own (jit's fast signatures take it like a tuple).

        >>> import collections
        >>> plain_namedtuple(collections.namedtuple("P", "a b")), plain_namedtuple(tuple)
        (True, False)
    """
    return t not in _registry and _is_namedtuple(t)


def _namedtuple_node(t: type) -> _NodeType:
    return _NodeType(lambda n: (list(n), None), lambda _, c: t(*c),
                     lambda n: ([(GetAttrKey(f), c) for f, c in zip(t._fields, n)], None))


def _node_type(x):
    t = type(x)
    node = _registry.get(t)
    if node is None and _is_namedtuple(t):
        return _namedtuple_node(t)
    return node


def _keyed_children(node: _NodeType, x) -> tuple:
    """``([(key, child), ...], aux)`` of node ``x``, numbering children the node cannot name."""
    if node.to_iterable_with_keys is not None:
        return node.to_iterable_with_keys(x)
    children, aux = node.to_iterable(x)
    return [(FlattenedIndexKey(i), c) for i, c in enumerate(children)], aux


class PyTreeDef:
    """The structure of a pytree: node kind, static data and child structures.

    >>> tree_structure({"a": 1, "b": (2, 3)}).num_leaves
    3
    """

    __slots__ = ("node_type", "aux", "_children", "num_leaves", "_hash", "_num_nodes")

    def __init__(self, node_type, aux, children: tuple):
        self.node_type = node_type  # None for a leaf
        self.aux = aux
        self._children = children
        self.num_leaves = 1 if node_type is None else sum(c.num_leaves for c in children)
        self._hash = None
        self._num_nodes = None

    @property
    def num_nodes(self) -> int:
        """Nodes and leaves in the structure.

        >>> tree_structure({"a": (1, 2), "b": [3]}).num_nodes
        6
        """
        n = self._num_nodes
        if n is None:
            n = self._num_nodes = 1 + sum(c.num_nodes for c in self._children)
        return n

    def children(self) -> list:
        """The structures of this node's children (as JAX's ``PyTreeDef.children()``).

        >>> tree_structure((1, [2, 3])).children()
        [PyTreeDef(*), PyTreeDef([*, *])]
        """
        return list(self._children)

    def node_data(self):
        """``(node type, aux data)`` of the root (a dict's keys as a list), or None for a leaf.

        >>> tree_structure({"b": 1, "a": 2}).node_data(), tree_structure(1).node_data()
        ((<class 'dict'>, ['a', 'b']), None)
        """
        if self.node_type is None:
            return None
        return self.node_type, (list(self.aux) if self.node_type is dict else self.aux)

    def unflatten(self, leaves):
        """The pytree of this structure with ``leaves``.

        >>> tree_structure((0, [0])).unflatten("ab")
        ('a', ['b'])
        """
        return tree_unflatten(self, leaves)

    def flatten_up_to(self, tree) -> list:
        """The subtrees of ``tree`` where this structure has its leaves.

        >>> tree_structure((0, 0)).flatten_up_to(([1, 2], 3))
        [[1, 2], 3]
        """
        return flatten_up_to(self, tree)

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """This structure with each of its leaves replaced by ``inner``.

        >>> tree_structure([0, 0]).compose(tree_structure((0, None)))
        PyTreeDef([(*, None), (*, None)])
        """
        if not isinstance(inner, PyTreeDef):
            raise TypeError(f"PyTreeDef.compose: expected a PyTreeDef, got "
                            f"{type(inner).__name__}")
        if self.node_type is None:
            return inner
        return PyTreeDef(self.node_type, self.aux, tuple(c.compose(inner) for c in self._children))

    def walk(self, f_node: Callable, f_leaf: Callable | None, leaves):
        """Fold the structure bottom-up over ``leaves``: each leaf becomes ``f_leaf(leaf)``
        (the leaf itself if ``f_leaf`` is None) and each node
        ``f_node(tuple_of_child_results, aux_data)``.

        >>> tree_structure((1, [2, 3])).walk(lambda kids, aux: sum(kids), None, [1, 2, 3])
        6
        """
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"PyTreeDef.walk: {self} has {self.num_leaves} leaves, got "
                             f"{len(leaves)}")
        it = iter(leaves)

        def go(td):
            if td.node_type is None:
                leaf = next(it)
                return leaf if f_leaf is None else f_leaf(leaf)
            return f_node(tuple(go(c) for c in td._children), td.node_data()[1])
        return go(self)

    def from_iterable_tree(self, tree):
        """Build this structure from nested iterables: at each node ``tree`` is iterated for
        the children (a dict iterates its keys); where this structure has a leaf, ``tree`` is
        taken whole.

        >>> tree_structure({"a": 0, "b": (0, 0)}).from_iterable_tree([1, iter([2, 3])])
        {'a': 1, 'b': (2, 3)}
        """
        def go(td, x):
            if td.node_type is None:
                return x
            try:
                kids = list(x)
            except TypeError:
                raise TypeError(f"PyTreeDef.from_iterable_tree: expected an iterable for the "
                                f"children of {td}, got {type(x).__name__}") from None
            if len(kids) != len(td._children):
                raise ValueError(f"PyTreeDef.from_iterable_tree: arity mismatch: {td} has "
                                 f"{len(td._children)} children, got {len(kids)}")
            return _make_node(td, [go(c, k) for c, k in zip(td._children, kids)])
        return go(self, tree)

    def __eq__(self, other):
        if self is other:
            return True
        # Aux data compare as JAX's (and optree's) do: the same object is equal to itself.
        return (isinstance(other, PyTreeDef) and self.node_type == other.node_type
                and (self.aux is other.aux or self.aux == other.aux)
                and self._children == other._children)

    def __hash__(self):
        # As JAX's, the hash leaves out aux data (dict keys, custom nodes' static data):
        # hashing a library's static objects cost more than the rest of a jit call, and
        # they may be unhashable. Equal structures hash equally; __eq__ tells the rest apart.
        # Both representations (this and optree's, pytree_fast) give the same hash.
        if self._hash is None:
            self._hash = hash((self.node_type, self.num_leaves, self.num_nodes))
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


_LEAF = PyTreeDef(None, None, ())
_NONE = PyTreeDef(type(None), None, ())


def tree_flatten(tree, is_leaf: Callable[[Any], bool] | None = None):
    """``(leaves, treedef)``: leaves in a deterministic order (dicts by sorted key).

    >>> tree_flatten([1, (2, 3)])[0]
    [1, 2, 3]
    """
    out = _flatten_fast(tree, is_leaf, False)
    if out is not None:
        return out
    leaves: list = []
    return leaves, _flatten(tree, is_leaf, leaves)


def public_flatten(tree, is_leaf: Callable[[Any], bool] | None = None):
    """:func:`tree_flatten` as users' tree functions (``functrans.tree_util``) flatten: the
    types in ``PUBLIC_LEAVES`` (typed key arrays) are leaves.

    >>> public_flatten([1, (2, None)])
    ([1, 2], PyTreeDef([*, (*, None)]))
    """
    out = _flatten_fast(tree, is_leaf, True)
    if out is not None:
        return out
    leaves: list = []
    return leaves, _flatten(tree, public_leaf(is_leaf), leaves)


def _flatten_fast(tree, is_leaf, public: bool):
    """``(leaves, treedef)`` from optree's traversal (pytree_fast.py), or None where it is
    not installed, turned off, or leaves the tree to the Python path."""
    fast = _fast
    if fast is _UNLOADED:
        _flattens_left[0] -= 1
        if _flattens_left[0] > 0:
            return None
        fast = _load_fast()
    return None if fast is None else fast.flatten(tree, is_leaf, public)


def public_leaf(is_leaf):
    """``is_leaf`` that also stops at the public leaf types (typed key arrays)."""
    if is_leaf is None:
        return lambda x: type(x) in PUBLIC_LEAVES
    return lambda x: type(x) in PUBLIC_LEAVES or is_leaf(x)


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
    t = node.as_type or type(x)
    return PyTreeDef(t, aux, tuple(_flatten(c, is_leaf, leaves) for c in children))


def tree_flatten_with_path(tree, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False):
    """``([(key_path, leaf), ...], treedef)``: :func:`tree_flatten` with each leaf's key path.

    ``is_leaf`` is called as ``is_leaf(x)``, or ``is_leaf(key_path, x)`` if
    ``is_leaf_takes_path``.

    >>> pairs, treedef = tree_flatten_with_path([1, {"x": 3}])
    >>> pairs
    [((SequenceKey(idx=0),), 1), ((SequenceKey(idx=1), DictKey(key='x')), 3)]
    >>> treedef
    PyTreeDef([*, {'x': *}])
    """
    if is_leaf is not None and not is_leaf_takes_path:
        is_leaf_no_path = is_leaf
        is_leaf = lambda _, x: is_leaf_no_path(x)  # noqa: E731
    pairs: list = []
    return pairs, _flatten_with_path(tree, is_leaf, (), pairs)


def _flatten_with_path(x, is_leaf, path: tuple, pairs: list) -> PyTreeDef:
    if is_leaf is not None and is_leaf(path, x):
        pairs.append((path, x))
        return _LEAF
    if x is None:
        return _NONE
    node = _node_type(x)
    if node is None:
        pairs.append((path, x))
        return _LEAF
    keyed, aux = _keyed_children(node, x)
    # A None key adds nothing to the path: a typed key array's data is the key array itself
    # to key paths, as JAX's key arrays are leaves.
    return PyTreeDef(node.as_type or type(x), aux, tuple(
        _flatten_with_path(c, is_leaf, path if k is None else path + (k,), pairs)
        for k, c in keyed))


def tree_leaves_with_path(tree, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False) -> list:
    """``[(key_path, leaf), ...]`` in flattening order.

    >>> tree_leaves_with_path({"b": [1, None], "a": 2})
    [((DictKey(key='a'),), 2), ((DictKey(key='b'), SequenceKey(idx=0)), 1)]
    """
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_unflatten(treedef: PyTreeDef, leaves):
    """Build a pytree with structure ``treedef`` from ``leaves``.

    >>> tree_unflatten(tree_structure((1, [2])), ["a", "b"])
    ('a', ['b'])
    """
    if type(treedef) is not PyTreeDef:  # optree's structure (pytree_fast)
        return treedef.unflatten(leaves)
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(f"tree_unflatten: {treedef} has {treedef.num_leaves} leaves, "
                         f"got {len(leaves)}")
    it = iter(leaves)
    return _unflatten(treedef, it)


def _unflatten(td: PyTreeDef, it):
    if td.node_type is None:
        return next(it)
    return _make_node(td, [_unflatten(c, it) for c in td._children])


def _make_node(td: PyTreeDef, children: list):
    node = _registry.get(td.node_type)
    if node is None:  # namedtuple
        return td.node_type(*children)
    return node.from_iterable(td.aux, children)


def unflatten_source(treedef: PyTreeDef, leaves: list, names: dict) -> str | None:
    """Python source of an expression that builds ``treedef``'s tree from the expressions
    ``leaves`` (in flattening order), or None when a node is not a tuple, list, dict, None or
    plain namedtuple. The objects the source names (dict keys, namedtuple classes) are added
    to ``names``. jit's fast path compiles it into its caller: no calls per node.

    >>> names = {}
    >>> unflatten_source(tree_structure((1, [2, None], {"a": 3})), ["x", "y", "z"], names)
    '(x, [y, None], {_tree0: z})'
    >>> names
    {'_tree0': 'a'}
    """
    if len(leaves) != treedef.num_leaves:
        return None
    return _node_source(treedef, iter(leaves), names)


def _node_source(td: PyTreeDef, leaves, names: dict) -> str | None:
    t = td.node_type
    if t is None:
        return next(leaves)
    kids = [_node_source(c, leaves, names) for c in td._children]
    if None in kids:
        return None
    if t is tuple:
        return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"
    if t is list:
        return "[" + ", ".join(kids) + "]"
    if t is type(None):
        return "None"
    if t is dict or plain_namedtuple(t):
        refs = []
        for obj in (td.aux if t is dict else (t,)):
            refs.append(f"_tree{len(names)}")
            names[refs[-1]] = obj
        if t is dict:
            return "{" + ", ".join(f"{r}: {k}" for r, k in zip(refs, kids)) + "}"
        return f"{refs[0]}({', '.join(kids)})"
    return None


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


def flatten_one_level(tree):
    """``(children, aux_data)`` of one pytree node; ValueError for a leaf.

    >>> flatten_one_level({"b": {"c": 3}, "a": [1, 2]})
    (([1, 2], {'c': 3}), ('a', 'b'))
    """
    node = _one_level_node(tree)
    children, aux = node.to_iterable(tree)
    return children, (type(tree) if _is_namedtuple(type(tree)) else aux)


def flatten_one_level_with_keys(tree):
    """``([(key, child), ...], aux_data)`` of one pytree node; ValueError for a leaf.

    >>> flatten_one_level_with_keys((5, 6))
    (((SequenceKey(idx=0), 5), (SequenceKey(idx=1), 6)), None)
    """
    pairs, aux = _keyed_children(_one_level_node(tree), tree)
    return pairs, (type(tree) if _is_namedtuple(type(tree)) else aux)


def _one_level_node(tree) -> _NodeType:
    node = _node_type(tree)
    if node is None:
        raise ValueError(f"can't tree-flatten type: {type(tree)}: it is a leaf, not a "
                         "registered pytree node")
    return node


def is_tree_node(typ) -> bool:
    """True if ``typ`` is a pytree node type (built-in, registered, or a namedtuple class).

    >>> is_tree_node(dict), is_tree_node(int), is_tree_node({})
    (True, False, False)
    """
    return isinstance(typ, type) and (typ in _registry or _is_namedtuple(typ))


def treedef_tuple(treedefs) -> PyTreeDef:
    """The structure of a tuple whose children have the structures ``treedefs``.

    >>> treedef_tuple([tree_structure([1, 2]), tree_structure({"a": 3})])
    PyTreeDef(([*, *], {'a': *}))
    """
    treedefs = tuple(treedefs)
    for i, td in enumerate(treedefs):
        if not isinstance(td, PyTreeDef):
            raise TypeError(f"treedef_tuple: element {i} is a {type(td).__name__}, not a "
                            "PyTreeDef")
    return PyTreeDef(tuple, None, treedefs)


def treedef_children(treedef: PyTreeDef) -> list:
    """The structures of the root's children.

    >>> treedef_children(tree_structure([(1, 2), 3, {"a": 4}]))
    [PyTreeDef((*, *)), PyTreeDef(*), PyTreeDef({'a': *})]
    """
    return treedef.children()


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """True for a structure with a single node: a leaf, or a node without children (None,
    ``()``, a static object).

    >>> treedef_is_leaf(tree_structure(1.0)), treedef_is_leaf(tree_structure((1.0,)))
    (True, False)
    >>> treedef_is_leaf(tree_structure(None))
    True
    """
    return treedef.num_nodes == 1


def all_leaves(iterable, is_leaf=None) -> bool:
    """True if every element of ``iterable`` is a leaf (None is not: it is an empty node).

    >>> all_leaves([1, 2.0]), all_leaves([1, (2,)]), all_leaves([None])
    (True, False, False)
    """
    if is_leaf is None:
        return all(x is not None and _node_type(x) is None for x in iterable)
    items = list(iterable)
    leaves = tree_leaves(items, is_leaf)
    return len(leaves) == len(items) and all(a is b for a, b in zip(items, leaves))


def flatten_up_to(treedef: PyTreeDef, tree, what: str = "tree") -> list:
    """Flatten ``tree`` down to the structure ``treedef``: where ``treedef`` has a leaf, the
    whole subtree of ``tree`` there is one element (used for in_axes-style prefixes). A
    mismatch raises ValueError naming the path and what differs.

    >>> flatten_up_to(tree_structure((0, 0)), ([1, 2], {"a": 3}))
    [[1, 2], {'a': 3}]
    """
    if type(treedef) is not PyTreeDef:  # optree's structure: optree flattens down to it
        out = treedef.leaves_up_to(tree)
        if out is not None:
            return out
    out = []
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
    if node is None or (node.as_type or type(x)) is not td.node_type:
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
    elif (aux is not td.aux and aux != td.aux) or len(children) != len(td._children):
        raise ValueError(f"{where}: expected a {_type_name(td.node_type)} with node data "
                         f"{td.aux!r} and {len(td._children)} children, got node data {aux!r} "
                         f"and {len(children)} children")
    keys = aux if td.node_type in (dict, OrderedDict) else \
        aux[1] if td.node_type is defaultdict else range(len(children))
    for k, c, ctd in zip(keys, children, td._children):
        _flatten_up_to(ctd, c, out, what, f"{path}[{k!r}]")


def _type_name(t) -> str:
    return f"namedtuple {t.__name__}" if _is_namedtuple(t) else t.__name__
