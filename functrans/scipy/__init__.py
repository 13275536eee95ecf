"""``functrans.scipy``: the parts of SciPy that JAX provides (``special``, ``stats``)."""
from . import special, stats  # noqa: F401
