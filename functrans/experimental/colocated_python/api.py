"""colocated_python's entry points: the colocated CPU devices (functrans's devices are CPU
devices already), colocated functions and colocated classes."""
from __future__ import annotations

import numpy as np

from ...core.mesh import Mesh
from .func import make_callable
from .obj import wrap_class


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
    """``fun`` run on the CPU devices of its arguments (JAX's colocated Python function).
    functrans's devices are CPU devices of the processes holding them, so it runs in this
    process, on the calling thread; arguments and results are arrays on one set of devices.
    ``.specialize(in_specs=..., out_specs_fn=..., devices=...)`` returns it specialized
    (``devices`` lets a function without array arguments run).

        >>> from functrans.experimental.colocated_python import colocated_python
        >>> f = colocated_python(lambda x: x * 2).specialize(out_specs_fn=lambda x: x)
        >>> f(ft.numpy.arange(3.0))
        Array([0., 2., 4.], dtype=float64)
    """
    if not callable(fun):
        raise TypeError(f"colocated_python expects a function, got {type(fun).__name__}")
    return make_callable(fun)


def colocated_python_class(cls):
    """``cls`` as a colocated Python class: an instance keeps its constructor's arguments,
    the real object is made on the devices' host (this process) at the first method call,
    and each method runs there as a :func:`colocated_python` function; deleting the
    instance deletes the real object.

        >>> from functrans.experimental.colocated_python import colocated_python_class
        >>> class Scale:
        ...     def __init__(self, k):
        ...         self.k = k
        ...     def apply(self, x):
        ...         return x * self.k
        >>> colocated_python_class(Scale)(3.0).apply(ft.numpy.ones(2))
        Array([3., 3.], dtype=float64)
    """
    return wrap_class(cls)
