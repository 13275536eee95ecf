"""``jax.experimental.colocated_python.serialization``: JAX's pickling of functions, meshes
and device lists for IFRT's colocated hosts. It is XLA-only: ``DeviceList`` (XLA's device
list type, which libraries name in annotations) cannot be made, and reading any other name
raises, saying so.

    >>> from functrans.experimental.colocated_python import serialization
    >>> hasattr(serialization, "_reduce_mesh")
    False
"""
from __future__ import annotations

_WHY = "it serializes for IFRT's colocated hosts (functrans runs without XLA)"


class DeviceList:
    """XLA's device list (``xla_client.DeviceList``): a type to name, never made here.

        >>> from functrans.experimental.colocated_python.serialization import DeviceList
        >>> DeviceList(ft.devices())
        Traceback (most recent call last):
        NotImplementedError: jax.experimental.colocated_python.serialization.DeviceList is ...
    """

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            f"jax.experimental.colocated_python.serialization.DeviceList is XLA-only: {_WHY}")


def __getattr__(name: str):
    raise AttributeError(
        f"jax.experimental.colocated_python.serialization.{name} is XLA-only: {_WHY}")
