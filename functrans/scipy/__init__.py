"""``functrans.scipy``: the parts of SciPy that JAX provides (``special``, ``stats``,
``linalg``)."""
from . import linalg, sparse, special, stats  # noqa: F401
