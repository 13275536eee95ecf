"""The module ``import jax`` gives under :mod:`functrans.as_jax`: functrans's public API under
JAX's top-level names, with JAX's version.

Attributes are looked up when first asked for: a JAX submodule name (``jax.numpy``) imports
the functrans module it maps to; any other name is functrans's own (``jax.jit`` is
``functrans.jit``); names functrans does not provide raise ``AttributeError`` naming them.

    >>> from functrans.as_jax import jax_root
    >>> jax_root.jit is ft.jit, jax_root.__version_info__
    (True, (0, 10, 2))
"""
from __future__ import annotations

import importlib

import functrans as _ft

from . import JAX_API_VERSION, MODULES, PUBLIC

__version__ = JAX_API_VERSION
__version_info__ = tuple(int(p) for p in JAX_API_VERSION.split("."))
__path__: list = []  # a package: its submodules are found by functrans.as_jax's finder

# functrans's own modules and helpers, which are not part of JAX's top-level API.
_NOT_JAX = frozenset({"core", "primitives", "transforms", "spmd", "testing", "as_jax",
                      "demo", "data", "UnsupportedDtypeError", "ShardError", "check_jaxpr",
                      "thread_waits", "ref"})


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    if name in PUBLIC or f"jax.{name}" in MODULES or name == "_src":
        return importlib.import_module(f"jax.{name}")
    if name not in _NOT_JAX:
        try:
            value = getattr(_ft, name)
        except AttributeError:
            pass
        else:
            # Kept as a module attribute: libraries look names such as jax.Array up in
            # every call (isinstance checks in their pytree code), and a module's
            # __getattr__ runs only for names it does not hold.
            globals()[name] = value
            return value
    raise AttributeError(f"module 'jax' has no attribute {name!r}: functrans does not "
                         f"provide jax.{name}")


def __dir__():
    own = [n for n in dir(_ft) if not n.startswith("_") and n not in _NOT_JAX]
    return sorted(set(own) | {"__version__", "__version_info__"} |
                  {m.split(".")[1] for m in MODULES if m.count(".") == 1})
