"""functrans: composable function transformations for NumPy programs.

    >>> import functrans as ft, functrans.numpy as fnp
    >>> print(ft.make_jaxpr(lambda x: fnp.sin(x) * 2.0)(fnp.ones(3, "float32")))
    { lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = mul b 2.0:f32[] in (c,) }
"""
from ._version import __version__  # noqa: F401
from .core import malloc as _malloc
from .core import thread_waits as _thread_waits

_malloc.keep_freed_memory()  # before large arrays come and go: see core/malloc.py
_thread_waits.sleep_while_waiting()  # before the first parallel loop: see core/thread_waits.py
from . import numpy  # noqa: F401  (attaches array methods; must come before the rest)
from . import lax, nn, scipy, tree, tree_util  # noqa: F401
from . import random  # noqa: F401
from .core.api_util import ShapeDtypeStruct  # noqa: F401
from .core.array import Array  # noqa: F401
from .core.check import check_jaxpr  # noqa: F401
from .core.config import config  # noqa: F401
from .core.dtypes import UnsupportedDtypeError  # noqa: F401
from .core.eval import eval_jaxpr  # noqa: F401
from .core.errors import (ConcretizationTypeError, ShardError,  # noqa: F401
                          TracerArrayConversionError, UnexpectedTracerError)
from .core.ir import Jaxpr  # noqa: F401
from .core.tracing import eval_shape, make_jaxpr  # noqa: F401
from .transforms.autodiff import (checkpoint, custom_jvp, custom_vjp, grad,  # noqa: F401
                                  hessian, jacfwd, jacrev, jvp, linearize, remat,
                                  value_and_grad, vjp)
from .transforms.batching import vmap  # noqa: F401
from .transforms.jit import jit  # noqa: F401
from .transforms import cuda as _cuda_backend  # noqa: F401  (registers the cuda backend)
from .core.devices import (default_backend, device_count, devices, local_device_count,  # noqa: F401
                           local_devices, process_count, process_index)
from .core.placement import block_until_ready, device_put  # noqa: F401
from .kernels.callbacks import pure_callback  # noqa: F401
from .kernels import numba_call, numba_kernel, numba_vectorize  # noqa: F401
from . import custom_batching  # noqa: F401
from .spmd import pmap, shard_map  # noqa: F401
from . import debug, distributed, sharding  # noqa: F401
from . import export  # noqa: F401,E402  (after jit: it builds on jit)
from . import experimental  # noqa: F401,E402
from . import ad_checkpoint, dtypes, errors, stages, test_util, typing  # noqa: F401,E402
from . import ref  # noqa: F401,E402
from . import ops  # noqa: F401,E402  (jax.ops: segment_sum, ...)
from .ref import Ref, freeze, new_ref  # noqa: F401,E402
# jax.checkpoint takes policies: ad_checkpoint's checkpoint/remat replace the plain ones.
from .ad_checkpoint import checkpoint, checkpoint_policies, remat  # noqa: F401,E402
from .core.contexts import (checking_leaks, disable_jit,  # noqa: F401,E402
                            ensure_compile_time_eval, log_compiles, named_call, named_scope,
                            numpy_dtype_promotion, numpy_rank_promotion)
from .sharding import NamedSharding, P, make_mesh  # noqa: F401,E402  (jax.NamedSharding, ...)
from .sharding import reshard, set_mesh  # noqa: F401,E402  (jax.reshard, jax.set_mesh)
from .core.array_creation import (make_array_from_callback,  # noqa: F401,E402
                                  make_array_from_process_local_data,
                                  make_array_from_single_device_arrays)
from .core.values import device_get, effects_barrier, typeof  # noqa: F401,E402
from .transforms.autodiff import jacobian, linear_transpose  # noqa: F401,E402
from .core.devices import Device  # noqa: F401,E402
from .core.contexts import (debug_nans, enable_custom_prng,  # noqa: F401,E402
                            enable_x64)  # (jax.enable_x64, ...)
from .core.dtype_api import float0  # noqa: F401,E402  (jax.float0)
from .custom_derivatives import custom_gradient  # noqa: F401,E402  (jax.custom_gradient)
from .transforms.jit.fwd_bwd import fwd_and_bwd  # noqa: F401,E402  (jax.fwd_and_bwd)
# jax.ad, a namespace as in JAX: the targets vjp's `with_refs` takes and what it returns.
from .transforms.autodiff import vjp_function as _vjp_function  # noqa: E402
import types as _types  # noqa: E402
ad = _types.SimpleNamespace(**{n: getattr(_vjp_function, n)
                               for n in ("DidntWant", "DontWant", "GradRef", "GradValue")})


# The ~90,000 objects importing NumPy, Numba and LLVM created live as long as the process: move
# them out of the cyclic collector's generations, so its full collections (one took 30 ms of a
# 0.45 s first compile) only walk objects made since. Nothing is freed differently: the frozen
# objects keep their reference counts.
import gc as _gc  # noqa: E402

_gc.freeze()


def __getattr__(name):
    """``ft.testing`` loads on first use: it imports hypothesis (about 90 ms), which programs
    that do not test need not pay at ``import functrans``."""
    if name == "testing":
        import importlib
        return importlib.import_module(".testing", __name__)
    raise AttributeError(f"module 'functrans' has no attribute {name!r}")
