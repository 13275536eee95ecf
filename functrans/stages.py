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

``jit(f).trace(*args)`` is a :class:`Traced` (``.jaxpr``, ``.lower()``); the compiled
function takes the dynamic arguments alone.
"""
from __future__ import annotations

import typing
from typing import Any, Protocol, Union

from .transforms.jit.aot import ArgInfo, Compiled, CompiledMemoryStats, Lowered, Traced

__all__ = ["ArgInfo", "Compiled", "CompiledMemoryStats", "CompilerOptions", "Lowered", "Traced",
           "Wrapped"]

CompilerOptions = dict[str, Union[str, bool]]
"""Options passed to a compiler (JAX's type; functrans's ``compile()`` takes none)."""


@typing.runtime_checkable
class Wrapped(Protocol):
    """A function transformed for ahead-of-time compilation, such as ``jit(f)``: callable,
    and able to ``trace`` and ``lower`` itself for given arguments."""

    def __call__(self, *args, **kwargs): ...

    def trace(self, *args, **kwargs) -> Any: ...

    def lower(self, *args, **kwargs) -> Lowered: ...
