"""The one function every jit compile goes through, looked up by name at each compile, so a
tool can watch or restrict compilation by replacing it (JAX's libraries do so through
``jax._src.compiler.backend_compile_and_load``; under :mod:`functrans.as_jax` that module is
this one).

    >>> from functrans.core import compiler
    >>> seen = []
    >>> original = compiler.backend_compile_and_load
    >>> compiler.backend_compile_and_load = lambda b, *a: seen.append(b.platform) or original(b, *a)
    >>> _ = ft.jit(lambda x: x + 41.0)(1.0)
    >>> compiler.backend_compile_and_load = original
    >>> seen
    ['cpu']
"""
from __future__ import annotations

import logging
import time

from .config import config

logger = logging.getLogger("functrans")


def backend_compile_and_load(backend, jaxpr, name):
    """The executable of ``jaxpr`` compiled by ``backend`` (a ``functrans`` Backend, whose
    ``platform`` names it); logged at WARNING level under ``log_compiles()`` (JAX's
    ``jax_log_compiles``)."""
    if not config.jax_log_compiles:
        return backend.compile(jaxpr, name)
    start = time.perf_counter()
    exe = backend.compile(jaxpr, name)
    logger.warning("Finished compiling %s for %s in %.3f s", name, backend.platform,
                   time.perf_counter() - start)
    return exe
