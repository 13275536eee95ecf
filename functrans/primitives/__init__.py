"""The primitive set, grouped by family. Each family module defines its primitives' NumPy
impls, type rules and transformation rules side by side.

The set is small and closed: everything else in functrans.numpy / lax is a composite.
"""
from .elementwise import *  # noqa: F401,F403
from .complex_parts import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .linalg_decomp import *  # noqa: F401,F403
from .tridiagonal import tridiagonal_solve_p  # noqa: F401
from .convolution import *  # noqa: F401,F403
from .windowed import *  # noqa: F401,F403
from .reductions import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .fft import *  # noqa: F401,F403
from .structural import *  # noqa: F401,F403
from . import interpreter_ops  # noqa: F401  (installs transforms.ops)
from .collectives import *  # noqa: F401,F403
from .cond import cond_p  # noqa: F401
from .scan import scan_p  # noqa: F401
from .while_loop import while_p  # noqa: F401
from .linear_solve import linear_solve_p  # noqa: F401
from .variadic_reduce import reduce_p  # noqa: F401
from .shard_map import shard_map_p  # noqa: F401
from .sharding_constraint import sharding_constraint_p  # noqa: F401
from .callback import debug_callback_p  # noqa: F401
from .pure_callback import pure_callback_p  # noqa: F401
from .numba_call import numba_call_p  # noqa: F401
from .numba_elementwise import numba_vectorize_p  # noqa: F401
from .io_callback import io_callback_p  # noqa: F401
from .custom_vmap import custom_vmap_call_p  # noqa: F401
from .shape_poly import dimension_as_value_p  # noqa: F401
