"""``jax.extend.backend``: the backends that run programs, as JAX's clients.

``get_backend()`` returns functrans's backend object (the CPU one by default): its
``platform``, ``devices()``, ``device_count()``, ``local_devices()``,
``local_device_count()`` and ``process_index()`` answer as a JAX client's do::

    >>> from functrans.extend import backend
    >>> b = backend.get_backend()
    >>> b.platform, b.device_count() == len(b.devices()) == ft.device_count()
    ('cpu', True)
"""
from __future__ import annotations

from ..core import devices as _devices

__all__ = ["clear_backends", "get_backend"]


def get_backend(platform=None):
    """The backend for ``platform`` (``"cpu"``, ...; the default backend for None); starts
    the devices. Unknown or unavailable platforms raise, naming the available ones."""
    _devices.cpu_devices()
    return _devices.get_backend(platform)


def clear_backends() -> None:
    """Forget the devices started so far: the next use starts them again from the current
    settings (the CPU device count), as JAX starts its backends again.

    >>> from functrans.extend import backend
    >>> backend.clear_backends()
    >>> len(ft.devices()) == ft.device_count()
    True
    """
    _devices.forget_devices()
