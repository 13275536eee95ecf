"""``jax._src.state``: JAX's private package of mutable references; functrans provides the
``types`` module libraries import (see :mod:`functrans.ref`)."""
