"""``jax._src.interpreters``: of JAX's private interpreter modules, only ``ad``, which
diffrax's tests import for ``CustomVJPException``."""
