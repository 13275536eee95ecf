"""``jax.extend``: the API for libraries that extend JAX with their own primitives
(:mod:`.core`) and function wrappers (:mod:`.linear_util`); their transformation rules go in
:mod:`functrans.interpreters`.

    >>> from functrans.extend import core
    >>> core.Primitive("my_op")
    my_op
"""
from . import backend, core, linear_util, source_info_util  # noqa: F401

__all__ = ["backend", "core", "linear_util", "source_info_util"]
