"""``jax._src`` under :mod:`functrans.as_jax`: JAX's private package, of which functrans
provides only the modules JAX's libraries import on their own import, each backed by what
functrans really does (see :data:`functrans.as_jax.MODULES`); the rest is missing, naming the
module.

    >>> from functrans.as_jax import jax_src
    >>> jax_src.__path__
    []
"""
__path__: list = []  # a package, whose few submodules functrans.as_jax's finder maps
