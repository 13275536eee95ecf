"""``functrans.lax``: the primitive-level API with JAX's names and semantics.

    >>> from functrans import lax
    >>> lax.add(fnp.ones(2), 1.0)
    Array([2., 2.], dtype=float64)
"""
from .ops import *  # noqa: F401,F403
from .ops import __all__ as _ops_all
from .sorting import *  # noqa: F401,F403
from .sorting import __all__ as _sorting_all
from .parallel import *  # noqa: F401,F403
from .parallel import __all__ as _parallel_all
from .control_flow import *  # noqa: F401,F403
from .control_flow import __all__ as _control_flow_all
from . import linalg  # noqa: F401  (jax.lax.linalg)
from .convolution import *  # noqa: F401,F403
from .convolution import __all__ as _convolution_all
from .windowed import *  # noqa: F401,F403
from .windowed import __all__ as _windowed_all
from .products import *  # noqa: F401,F403
from .products import __all__ as _products_all
from .special import *  # noqa: F401,F403
from .special import __all__ as _special_all
from .sharding_ops import with_sharding_constraint  # noqa: F401
from .linear_solve import custom_linear_solve  # noqa: F401
from .variadic_reduce import reduce  # noqa: F401

__all__ = (list(_ops_all) + list(_sorting_all) + list(_parallel_all) + list(_control_flow_all) + list(_convolution_all)
           + list(_windowed_all) + list(_products_all) + list(_special_all)
           + ["with_sharding_constraint", "custom_linear_solve", "reduce"])
from .primitives_export import *  # noqa: E402,F401,F403  (jax.lax's *_p primitives)
