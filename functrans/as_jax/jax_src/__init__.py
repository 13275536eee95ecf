"""``jax._src`` under :mod:`functrans.as_jax`: JAX's private package, of which functrans
provides only the modules JAX's libraries import (optax, chex, equinox, flax, numpyro,
blackjax), each backed by what functrans really does: the modules of this package, and those
:data:`functrans.as_jax.MODULES` maps elsewhere. The rest is missing, naming the module.

    >>> import functrans.as_jax.jax_src.traceback_util as traceback_util
    >>> traceback_util.api_boundary(len) is len
    True
"""


def __getattr__(name: str):
    # `from jax._src import compiler` asks this module (its __name__ is functrans's), and
    # libraries read `jax._src.xla_bridge` without importing it (JAX's import did).
    import importlib
    import importlib.util

    from functrans.as_jax import MODULES
    if f"jax._src.{name}" in MODULES or (
            not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}")):
        return importlib.import_module(f"jax._src.{name}")
    raise AttributeError(f"module 'jax._src' has no attribute {name!r}: functrans provides "
                         f"no jax._src.{name} (JAX's internals are not provided)")
