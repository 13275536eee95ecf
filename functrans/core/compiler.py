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

from . import monitoring
from .config import config

logger = logging.getLogger("functrans")
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


def backend_compile_and_load(backend, jaxpr, name):
    """The executable of ``jaxpr`` compiled by ``backend`` (a ``functrans`` Backend, whose
    ``platform`` names it); logged at WARNING level under ``log_compiles()`` (JAX's
    ``jax_log_compiles``); its duration is recorded as JAX's monitoring event
    ``/jax/core/compile/backend_compile_duration`` (a tiered compile's first call returns
    once the program is traced and its kernel compiles on in the background)."""
    start = time.perf_counter()
    exe = backend.compile(jaxpr, name)
    duration = time.perf_counter() - start
    if config.jax_log_compiles:
        logger.warning("Finished compiling %s for %s in %.3f s", name, backend.platform,
                       duration)
    monitoring.record_event_duration_secs(BACKEND_COMPILE_EVENT, duration, fun_name=name)
    return exe
