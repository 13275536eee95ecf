"""``jax._src.xla_bridge``: JAX's backend registry, as libraries inspect it. ``_backends`` is
empty until the devices are first used (chex's ``set_n_cpu_devices`` checks that the device
count can still change), then names functrans's CPU backend.

    >>> from functrans.as_jax.jax_src import xla_bridge
    >>> sorted(xla_bridge._backends) in ([], ["cpu"])
    True
"""
from __future__ import annotations

import functools

from functrans.core import devices


def backends() -> dict:
    """The started backends by platform name (the CPU one, once devices are used).

        >>> "cpu" in backends() or not devices.initialized()
        True
    """
    return {"cpu": devices.get_backend("cpu")} if devices.initialized() else {}


@functools.lru_cache
def get_backend(platform=None):
    """The backend for ``platform`` (the default one for None); starts the devices. Cached,
    as JAX's is: tests call ``get_backend.cache_clear()`` after changing ``XLA_FLAGS``.

        >>> get_backend().platform
        'cpu'
        >>> get_backend.cache_clear()
    """
    devices.cpu_devices()
    return devices.get_backend(platform)


def __getattr__(name: str):
    if name == "_backends":  # read at each access: it fills when the devices start
        return backends()
    raise AttributeError(f"module 'jax._src.xla_bridge' has no attribute {name!r}: functrans "
                         "provides only _backends, backends and get_backend")
