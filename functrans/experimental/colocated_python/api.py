"""colocated_python's functions: the colocated CPU devices (functrans's devices are CPU
devices already) and the IFRT-only decorators, which raise."""
from __future__ import annotations

import numpy as np

from ...core.mesh import Mesh

XLA_ONLY = ("{name}: colocated Python runs functions on IFRT's colocated CPU hosts, which is "
            "XLA-only (functrans runs without XLA; its devices are this job's CPU devices: "
            "call the function directly)")


def colocated_cpu_devices(devices_or_mesh):
    """The CPU devices colocated with ``devices_or_mesh`` (a sequence of devices, or a Mesh:
    then a Mesh of the same shape, axis names and types), in order. Every functrans device
    is a CPU device, which JAX returns as-is; another platform's device raises.

        >>> from functrans.experimental.colocated_python import colocated_cpu_devices
        >>> colocated_cpu_devices(tuple(ft.devices()[:2])) == ft.devices()[:2]
        True
    """
    if isinstance(devices_or_mesh, Mesh):
        flat = colocated_cpu_devices(tuple(devices_or_mesh.devices.flat))
        return Mesh(np.array(flat, dtype=object).reshape(devices_or_mesh.devices.shape),
                    devices_or_mesh.axis_names, axis_types=devices_or_mesh.axis_types)
    found = list(devices_or_mesh)
    for d in found:
        if getattr(d, "platform", None) != "cpu":
            raise ValueError(f"colocated_cpu_devices: {d!r} is not a CPU device, and "
                             "functrans has no other devices with colocated CPU devices")
    return found


def colocated_python(fun):
    """Raises: colocated Python is IFRT's (XLA-only).

        >>> from functrans.experimental.colocated_python import colocated_python
        >>> colocated_python(print)
        Traceback (most recent call last):
        NotImplementedError: colocated_python: colocated Python runs functions on IFRT's ...
    """
    raise NotImplementedError(XLA_ONLY.format(name="colocated_python"))


def colocated_python_class(cls):
    """Raises: colocated Python objects are IFRT's (XLA-only), as :func:`colocated_python`."""
    raise NotImplementedError(XLA_ONLY.format(name="colocated_python_class"))
