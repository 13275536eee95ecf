"""``functrans.scipy``: the parts of SciPy that JAX provides (``special``, ``stats``,
``linalg``)."""
from . import linalg, special, stats  # noqa: F401
