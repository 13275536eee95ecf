"""jit's guarded call: a hot fast signature's check and runner as one generated function.

``Jitted.__call__`` finds a kept runner by the arguments' fast signature
(``api._fast_signature``): a walk of the containers in Python functions, a tuple of per-leaf
tuples, and a dict lookup that hashes and compares it. Between the steps of a training loop,
whose programs stream megabytes, all of that runs with cold caches: a Python function call or
a fresh tuple costs about 1 us there, and the signature and lookup took 20-26 us of a
step's 40-70 us of jit's own time. So a hot signature's runner gets a guard: Python source
generated for that one signature, which checks the arguments against it (the same tests the
signature's key would compare, in one frame, allocating nothing) and calls the runner with
the leaves; arguments that differ anywhere fall through to the signature and the lookup.
Compiling a guard takes about 40 us per leaf (0.7 ms for an MLP's step), so a signature
gets one once it has run ``GUARD_AFTER_HITS`` times from the lookup, a function at most
``GUARD_MAX_BUILDS`` (two signatures called in turn do not trade it back and forth), and
trees of at most ``GUARD_MAX_LEAVES``, whose calls spend their time on the leaves anyway.

    >>> flags = {"enable_x64": False}
    >>> guard = guarded_call(((np.zeros(2), 1.0), {}), {}, lambda leaves: len(leaves),
    ...                      flags, ["enable_x64"])
    >>> guard(((np.ones(2), 2.0), {}), {}), guard(((np.ones(3), 2.0), {}), {}) is MISS
    (2, True)
"""
from __future__ import annotations

import numpy as np

from functrans.core.array import Array
from functrans.core.pytree import plain_namedtuple

__all__ = ["MISS", "guarded_call", "GUARD_AFTER_HITS", "GUARD_MAX_BUILDS", "GUARD_MAX_LEAVES",
           "SCALAR_TYPES"]

MISS = object()  # what a guard returns for arguments of another signature
GUARD_AFTER_HITS = 16
GUARD_MAX_BUILDS = 4
GUARD_MAX_LEAVES = 64
SCALAR_TYPES = (float, int, bool, complex)  # leaves a fast signature keys by their type alone


def guarded_call(args, kwargs, run, values: dict, flags):
    """``call(args, kwargs)``: ``run(leaves)`` for arguments with the fast signature these
    ``args``/``kwargs`` have, else :data:`MISS`; None where the signature has a leaf or node
    a guard does not check (placed arrays, unsortable dict keys, other types: the lookup
    handles those) or more than ``GUARD_MAX_LEAVES`` leaves. The guard also compares the
    config ``flags`` the signature holds, read from ``values`` at each call, with their
    values now."""
    src = _Source()
    src.lines.append(f"if len(args) != {len(args)}:")
    src.lines.append("    return MISS")
    if not src.children(args, "args"):
        return None
    if kwargs:
        src.check(f"kwargs.keys() != {src.const(frozenset(kwargs))}")
        if not src.mapping(kwargs, "kwargs"):
            return None
    else:
        src.check("kwargs")
    if len(src.leaves) > GUARD_MAX_LEAVES:
        return None
    for flag in flags:
        src.check(f"values[{src.const(flag)}] != {src.const(values[flag])}")
    src.lines.append(f"return run([{', '.join(src.leaves)}])")
    src.ns.update(run=run, values=values, MISS=MISS, Array=Array, ndarray=np.ndarray)
    body = "".join(f"    {line}\n" for line in src.lines)
    exec(compile(f"def guard(args, kwargs):\n{body}", "<functrans jit guard>", "exec"), src.ns)
    return src.ns["guard"]


class _Source:
    """The lines of one guard, its names and the objects they refer to."""

    def __init__(self):
        self.lines: list = []
        self.ns: dict = {}
        self.leaves: list = []
        self.names: dict = {}  # (type, value) -> its name: a model's many equal shapes share one
        self.count = 0

    def const(self, obj) -> str:
        key = (type(obj), obj)
        name = self.names.get(key)
        if name is None:
            name = self.names[key] = f"k{len(self.ns)}"
            self.ns[name] = obj
        return name

    def var(self) -> str:
        self.count += 1
        return f"v{self.count}"

    def _differs(self, expr: str, dtype) -> str:
        # NumPy's built-in dtypes are single objects: `is` settles the common case, where a
        # dtype comparison (about 0.25 us a leaf with cold caches) would run.
        name = self.const(dtype)
        return f"({expr} is not {name} and {expr} != {name})"

    def check(self, failing: str) -> None:
        self.lines += [f"if {failing}:", "    return MISS"]

    def children(self, xs, expr: str) -> bool:
        names = [self.var() for _ in xs]
        if names:
            self.lines.append(f"{''.join(n + ', ' for n in names)}= {expr}")
        return all(self.node(x, n) for x, n in zip(xs, names))

    def mapping(self, d: dict, expr: str) -> bool:
        try:
            keys = sorted(d)  # (the order tree_flatten gives dicts' children)
        except TypeError:
            return False
        names = [self.var() for _ in keys]
        for n, k in zip(names, keys):
            self.lines.append(f"{n} = {expr}[{self.const(k)}]")
        return all(self.node(d[k], n) for k, n in zip(keys, names))

    def node(self, x, v: str) -> bool:
        # The same cases, in the same order, as api._add_children and api._add_node.
        t = type(x)
        if t is Array:
            if x._sharding is not None:
                return False
            value, weak = x._value, self.const(x._weak)
            self.check(f"type({v}) is not Array or {v}._sharding is not None or "
                       f"({v}._weak is not {weak} and {v}._weak != {weak}) or "
                       f"({v}_ := {v}._value).shape != {self.const(value.shape)} or "
                       f"{self._differs(f'{v}_.dtype', value.dtype)}")
            self.leaves.append(v)
        elif t in SCALAR_TYPES or (t is not np.ndarray and isinstance(x, np.generic)):
            self.check(f"type({v}) is not {self.const(t)}")
            self.leaves.append(v)
        elif t is np.ndarray:
            self.check(f"type({v}) is not ndarray or {v}.shape != {self.const(x.shape)} or "
                       f"{self._differs(f'{v}.dtype', x.dtype)}")
            self.leaves.append(v)
        elif t is tuple or t is list or plain_namedtuple(t):
            self.check(f"type({v}) is not {self.const(t)} or len({v}) != {len(x)}")
            return self.children(x, v)
        elif t is dict:
            self.check(f"type({v}) is not dict or {v}.keys() != {self.const(frozenset(x))}")
            return self.mapping(x, v)
        elif x is None:
            self.check(f"{v} is not None")
        else:
            return False
        return True
