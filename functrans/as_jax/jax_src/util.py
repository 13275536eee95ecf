"""``jax._src.util``: the small list helpers JAX's custom-interpreter notebook imports.

    >>> safe_zip([1, 2], "ab"), unzip2([(1, "a"), (2, "b")])
    ([(1, 'a'), (2, 'b')], ((1, 2), ('a', 'b')))
"""
from __future__ import annotations

from functrans.api_util import safe_map

__all__ = ["safe_map", "safe_zip", "split_list", "unzip2"]


def safe_zip(*args) -> list:
    """``list(zip(*args))`` requiring equally long sequences."""
    args = [list(a) for a in args]
    if len({len(a) for a in args}) > 1:
        raise ValueError(f"safe_zip: length mismatch: {[len(a) for a in args]}")
    return list(zip(*args))


def unzip2(pairs) -> tuple[tuple, tuple]:
    """Two tuples from a sequence of pairs."""
    firsts, seconds = [], []
    for a, b in pairs:
        firsts.append(a)
        seconds.append(b)
    return tuple(firsts), tuple(seconds)


def split_list(args, ns) -> list[list]:
    """``args`` cut into pieces of lengths ``ns``, then the rest.

        >>> split_list([1, 2, 3, 4], [1, 2])
        [[1], [2, 3], [4]]
    """
    args, out = list(args), []
    for n in ns:
        out.append(args[:n])
        args = args[n:]
    return out + [args]
