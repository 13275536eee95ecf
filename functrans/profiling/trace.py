"""Profiler traces: ``start_trace``/``stop_trace`` (or the ``trace`` context manager) record
spans and write them where TensorBoard's profile plugin and Perfetto look for them.

While a trace is on, it records:
- every jit call as a span named ``jit(f)`` (``transforms/jit/api.trace_calls`` swaps the
  jit call in for the trace only: calls pay nothing while no trace is on); a first call's
  span holds its tracing and compile;
- ``TraceAnnotation``/``StepTraceAnnotation`` blocks and ``annotate_function`` calls;
- JAX's monitoring events (:mod:`functrans.core.monitoring`): durations as spans ending
  when recorded (jit compiles: ``/jax/core/compile/backend_compile_duration``), events and
  scalars as instant events.

``stop_trace`` writes ``<log_dir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json.gz``:
gzipped Chrome trace-event JSON (``{"traceEvents": [...]}``, times in microseconds), which
``ui.perfetto.dev`` and ``chrome://tracing`` open, and TensorBoard's profile plugin lists;
``create_perfetto_trace=True`` also writes ``perfetto_trace.json.gz`` beside it, as JAX does.

    >>> import gzip, json, tempfile
    >>> from functrans.profiling import trace as tr
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with tr.trace(d):
    ...         with tr.TraceAnnotation("setup", size=3):
    ...             _ = ft.jit(lambda x: x * 2)(1.0)
    ...     events = json.loads(gzip.decompress(open(tr.last_trace_path(), "rb").read()))
    >>> sorted({e["name"] for e in events["traceEvents"] if e["ph"] == "X"})[-2:]
    ['jit(<lambda>)', 'setup']
"""
from __future__ import annotations

import contextlib
import functools
import gzip
import json
import os
import socket
import threading
import time

from functrans.core import monitoring

__all__ = ["start_trace", "stop_trace", "trace", "TraceAnnotation", "StepTraceAnnotation",
           "annotate_function", "last_trace_path"]

_recorder = None  # the _Recorder while a trace is on
_lock = threading.Lock()
_last_path = None


class _Recorder:
    def __init__(self, log_dir, create_perfetto_link, create_perfetto_trace):
        self.log_dir = os.fspath(log_dir)
        self.perfetto_link, self.perfetto_trace = create_perfetto_link, create_perfetto_trace
        self.events: list = []
        self.t0 = time.perf_counter()
        self.pid = os.getpid()

    def now(self) -> float:
        return (time.perf_counter() - self.t0) * 1e6

    def span(self, name, start_us, end_us, args=None):
        event = {"name": name, "ph": "X", "ts": start_us, "dur": max(end_us - start_us, 0.0),
                 "pid": self.pid, "tid": threading.get_native_id()}
        if args:
            event["args"] = {k: _jsonable(v) for k, v in args.items()}
        self.events.append(event)  # list.append is atomic: threads may record at once

    def instant(self, name, args):
        self.events.append({"name": name, "ph": "i", "s": "t", "ts": self.now(),
                            "pid": self.pid, "tid": threading.get_native_id(),
                            "args": {k: _jsonable(v) for k, v in args.items()}})

    # monitoring listeners, registered while the trace is on
    def on_event(self, event, **kwargs):
        self.instant(event, kwargs)

    def on_duration(self, event, duration, **kwargs):
        end = self.now()
        self.span(event, end - duration * 1e6, end, kwargs)

    def on_scalar(self, event, value, **kwargs):
        self.instant(event, dict(kwargs, value=value))

    def write(self) -> str:
        run = time.strftime("%Y_%m_%d_%H_%M_%S")
        folder = os.path.join(self.log_dir, "plugins", "profile", run)
        os.makedirs(folder, exist_ok=True)
        names = {t.native_id: t.name for t in threading.enumerate()}
        meta = [{"name": "process_name", "ph": "M", "pid": self.pid,
                 "args": {"name": f"functrans (host, pid {self.pid})"}}]
        for tid in sorted({e["tid"] for e in self.events}):
            meta.append({"name": "thread_name", "ph": "M", "pid": self.pid, "tid": tid,
                         "args": {"name": names.get(tid, f"thread {tid}")}})
        data = gzip.compress(json.dumps({"traceEvents": meta + self.events,
                                         "displayTimeUnit": "ms"}).encode())
        path = os.path.join(folder, f"{socket.gethostname()}.trace.json.gz")
        with open(path, "wb") as f:
            f.write(data)
        if self.perfetto_trace or self.perfetto_link:
            with open(os.path.join(folder, "perfetto_trace.json.gz"), "wb") as f:
                f.write(data)
        if self.perfetto_link:
            print(f"Trace written to {os.path.join(folder, 'perfetto_trace.json.gz')}: open "
                  "https://ui.perfetto.dev and load it (functrans serves no link)")
        return path


