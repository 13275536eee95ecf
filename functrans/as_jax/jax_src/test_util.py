"""``jax._src.test_util``: JAX's internal test helpers, of which JAX's documentation imports
``create_mesh`` (its checkpointing guide); the public gradient checks are
:mod:`functrans.test_util`'s.

    >>> import functrans.as_jax.jax_src.test_util as jtu
    >>> jtu.create_mesh((1,), ("x",)).axis_names
    ('x',)
"""
from __future__ import annotations

import unittest

import numpy as np

from functrans.core.devices import devices as _devices
from functrans.core.mesh import AxisType, Mesh
from functrans.sharding import make_mesh
from functrans.test_util import check_grads, check_jvp, check_vjp  # noqa: F401

__all__ = ["check_grads", "check_jvp", "check_vjp", "create_mesh"]


def create_mesh(mesh_shape, axis_names, iota_order=False, axis_types=None):
    """A mesh of ``mesh_shape`` devices named ``axis_names`` (Auto axes unless given); a test
    needing more devices than there are is skipped (``unittest.SkipTest``), as in JAX."""
    size = int(np.prod(mesh_shape))
    available = _devices()
    if len(available) < size:
        raise unittest.SkipTest(f"Test requires {size} global devices and found "
                                f"{len(available)}.")
    if iota_order:
        chosen = sorted(available, key=lambda d: d.id)[:size]
        return Mesh(np.array(chosen).reshape(mesh_shape), axis_names, axis_types=axis_types)
    if axis_types is None:
        axis_types = (AxisType.Auto,) * len(mesh_shape)
    return make_mesh(mesh_shape, axis_names, axis_types=axis_types)
