"""JAX's monitoring events (``jax.monitoring``): code points that call the listeners
registered for them (implemented in ``functrans/core/monitoring.py``, which functrans's jit
records its compiles with: ``/jax/core/compile/backend_compile_duration``)::

    >>> seen = []
    >>> def listener(event, duration_secs, **kwargs):
    ...     seen.append((event, duration_secs, kwargs))
    >>> ft.monitoring.register_event_duration_secs_listener(listener)
    >>> ft.monitoring.record_event_duration_secs("/my/step", 0.5, step=1)
    >>> ft.monitoring.unregister_event_duration_listener(listener)
    >>> seen
    [('/my/step', 0.5, {'step': 1})]
"""
from __future__ import annotations

from .core.monitoring import (  # noqa: F401
    _unregister_event_duration_listener_by_callback,
    _unregister_event_duration_listener_by_index, _unregister_event_listener_by_callback,
    _unregister_event_time_span_listener_by_callback, _unregister_scalar_listener_by_callback,
    clear_event_listeners, get_event_duration_listeners, get_event_listeners,
    get_event_time_span_listeners, get_scalar_listeners, record_event,
    record_event_duration_secs, record_event_time_span, record_scalar,
    register_event_duration_secs_listener, register_event_listener,
    register_event_time_span_listener, register_scalar_listener,
    unregister_event_duration_listener, unregister_event_listener,
    unregister_event_time_span_listener, unregister_scalar_listener)

__all__ = ["record_event", "record_event_duration_secs", "record_event_time_span",
           "record_scalar", "register_event_listener", "register_event_duration_secs_listener",
           "register_event_time_span_listener", "register_scalar_listener",
           "unregister_event_listener", "unregister_event_duration_listener",
           "unregister_event_time_span_listener", "unregister_scalar_listener",
           "clear_event_listeners"]
