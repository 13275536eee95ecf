"""The name stack: the names of the ``named_scope``s (and ``named_call``s) open in this
thread. Each equation staged inside them records it (``eqn.source_info.name_stack``, as in
JAX), so tools attribute operations to the scopes that made them (haiku's jaxpr_info groups
a model's operations by module).

    >>> with extend("layer1"):
    ...     with extend("dense"):
    ...         str(current())
    'layer1/dense'
"""
from __future__ import annotations

import contextlib
import threading

__all__ = ["NameStack", "current", "extend"]


class NameStack:
    """An immutable sequence of scope names; ``str`` joins them with ``/`` (JAX's form).

        >>> str(NameStack(("a", "b")).extend("c"))
        'a/b/c'
    """

    __slots__ = ("stack",)

    def __init__(self, stack=()):
        self.stack = tuple(stack)

    def extend(self, name: str) -> "NameStack":
        return NameStack(self.stack + (name,))

    def __len__(self):
        return len(self.stack)

    def __str__(self):
        return "/".join(self.stack)

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
