"""``functrans.stages``: the types of ahead-of-time compilation's stages (``jax.stages``).

``jit(f)`` is a :class:`Wrapped`; ``jit(f).lower(*args)`` a :class:`Lowered`;
``.compile()`` on that a :class:`Compiled`::

    >>> f = ft.jit(lambda x: x * 2.0)
    >>> lowered = f.lower(1.0)
    >>> isinstance(f, Wrapped), isinstance(lowered, Lowered)
    (True, True)
    >>> compiled = lowered.compile()
    >>> isinstance(compiled, Compiled), compiled(3.0)
    (True, Array(6., dtype=float64, weak_type=True))

``jit(f).trace(*args)`` returns the traced program itself (a :class:`functrans.Jaxpr`), not a
:class:`Traced`: :class:`Traced` describes JAX's interface for annotations and ``isinstance``.
"""
from __future__ import annotations

import typing
from typing import Any, Protocol, Union

from .transforms.jit.api import Compiled, Lowered

__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]

CompilerOptions = dict[str, Union[str, bool]]
"""Options passed to a compiler (JAX's type; functrans's ``compile()`` takes none)."""


@typing.runtime_checkable
class Wrapped(Protocol):
    """A function transformed for ahead-of-time compilation, such as ``jit(f)``: callable,
    and able to ``trace`` and ``lower`` itself for given arguments."""

    def __call__(self, *args, **kwargs): ...

    def trace(self, *args, **kwargs) -> Any: ...

    def lower(self, *args, **kwargs) -> Lowered: ...


@typing.runtime_checkable
class Traced(Protocol):
    """A function traced for particular argument types: its ``jaxpr``, and ``lower()`` to
    continue to a :class:`Lowered`."""

    jaxpr: Any

    def lower(self, *args, **kwargs) -> Lowered: ...


class ArgInfo:
    """The type of one argument of a lowered or compiled function and whether it is donated.

    >>> from functrans.core.avals import ShapedArray
    >>> ArgInfo(ShapedArray((2,), np.float32), donated=False).shape
    (2,)
    """

    def __init__(self, aval, donated: bool = False):
        self._aval = aval
        self.donated = donated

    @property
    def shape(self):
        return self._aval.shape

    @property
    def dtype(self):
        return self._aval.dtype

    def __repr__(self):
        return f"ArgInfo({self._aval!r}, donated={self.donated})"
