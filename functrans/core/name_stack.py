"""The name stack: the names of the ``named_scope``s (and ``named_call``s) open in this
thread, and the transformations applied inside them. Each equation staged inside them records
it (``eqn.source_info.name_stack``, as in JAX), so tools attribute operations to the scopes
that made them (haiku's jaxpr_info groups a model's operations by module).

    >>> with extend("layer1"):
    ...     with extend("dense"):
    ...         str(current())
    'layer1/dense'

A transformation (``jvp`` while differentiating, ``transpose`` in the backward pass) wraps
the scope opened inside it, as JAX writes it:

    >>> with transform("jvp"):
    ...     with extend("model"):
    ...         with extend("dense"):
    ...             str(current())
    'jvp(model)/dense'
"""
from __future__ import annotations

import contextlib
import threading
from typing import NamedTuple

__all__ = ["NameStack", "Transform", "current", "extend", "transform"]


class Transform(NamedTuple):
    """A transformation's entry in a name stack: it wraps the next scope, ``jvp(model)``, or
    stands alone as ``jvp()`` when none is open inside it (JAX's form).

        >>> str(NameStack((Transform("jvp"),)))
        'jvp()'
    """

    name: str


class NameStack:
    """An immutable sequence of scope names and :class:`Transform` s; ``str`` joins the
    scopes with ``/``, each transformation wrapping the scope that follows it (JAX's form).

        >>> str(NameStack(("a", "b")).extend("c"))
        'a/b/c'
        >>> str(NameStack(("a",)).transform("transpose").transform("jvp").extend("b"))
        'a/transpose(jvp(b))'
    """

    __slots__ = ("stack",)

    def __init__(self, stack=()):
        self.stack = tuple(stack)

    def extend(self, name: str) -> "NameStack":
        return NameStack(self.stack + (name,))

    def transform(self, name: str) -> "NameStack":
        return NameStack(self.stack + (Transform(name),))

    def __add__(self, other: "NameStack") -> "NameStack":
        return NameStack(self.stack + other.stack)

    def __len__(self):
        return len(self.stack)

    def __str__(self):
        # Innermost first, so a transformation finds the scope it wraps already written.
        parts: list = []
        for elem in reversed(self.stack):
            if type(elem) is not Transform:
                parts.append(elem)
            elif parts:
                parts[-1] = f"{elem.name}({parts[-1]})"
            else:
                parts.append(f"{elem.name}()")
        return "/".join(reversed(parts))

    def __repr__(self):
        return f"NameStack({str(self)!r})"

    def __eq__(self, other):
        return isinstance(other, NameStack) and other.stack == self.stack

    def __hash__(self):
        return hash(self.stack)


EMPTY = NameStack()


class _Local(threading.local):
    stack = EMPTY


_local = _Local()


def current() -> NameStack:
    """The scopes open in this thread, outermost first."""
    return _local.stack


@contextlib.contextmanager
def extend(name: str):
    """Open scope ``name`` inside the current ones while inside the ``with``."""
    prev = _local.stack
    _local.stack = prev.extend(name)
    try:
        yield
    finally:
        _local.stack = prev


@contextlib.contextmanager
def transform(name: str):
    """Mark what is staged inside the ``with`` as made by transformation ``name`` (JAX's
    ``transform_name_stack``): ``jvp`` while a function is differentiated, ``transpose`` in
    its backward pass."""
    prev = _local.stack
    _local.stack = prev.transform(name)
    try:
        yield
    finally:
        _local.stack = prev

