"""JAX's profiler (``jax.profiler``): traces of jit calls and annotated code that Perfetto,
``chrome://tracing`` and TensorBoard's profile plugin open, and device memory profiles
(implemented in ``functrans/profiling/``)::

    with ft.profiler.trace("/tmp/tb"):          # or start_trace / stop_trace
        with ft.profiler.StepTraceAnnotation("train", step_num=0):
            loss = train_step(params, batch)    # a span jit(train_step)

writes ``/tmp/tb/plugins/profile/<run>/<host>.trace.json.gz`` (Chrome trace-event JSON,
gzipped; see ``functrans/profiling/trace.py``). A trace records each jit call as a span
``jit(f)``, each compile (``/jax/core/compile/backend_compile_duration``), and the
``TraceAnnotation``/``StepTraceAnnotation`` blocks and ``annotate_function`` calls; it does
not record the operations inside a compiled program. ``start_server`` (XLA's profiler
server) is not provided.

    >>> with ft.profiler.TraceAnnotation("no trace on: nothing recorded"):
    ...     pass
"""
from __future__ import annotations

from .profiling.memory import device_memory_profile, save_device_memory_profile
from .profiling.trace import (StepTraceAnnotation, TraceAnnotation, annotate_function,
                              start_trace, stop_trace, trace)

__all__ = ["trace", "start_trace", "stop_trace", "TraceAnnotation", "StepTraceAnnotation",
           "annotate_function", "device_memory_profile", "save_device_memory_profile"]
