"""Executables for jaxprs: what ``jit`` runs under evaluation.

The jaxpr is optimized (inlining, simplification, CSE, DCE; equations of primitives defined
by libraries whose lowering is a function first become calls of it: see lowerings.py) and
compiled to one Numba kernel (or, when it holds collectives or a shard_map, to compiled
segments around them). With ``config.jit_tiered`` (the default) a program's first call runs
on the interpreter while the kernel compiles in the background, unless interpreting it could
be slow (see tiered.py).
Programs with float16, bfloat16 or float8 values run on the reference interpreter instead
(each primitive's NumPy impl; the narrow types through float32): Numba has no arithmetic in
these types on CPU.
"""
from __future__ import annotations

from functrans.core.check import check_jaxpr
from functrans.core.config import config
from functrans.core.dtypes import float16, is_narrow_float
from functrans.core.devices import Backend, cpu_devices, register_backend
from functrans.core.eval import eval_jaxpr
from functrans.core.ir import walk_jaxprs
from functrans.core.memo import cache_on_jaxpr

from ..lowering.compile import Kernel
from ..native import blas_split
from ..passes import optimize
from .conv_calls import convs_as_calls
from .lowerings import expand_lowerings
from .segmented import Segmented, host_inputs, host_outputs, jaxpr_needs_host
from .tiered import Tiered, interpreted_cost, worth_interpreting
from .views import Views, only_views
from .window_slices import windows_as_slices


def _has_half_or_narrow(jaxpr) -> bool:
    avals = [v.aval for v in jaxpr.invars + jaxpr.constvars]
    for eqn in jaxpr.eqns:
        avals += [v.aval for v in eqn.outputs]
        if any(_has_half_or_narrow(j) for j in walk_jaxprs(eqn.params)):
            return True
    return any(a.dtype == float16 or is_narrow_float(a.dtype) for a in avals)


class Interpreted:
    """Runs a jaxpr with the primitives' NumPy impls."""

    def __init__(self, jaxpr):
        self.jaxpr = jaxpr
        self.text = None

    def __call__(self, *args):
        return host_outputs(eval_jaxpr(self.jaxpr, *host_inputs(args, self.jaxpr)), self.jaxpr)


@cache_on_jaxpr
def executable_for(jaxpr, name):
    """A callable running ``jaxpr`` on concrete arguments (compiled when possible)."""
    from ..cuda.user_kernels import refuse_on_cpu
    refuse_on_cpu(jaxpr, name)  # users' CUDA kernels run in cuda-backend programs only
    optimized = optimize(windows_as_slices(expand_lowerings(jaxpr)))
    blas_split.install_for(optimized)  # large products on Numba's pool, before kernels link
    if config.check_jaxprs:
        check_jaxpr(optimized)  # a pass that breaks typing is caught here, not in Numba
    return _compile(optimized, name)


def _compile(jaxpr, name):
    if jaxpr_needs_host(jaxpr):  # collectives, nested shard_map: see segmented.py
        return Segmented(jaxpr, name, _compile)
    if _has_half_or_narrow(jaxpr):
        return Interpreted(jaxpr)
    if only_views(jaxpr):  # reshapes only (pmap's squeeze and unsqueeze): see views.py
        return Views(jaxpr)
    tiered = config.jit_tiered and worth_interpreting(jaxpr)
    if config.jit_codegen != "native":
        return Tiered(jaxpr, name) if tiered else Kernel(jaxpr, name)
    from ..native.program import NativeProgram
    # Host convolutions become steps of the driver (conv_calls.py); the interpreter of a
    # tiered program runs them as they are.
    prog = NativeProgram(convs_as_calls(jaxpr), name)
    # Interpreting while the code compiles pays when the compile takes several interpreted
    # calls; when it is built already (a warm disk cache), mostly built (a new batch size), or
    # an interpreted call is slow (a large model), it compiles first.
    if tiered and not prog.quick_to_compile(interpreted_cost(jaxpr)):
        return Tiered(jaxpr, name, prog)
    prog.compile()
    return prog


class CpuBackend(Backend):
    """Today's backend: jaxprs compiled to Numba kernels for the host CPU."""

    platform = "cpu"

    def devices(self) -> list:
        return cpu_devices()

    def compile(self, jaxpr, name):
        exe = executable_for(jaxpr, name)
        if type(exe) is Tiered:  # once compiled, callers get the kernel itself
            return exe.settled() or exe
        return exe


register_backend(CpuBackend())
