"""Key path entries: how a pytree node names each of its children.

A leaf's *key path* is the tuple of entries leading to it from the root. Built-in nodes use
:class:`SequenceKey` (tuples, lists), :class:`DictKey` (dicts), :class:`GetAttrKey`
(namedtuples, dataclasses) and :class:`FlattenedIndexKey` (nodes registered without keys).

    >>> path = (DictKey("params"), SequenceKey(0), GetAttrKey("w"))
    >>> keystr(path)
    "['params'][0].w"
    >>> keystr(path, simple=True, separator="/")
    'params/0/w'
"""
from __future__ import annotations

import dataclasses
import operator
from typing import Any, TypeVar

__all__ = ["DictKey", "GetAttrKey", "SequenceKey", "FlattenedIndexKey", "KeyEntry", "KeyPath",
           "keystr"]

KeyEntry = TypeVar("KeyEntry", bound=Any)
"""One step of a key path: any object (usually one of the four entry classes here)."""

KeyPath = tuple[KeyEntry, ...]
"""The entries from the root of a pytree down to one of its leaves."""


def _as_index(value, cls: str, field: str) -> int:
    try:
        return int(operator.index(value))
    except TypeError:
        raise TypeError(f"{cls}: {field} must be an int, got {type(value).__name__} "
                        f"{value!r:.60}") from None


@dataclasses.dataclass(frozen=True)
class DictKey:
    """The entry for a mapping's child: ``key`` is the dict key.

    >>> DictKey("a"), str(DictKey("a")), DictKey("a") == DictKey("a")
    (DictKey(key='a'), "['a']", True)
    """

    key: Any

    def __str__(self):
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """The entry for a child held in an attribute (namedtuple and dataclass fields).

    >>> GetAttrKey("x"), str(GetAttrKey("x"))
    (GetAttrKey(name='x'), '.x')
    """

    name: str

    def __post_init__(self):
        if not isinstance(self.name, str):
            raise TypeError(f"GetAttrKey: name must be a str, got {type(self.name).__name__} "
                            f"{self.name!r:.60}")

    def __str__(self):
        return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """The entry for a tuple's or list's child: ``idx`` is its position.

    >>> SequenceKey(0), str(SequenceKey(0))
    (SequenceKey(idx=0), '[0]')
    """

    idx: int

    def __post_init__(self):
        # Anything with __index__ (a NumPy integer, a bool) is stored as the plain int it names.
        object.__setattr__(self, "idx", _as_index(self.idx, "SequenceKey", "idx"))

    def __str__(self):
        return f"[{self.idx}]"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
    """The entry for the ``key``-th child of a node registered without keys.

    >>> FlattenedIndexKey(1), str(FlattenedIndexKey(1))
    (FlattenedIndexKey(key=1), '[<flat index 1>]')
    """

    key: int

    def __post_init__(self):
        object.__setattr__(self, "key", _as_index(self.key, "FlattenedIndexKey", "key"))

    def __str__(self):
        return f"[<flat index {self.key}>]"


def _simple_str(entry) -> str:
    if isinstance(entry, (DictKey, FlattenedIndexKey)):
        return str(entry.key)
    if isinstance(entry, SequenceKey):
        return str(entry.idx)
    if isinstance(entry, GetAttrKey):
        return str(entry.name)
    return str(entry)


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """A key path as a string: each entry's ``str`` (``simple=True``: just the key, index or
    attribute name, which is shorter but can be ambiguous), joined with ``separator``.

    >>> keystr((DictKey("a"), SequenceKey(1), GetAttrKey("x")))
    "['a'][1].x"
    >>> keystr((DictKey("a"), SequenceKey(1), GetAttrKey("x")), simple=True, separator=".")
    'a.1.x'
    """
    return separator.join(map(_simple_str if simple else str, keys))
