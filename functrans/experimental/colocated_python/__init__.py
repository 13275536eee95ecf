"""``jax.experimental.colocated_python``: running Python on the CPU devices colocated with
accelerators, through XLA's IFRT runtime (a serialized function shipped to remote hosts).

functrans's devices are all CPU devices of the processes running the program, so
:func:`colocated_cpu_devices` returns them as they are (JAX returns a CPU device as-is too).
Shipping functions to colocated hosts is IFRT's: :func:`colocated_python` and
:func:`colocated_python_class` raise, saying so. Libraries (orbax) import this module and
use its dispatch only on IFRT backends (Pathways)::

    >>> from functrans.experimental import colocated_python as cp
    >>> cp.colocated_cpu_devices(ft.devices()[:1]) == ft.devices()[:1]
    True
"""
from __future__ import annotations

from .api import colocated_cpu_devices, colocated_python, colocated_python_class  # noqa: F401

__all__ = ["colocated_cpu_devices", "colocated_python", "colocated_python_class"]
