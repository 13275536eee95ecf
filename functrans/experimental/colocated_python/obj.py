"""``jax.experimental.colocated_python.obj``: colocated Python classes.

A wrapped class's instance keeps its constructor's arguments; the real object is made on
the devices' host (this process: see :mod:`.func`) when one of its methods is first called,
and every method is a colocated function calling the real object's. When the wrapper goes,
the real object goes with it. A constructor that raises raises again at every later call,
as JAX's object store does.

    >>> from functrans.experimental.colocated_python import obj
    >>> class Counter:
    ...     def __init__(self, start):
    ...         self.n = start
    ...     def bump(self, x):
    ...         self.n += 1
    ...         return x + self.n
    >>> c = obj.wrap_class(Counter)(10)
    >>> c.bump(ft.numpy.zeros(2))
    Array([11., 11.], dtype=float64)
"""
from __future__ import annotations

import functools
import inspect
import threading

from . import func

# Members JAX does not forward: the wrapper's own lifetime and pickling are not the object's.
_NOT_FORWARDED = ("__init__", "__del__", "__reduce__", "__reduce_ex__")


class _LazyObject:
    """The real object behind one wrapper instance, made on first use."""

    def __init__(self, cls, args, kwargs):
        self._make = functools.partial(cls, *args, **kwargs)
        self._lock = threading.Lock()
        self._obj = self._exc = None
        self._made = False

    def get(self):
        with self._lock:
            if not self._made:
                try:
                    self._obj = self._make()
                except Exception as e:
                    self._exc = e
                self._made, self._make = True, None
        if self._exc is not None:
            raise self._exc
        return self._obj


def _method(lazy: _LazyObject, name: str, original):
    def run(*args, **kwargs):
        return getattr(lazy.get(), name)(*args, **kwargs)

    functools.update_wrapper(run, original)
    return func.make_callable(run)


def wrap_class(cls: type) -> type:
    """A class whose instances forward every method call to a real ``cls`` object made on
    the devices of the call's arguments when a method is first called."""
    if not isinstance(cls, type):
        raise TypeError(f"colocated_python_class expects a class, got {type(cls).__name__}")
    names = [n for n in dir(cls)
             if n not in _NOT_FORWARDED and inspect.isfunction(getattr(cls, n, None))]

    def __init__(self, *init_args, **init_kwargs):
        lazy = _LazyObject(cls, init_args, init_kwargs)
        for n in names:
            setattr(self, n, _method(lazy, n, getattr(cls, n)))

    if "__init__" in cls.__dict__:
        functools.update_wrapper(__init__, cls.__init__)
    wrapped = type(cls.__name__, (), {"__init__": __init__, "__doc__": cls.__doc__,
                                      "__module__": cls.__module__})
    wrapped.__qualname__ = cls.__qualname__
    return wrapped
