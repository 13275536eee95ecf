"""``functrans.scipy``: the parts of SciPy that JAX provides (``special``)."""
from . import special  # noqa: F401
