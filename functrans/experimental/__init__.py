"""Experimental APIs, under the names JAX gives them (``jax.experimental``)."""
from . import checkify  # noqa: E402,F401  (registers the check primitive with the others)
from ..kernels.callbacks import io_callback  # noqa: E402,F401
from .hijax import cur_qdd  # noqa: E402,F401