def _jsonable(v):
    return v if isinstance(v, (str, int, float, bool)) or v is None else str(v)


def start_trace(log_dir, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False, profiler_options=None) -> None:
    """Start recording a trace, written to ``log_dir`` by :func:`stop_trace`; one trace at a
    time. ``create_perfetto_trace`` also writes ``perfetto_trace.json.gz``;
    ``create_perfetto_link`` does too and prints where it is (JAX serves it for a link
    instead). ``profiler_options`` (XLA's) are accepted and ignored."""
    global _recorder
    from functrans.transforms.jit.api import trace_calls
    with _lock:
        if _recorder is not None:
            raise RuntimeError("Profile has already been started. Only one profile may be "
                               "run at a time.")
        rec = _Recorder(log_dir, create_perfetto_link, create_perfetto_trace)
        monitoring.register_event_listener(rec.on_event)
        monitoring.register_event_duration_secs_listener(rec.on_duration)
        monitoring.register_scalar_listener(rec.on_scalar)
        _recorder = rec
        trace_calls(_JitSpan)


def stop_trace() -> None:
    """Stop the trace :func:`start_trace` began and write it (see the module's docstring)."""
    global _recorder, _last_path
    from functrans.transforms.jit.api import trace_calls
    with _lock:
        rec = _recorder
        if rec is None:
            raise RuntimeError("No profile started")
        trace_calls(None)
        _recorder = None
        monitoring.unregister_event_listener(rec.on_event)
        monitoring.unregister_event_duration_listener(rec.on_duration)
        monitoring.unregister_scalar_listener(rec.on_scalar)
        _last_path = rec.write()


def last_trace_path() -> str | None:
    """The file the last :func:`stop_trace` wrote (functrans's own; None before one)."""
    return _last_path


@contextlib.contextmanager
def trace(log_dir, create_perfetto_link: bool = False, create_perfetto_trace: bool = False,
          profiler_options=None):
    """A trace of the block: :func:`start_trace` on entry, :func:`stop_trace` on exit."""
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()


class TraceAnnotation:
    """A span named ``name`` (with ``kwargs`` as its arguments) around a ``with`` block in the
    trace being recorded; nothing while no trace is on."""

    __slots__ = ("name", "kwargs", "_rec", "_start")

    def __init__(self, name: str, **kwargs):
        self.name, self.kwargs = name, kwargs
        self._rec = None

    def __enter__(self):
        rec = self._rec = _recorder
        if rec is not None:
            self._start = rec.now()
        return self

    def __exit__(self, *exc):
        rec = self._rec
        if rec is not None:
            rec.span(self.name, self._start, rec.now(), self.kwargs)
            self._rec = None
        return False


class StepTraceAnnotation(TraceAnnotation):
    """A training step's span: ``StepTraceAnnotation("train", step_num=i)`` (the step number
    is among the span's arguments)."""

    __slots__ = ()


class _JitSpan(TraceAnnotation):
    __slots__ = ()


def annotate_function(func=None, name: str | None = None, **decorator_kwargs):
    """Decorate ``func`` so that each call is a span named ``name`` (its qualified name by
    default) in the trace being recorded; usable as ``@annotate_function`` or
    ``@annotate_function(name=..., **kwargs)``."""
    if func is None:
        return functools.partial(annotate_function, name=name, **decorator_kwargs)
    span_name = name or getattr(func, "__qualname__", None) or func.__name__

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with TraceAnnotation(span_name, **decorator_kwargs):
            return func(*args, **kwargs)
    return wrapper
