"""``jax.experimental.layout``: a value's memory layout paired with its sharding.

functrans keeps every array in row-major (C) order on the host, so a :class:`Layout` only
records what a program asks for; :class:`Format` pairs one with a sharding, as libraries
(flax's sharding helpers) pass them around next to plain shardings.

    >>> from functrans.experimental.layout import Format, Layout
    >>> Format(Layout((1, 0)), None).layout.major_to_minor
    (1, 0)
"""
from __future__ import annotations

__all__ = ["Layout", "Format"]


class Layout:
    """The order of an array's dimensions in memory, most major first (None: the default).

        >>> Layout((0, 1)) == Layout((0, 1))
        True
    """

    def __init__(self, major_to_minor=None, tiling=(), sub_byte_element_size_in_bits=0):
        if major_to_minor is not None:
            major_to_minor = tuple(int(d) for d in major_to_minor)
        self.major_to_minor = major_to_minor
        self.tiling = tuple(tiling)
        self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

    def _key(self):
        return (self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits)

    def __eq__(self, other):
        return isinstance(other, Layout) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return f"Layout(major_to_minor={self.major_to_minor})"


class Format:
    """A layout and a sharding together (either may be None).

        >>> f = Format(None, None)
        >>> f.layout is None and f.sharding is None
        True
    """

    def __init__(self, layout=None, sharding=None):
        if layout is not None and not isinstance(layout, Layout):
            raise TypeError(f"Format's layout must be a Layout or None, got {layout!r}")
        self.layout = layout
        self.sharding = sharding

    def __eq__(self, other):
        return (isinstance(other, Format) and self.layout == other.layout
                and self.sharding == other.sharding)

    def __hash__(self):
        return hash((self.layout, self.sharding))

    def __repr__(self):
        return f"Format({self.layout!r}, {self.sharding!r})"
