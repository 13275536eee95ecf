"""Tiered execution: a new program's first call runs on the interpreter, and its kernel
compiles on a background thread meanwhile; later calls run the kernel (waiting for it if it
is not ready yet).

On by default; switched by ``config.jit_tiered`` (``FUNCTRANS_JIT_TIERED=0`` turns it off).
With it the first call returns after tracing (milliseconds instead of the seconds Numba needs
for a large kernel). That first result is NumPy's (the primitives' impls), so it can
differ from later, compiled calls by the compiled code's documented few-ulp bounds (SIMD
exp/log/..., reassociated reductions; through a loop, such differences propagate like any
rounding difference); with the flag off every call runs compiled code. A program whose run
would apply more than ``INTERPRET_BUDGET`` primitives (a ``scan`` counts its body once per
step) compiles first, as does one with a ``while`` loop (its trip count is unknown):
interpreting them could take longer than compiling.

Compiling threads are tracked (``core/background.py``): ``block_until_ready`` waits for
them, so the JAX idiom (call once, block, then time) times compiled code, and
``jit(f).lower(x).compile()`` compiles before returning. The compiling thread is not a daemon:
a script's exit waits for it, so the kernel reaches the disk cache for the next run.

    >>> f = ft.jit(lambda x: fnp.sin(x) * 2.0)
    >>> y = f(np.zeros(3))          # interpreted; the kernel compiles meanwhile
    >>> y.block_until_ready().tolist()   # returns once calls run the kernel
    [0.0, 0.0, 0.0]
"""
from __future__ import annotations

import math
import threading
import warnings

from functrans.core import background
from functrans.core.config import config
from functrans.core.eval import eval_jaxpr
from functrans.core.ir import walk_jaxprs

from ..lowering.compile import Kernel
from ..lowering.emit import LoweringError
from .segmented import host_inputs, host_outputs

# Primitive applications a first call may interpret: at a few microseconds each (plus the
# NumPy work a kernel would do too), well under the second or more Numba needs for a program
# with a loop.
INTERPRET_BUDGET = 20_000


def interpreted_cost(jaxpr) -> float:
    """How many primitives one interpreted run of ``jaxpr`` applies (inf with a ``while``
    loop, whose trip count is not known before it runs)."""
    total = 0.0
    for eqn in jaxpr.eqns:
        name = eqn.prim.name
        if name == "while":
            return math.inf
        inner = [interpreted_cost(j) for j in walk_jaxprs(eqn.params)]
        if name == "scan":
            total += 1 + eqn.params["length"] * sum(inner)
        elif name == "cond":
            total += 1 + max(inner, default=0.0)
        else:
            total += 1 + sum(inner)
    return total


def worth_interpreting(jaxpr) -> bool:
    """Whether the first call of ``jaxpr`` should run on the interpreter while it compiles."""
    return interpreted_cost(jaxpr) <= INTERPRET_BUDGET


class Tiered:
    """A compiled program (code generated now) whose calls run on the interpreter while a
    background thread compiles it; once it is compiled, calls run it (or keep the
    interpreter, if compiling failed).

    With the native code generator (``config.jit_codegen``), calls made while it compiles
    are interpreted too: its compile runs mostly in LLVM, outside the GIL, so interpreting
    meanwhile costs it little and a training loop never stops for it. With the Numba one,
    whose compile holds the GIL most of the time, only the first call is interpreted and
    later ones wait (calls interpreted meanwhile slowed a cold MLP training loop from
    1.8 s to 2.2 s at step 100)."""

    interim = True  # runs on the interpreter until compiled: callers may want the compiled one

    def __init__(self, jaxpr, name, program=None):
        self.jaxpr = jaxpr
        # Generation errors are raised here, at the call. ``program``: native code already
        # generated for ``jaxpr``.
        if program is not None:
            self.kernel, self.wait_for_compile = program, False
        elif config.jit_codegen == "native":
            from ..native.program import NativeProgram
            self.kernel, self.wait_for_compile = NativeProgram(jaxpr, name), False
        else:
            self.kernel, self.wait_for_compile = Kernel(jaxpr, name), True
        self.text = self.kernel.text
        self.compiled = threading.Event()
        self.error: LoweringError | None = None
        self._thread = None
        self._lock = threading.Lock()

    def __call__(self, *args):
        if self._thread is not None and (self.wait_for_compile or self.compiled.is_set()):
            self.compiled.wait()
            if self.error is None:
                return self.kernel(*args)
        # Native code compiles outside the GIL: it starts now, alongside the first
        # interpreted call. A Numba compile holds the GIL for most of its time and would
        # slow the interpreter down at every switch: it starts after the first result.
        if not self.wait_for_compile:
            self._start(args)
        # As the kernel would: arguments in the traced dtypes, no output aliasing a caller's
        # array, and NaNs reported by jit's debug_nans check (which names the program's
        # equation), not by the eager one inside.
        vals = host_inputs(args, self.jaxpr)
        if config.debug_nans:
            with config.override(debug_nans=False):
                outs = eval_jaxpr(self.jaxpr, *vals)
        else:
            outs = eval_jaxpr(self.jaxpr, *vals)
        outs = host_outputs(outs, self.jaxpr)
        self._start(args)
        return outs

    def _start(self, args):
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._compile, args=(args,),
                                                name="functrans-compile")
                background.start(self._thread)  # block_until_ready waits for it

    def _compile(self, args):
        try:
            if self.wait_for_compile:
                self.kernel.compile_for(args)
            else:
                self.kernel.compile()
        except (LoweringError, RuntimeError) as e:
            # The interpreter's results stay right; say once that this program won't speed up.
            # (RuntimeError: LLVM refused generated code, a bug in the native generator.)
            self.error = e
            warnings.warn(f"{e}; jit keeps running this program on the interpreter",
                          RuntimeWarning, stacklevel=1)
        finally:
            self.compiled.set()
            background.done(threading.current_thread())

    def compile_ahead(self):
        """Compile now, in this thread (``Lowered.compile()``), or wait for the background
        compile already running; a failure warns and keeps the interpreter, as there."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.current_thread()
                start = True
            else:
                start = False
        if start:
            self._compile(self.kernel.sample_args() if self.wait_for_compile else None)
        else:
            self.compiled.wait()

    def settled(self):
        """What calls should run from now on: the kernel once compiled, this object (the
        interpreter) if compiling failed, None while the compile is still running."""
        if not self.compiled.is_set():
            return None
        return self.kernel if self.error is None else self

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the background compile (if started) has finished; True when calls now
        run the kernel."""
        if self._thread is not None:
            self.compiled.wait(timeout)
        return self.compiled.is_set() and self.error is None
