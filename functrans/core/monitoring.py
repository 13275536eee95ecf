"""JAX's monitoring events (``jax.monitoring``; :mod:`functrans.monitoring` is the face):
named code points that call the listeners registered for them, as JAX's libraries (orbax)
use to report to a metrics collector.

Listeners are called as JAX calls them: ``listener(event, **kwargs)`` for events,
``listener(event, duration_secs, **kwargs)`` for durations,
``listener(event, start_time, end_time, **kwargs)`` for time spans, and
``listener(event, value, **kwargs)`` for scalars. Without listeners, recording costs one loop
over an empty list. functrans records ``/jax/core/compile/backend_compile_duration`` around
every jit compile, as JAX does.

    >>> from functrans.core import monitoring
    >>> seen = []
    >>> listener = lambda event, **kw: seen.append((event, kw))
    >>> monitoring.register_event_listener(listener)
    >>> monitoring.record_event("/my/event", step=3)
    >>> monitoring.unregister_event_listener(listener)
    >>> seen
    [('/my/event', {'step': 3})]
"""
from __future__ import annotations

__all__ = ["record_event", "record_event_duration_secs", "record_event_time_span",
           "record_scalar", "register_event_listener", "register_event_duration_secs_listener",
           "register_event_time_span_listener", "register_scalar_listener",
           "unregister_event_listener", "unregister_event_duration_listener",
           "unregister_event_time_span_listener", "unregister_scalar_listener",
           "get_event_listeners", "get_event_duration_listeners",
           "get_event_time_span_listeners", "get_scalar_listeners", "clear_event_listeners"]

_event_listeners: list = []
_event_duration_secs_listeners: list = []
_event_time_span_listeners: list = []
_scalar_listeners: list = []


def record_event(event: str, **kwargs) -> None:
    """Record ``event``: each event listener is called as ``listener(event, **kwargs)``."""
    for callback in _event_listeners:
        callback(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs) -> None:
    """Record that ``event`` took ``duration`` seconds: each duration listener is called as
    ``listener(event, duration, **kwargs)``."""
    for callback in _event_duration_secs_listeners:
        callback(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float, **kwargs) -> None:
    """Record that ``event`` ran from ``start_time`` to ``end_time`` (seconds): each time-span
    listener is called as ``listener(event, start_time, end_time, **kwargs)``."""
    for callback in _event_time_span_listeners:
        callback(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs) -> None:
    """Record a scalar ``value`` for ``event``: each scalar listener is called as
    ``listener(event, value, **kwargs)``."""
    for callback in _scalar_listeners:
        callback(event, value, **kwargs)


def register_event_listener(callback) -> None:
    """Call ``callback(event, **kwargs)`` at every :func:`record_event`."""
    _event_listeners.append(callback)


def register_event_duration_secs_listener(callback) -> None:
    """Call ``callback(event, duration_secs, **kwargs)`` at every
    :func:`record_event_duration_secs`."""
    _event_duration_secs_listeners.append(callback)


def register_event_time_span_listener(callback) -> None:
    """Call ``callback(event, start_time, end_time, **kwargs)`` at every
    :func:`record_event_time_span`."""
    _event_time_span_listeners.append(callback)


def register_scalar_listener(callback) -> None:
    """Call ``callback(event, value, **kwargs)`` at every :func:`record_scalar`."""
    _scalar_listeners.append(callback)


def _remove(listeners: list, callback, kind: str) -> None:
    if callback not in listeners:
        raise AssertionError(f"{callback!r} is not a registered {kind} listener")
    listeners.remove(callback)


def unregister_event_listener(callback) -> None:
    """Stop calling ``callback`` at events (it must be registered)."""
    _remove(_event_listeners, callback, "event")


def unregister_event_duration_listener(callback) -> None:
    """Stop calling ``callback`` at event durations (it must be registered)."""
    _remove(_event_duration_secs_listeners, callback, "event duration")


def unregister_event_time_span_listener(callback) -> None:
    """Stop calling ``callback`` at event time spans (it must be registered)."""
    _remove(_event_time_span_listeners, callback, "event time span")


def unregister_scalar_listener(callback) -> None:
    """Stop calling ``callback`` at scalars (it must be registered)."""
    _remove(_scalar_listeners, callback, "scalar")


# JAX's names for the same (its tests call them).
_unregister_event_listener_by_callback = unregister_event_listener
_unregister_event_duration_listener_by_callback = unregister_event_duration_listener
_unregister_event_time_span_listener_by_callback = unregister_event_time_span_listener
_unregister_scalar_listener_by_callback = unregister_scalar_listener


def _unregister_event_duration_listener_by_index(index: int) -> None:
    size = len(_event_duration_secs_listeners)
    assert -size <= index < size
    del _event_duration_secs_listeners[index]


def get_event_listeners() -> list:
    """The event listeners (a copy)."""
    return list(_event_listeners)


def get_event_duration_listeners() -> list:
    """The event-duration listeners (a copy)."""
    return list(_event_duration_secs_listeners)


def get_event_time_span_listeners() -> list:
    """The event-time-span listeners (a copy)."""
    return list(_event_time_span_listeners)


def get_scalar_listeners() -> list:
    """The scalar listeners (a copy)."""
    return list(_scalar_listeners)


def clear_event_listeners() -> None:
    """Remove every listener of every kind."""
    _event_listeners.clear()
    _event_duration_secs_listeners.clear()
    _event_time_span_listeners.clear()
    _scalar_listeners.clear()
