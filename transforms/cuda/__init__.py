"""The ``cuda`` backend: jaxprs run as CUDA kernels through numba-cuda (the ``cuda`` extra).

It is registered always and available when numba-cuda finds a driver and a GPU, or runs in
its simulator (``NUMBA_ENABLE_CUDASIM=1``, which the test suite uses); numba.cuda is only
imported when the backend is first asked for. Users' own ``numba.cuda.jit`` kernels are
steps of its programs through ``ft.numba_call(kernel, results, *operands, launch=...)``
(``user_kernels.py``: launch configuration, params after the results in the kernel's
declared order, results zero-filled and kept on the device)::

    >>> from functrans.core.devices import get_backend
    >>> get_backend("cpu").platform
    'cpu'
"""
from __future__ import annotations

from functrans.core.devices import Backend, Device, processes, register_backend

from . import user_kernels  # noqa: F401  (installs the hooks numba_call runs CUDA kernels by)
from functrans.core.memo import cache_on_jaxpr


class CudaBackend(Backend):
    platform = "cuda"

    def __init__(self):
        self._why = None  # why it is unavailable, once probed

    def unavailable_reason(self):
        """None when usable, else a sentence saying what is missing."""
        if self._why is None:
            try:
                from numba import cuda
                ok = cuda.is_available()
                self._why = "" if ok else (
                    "numba-cuda found no CUDA driver/GPU (set NUMBA_ENABLE_CUDASIM=1 for its "
                    "simulator)")
            except Exception as e:  # ImportError, or a broken CUDA installation
                self._why = (f"numba-cuda is not importable ({type(e).__name__}: {e}); "
                             "pip install 'functrans[cuda]'")
        return self._why or None

    def devices(self) -> list:
        from numba import cuda
        return [Device("cuda", i, processes.index, i) for i in range(len(cuda.gpus))]

    def compile(self, jaxpr, name):
        return _compile(jaxpr, name)

    def device_context(self, device):
        """The context making ``device`` current on this thread (for shards on it)."""
        from numba import cuda
        return cuda.gpus[device.local_index]


@cache_on_jaxpr
def _compile(jaxpr, name):
    from functrans.core.check import check_jaxpr
    from functrans.core.config import config
    from ..passes import optimize
    from .executable import CudaExecutable
    optimized = optimize(jaxpr)
    if config.check_jaxprs:
        check_jaxpr(optimized)
    _check_dtypes(optimized, name)
    return CudaExecutable(optimized, name, cuda_backend.devices()[0])


def _check_dtypes(jaxpr, name):
    from functrans.core.ir import walk_jaxprs
    avals = [v.aval for v in jaxpr.invars + jaxpr.constvars]
    for eqn in jaxpr.eqns:
        avals += [v.aval for v in eqn.outputs]
        for sub in walk_jaxprs(eqn.params):
            _check_dtypes(sub, name)
    for a in avals:
        if a.dtype.kind == "f" and a.dtype.itemsize == 2:
            raise TypeError(f"jit({name}) on the cuda backend: float16 arithmetic is not "
                            f"supported there (a value of type {a.str_short()}); compute in "
                            "float32, or use the cpu backend")


cuda_backend = CudaBackend()
register_backend(cuda_backend)
