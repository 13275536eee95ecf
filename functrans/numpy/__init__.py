"""``functrans.numpy``: NumPy's API on functrans arrays, traceable by every transformation.

    >>> import functrans.numpy as fnp
    >>> fnp.sum(fnp.sin(fnp.linspace(0.0, fnp.pi, 5)) ** 2)
    Array(2., dtype=float64)

Dtype promotion follows NumPy 2 (NEP 50); results are immutable ``functrans.Array`` values.
"""
import numpy as _np

from ..core import dtypes as _dtypes
from ..core.array import Array as ndarray  # noqa: F401
from ._core import array, asarray  # noqa: F401
from .creation import *  # noqa: F401,F403
from .editing import *  # noqa: F401,F403
from .file_io import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .joining import *  # noqa: F401,F403
from .histograms import *  # noqa: F401,F403
from .index_tricks import *  # noqa: F401,F403
from .linalg_ops import *  # noqa: F401,F403
from .misc import *  # noqa: F401,F403
from .numerical import *  # noqa: F401,F403
from .polynomial_roots import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .shape_ops import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .ufuncs import *  # noqa: F401,F403
from .vectorize import vectorize  # noqa: F401
from .scalar_types import *  # noqa: F401,F403
from .dtype_utils import *  # noqa: F401,F403
from . import array_methods as _array_methods  # noqa: F401  (operators on Array and tracers)
from . import fft, linalg  # noqa: F401

pi, e, inf, nan, euler_gamma = _np.pi, _np.e, _np.inf, _np.nan, _np.euler_gamma
newaxis = None


from . import ml_dtypes_names as _ml_dtypes_names  # noqa: E402

del dtype  # served by __getattr__


def __getattr__(name):
    # fnp.bfloat16, fnp.float8_e4m3fn, ...: ml_dtypes is imported on the first such name.
    # fnp.dtype is NumPy's np.dtype (as jnp.dtype is), which knows "bfloat16" only once
    # ml_dtypes is imported: handing it out imports it.
    if name == "dtype":
        _ml_dtypes_names.types()
        globals()["dtype"] = _np.dtype
        return _np.dtype
    if name in _ml_dtypes_names.NAMES:
        t = _ml_dtypes_names.types().get(name)
        if t is not None:
            globals()[name] = t
            return t
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


from ..core.out_sharding import accept_out_sharding as _accept_out_sharding  # noqa: E402

_accept_out_sharding(globals(), (
    "array", "asarray", "zeros", "ones", "empty", "full", "arange", "zeros_like", "ones_like",
    "full_like", "reshape", "broadcast_to", "dot", "matmul", "tensordot", "einsum"))
