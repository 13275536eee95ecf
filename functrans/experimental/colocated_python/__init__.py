"""``jax.experimental.colocated_python``: running Python on the CPU devices colocated with
accelerators (JAX ships the function to the devices' hosts).

functrans's devices are all CPU devices of the processes running the program, so
:func:`colocated_cpu_devices` returns them as they are (JAX returns a CPU device as-is too),
and :func:`colocated_python` functions and :func:`colocated_python_class` objects run in the
process holding the devices, with JAX's contract (arrays in and out, on one set of devices;
``specialize``). JAX's IFRT serialization (``serialization``) is XLA-only::

    >>> from functrans.experimental import colocated_python as cp
    >>> cp.colocated_cpu_devices(ft.devices()[:1]) == ft.devices()[:1]
    True
"""
from __future__ import annotations

from .api import colocated_cpu_devices, colocated_python, colocated_python_class  # noqa: F401

__all__ = ["colocated_cpu_devices", "colocated_python", "colocated_python_class"]
