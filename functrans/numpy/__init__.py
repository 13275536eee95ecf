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
from . import array_methods as _array_methods  # noqa: F401  (operators on Array and tracers)
from . import fft, linalg  # noqa: F401

pi, e, inf, nan, euler_gamma = _np.pi, _np.e, _np.inf, _np.nan, _np.euler_gamma
newaxis = None


class _ScalarType:
    """``fnp.float32`` & co: usable as a dtype and callable to make 0-d (or cast) arrays.

    >>> fnp.float32(1.5)
    Array(1.5, dtype=float32)
    """

    def __init__(self, np_type):
        self.dtype = _np.dtype(np_type)
        self.__name__ = self.dtype.name

    def __call__(self, x):
        return asarray(x, self.dtype)

    def __repr__(self):
        return f"functrans.numpy.{self.__name__}"

    def __eq__(self, other):
        try:
            return _np.dtype(other) == self.dtype
        except TypeError:
            return False

    def __hash__(self):
        return hash(self.dtype)


bool_ = _ScalarType(_np.bool_)
int8, int16, int32, int64 = map(_ScalarType, (_np.int8, _np.int16, _np.int32, _np.int64))
uint8, uint16, uint32, uint64 = map(_ScalarType, (_np.uint8, _np.uint16, _np.uint32, _np.uint64))
float16, float32, float64 = map(_ScalarType, (_np.float16, _np.float32, _np.float64))
int_, uint, float_ = int64, uint64, float64
single, double, half = float32, float64, float16
# Abstract scalar categories, for issubdtype.
generic, number, integer, signedinteger, unsignedinteger, floating, inexact = (
    _np.generic, _np.number, _np.integer, _np.signedinteger, _np.unsignedinteger, _np.floating,
    _np.inexact)
bool = bool_
