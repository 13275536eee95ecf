"""``functrans.scipy.sparse``: JAX's ``jax.scipy.sparse`` (its matrix-free iterative solvers in
``linalg``)."""
from . import linalg  # noqa: F401
