"""``jit``: a call primitive with rules in every interpreter, a compile cache and dispatch."""
from .api import jit  # noqa: F401
from .call import jit_p  # noqa: F401
