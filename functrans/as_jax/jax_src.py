"""``jax._src`` under :mod:`functrans.as_jax`: JAX's private package, of which functrans
provides only the modules JAX's libraries import on their own import, each backed by what
functrans really does (see :data:`functrans.as_jax.MODULES`); the rest is missing, naming the
module.

    >>> from functrans.as_jax import jax_src
    >>> jax_src.__path__
    []
"""
__path__: list = []  # a package, whose few submodules functrans.as_jax's finder maps


def __getattr__(name: str):
    # `from jax._src import compiler` asks this module (its __name__ is functrans's).
    import importlib

    from . import MODULES
    if f"jax._src.{name}" in MODULES:
        return importlib.import_module(f"jax._src.{name}")
    raise AttributeError(f"module 'jax._src' has no attribute {name!r}: functrans provides "
                         f"no jax._src.{name} (JAX's internals are not provided)")
