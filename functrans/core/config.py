"""Runtime configuration flags (``ft.config``).

Flags are read on every use, so they can be flipped at run time::

    import functrans as ft
    ft.config.update("enable_x64", False)   # JAX-style 32-bit defaults
    with ft.config.override(disable_jit=True):
        ...
"""
from __future__ import annotations

import contextlib
import os

_DEFAULTS = {
    # NumPy semantics by default: float64/int64 defaults, 64-bit values kept as they are.
    # With False, 64-bit dtypes are canonicalized to 32-bit, as in JAX without x64.
    "enable_x64": True,
    # Raise FloatingPointError as soon as a primitive produces a NaN (eager and jit).
    "debug_nans": False,
    # random.PRNGKey returns a typed key (dtype key<fry>) instead of raw uint32[2] data, as
    # JAX's jax_enable_custom_prng does.
    "enable_custom_prng": False,
    # Run jit-decorated functions eagerly (useful with print/pdb).
    "disable_jit": False,
    # Check on every trace exit that no tracer escaped (slower tracing, clearer errors).
    "check_tracer_leaks": False,
    # Type-check every jaxpr right after it is traced and after jit's optimization passes.
    # The test suite turns this on (FUNCTRANS_CHECK_JAXPRS=1) so every traced program is checked.
    "check_jaxprs": os.environ.get("FUNCTRANS_CHECK_JAXPRS", "") not in ("", "0"),
    # Tiered jit: a new program's first call (without long loops) runs on the interpreter
    # (NumPy impls) while its kernel compiles in a background thread, so it does not wait for
    # Numba. That first result can differ from compiled ones by the kernels' few-ulp bounds;
    # turn it off (FUNCTRANS_JIT_TIERED=0) for compiled code from the first call.
    "jit_tiered": os.environ.get("FUNCTRANS_JIT_TIERED", "1") not in ("", "0"),
    # jit's CPU code generator: "native" (LLVM code generated per fused step, kernels shared
    # between programs; equations it does not cover go to Numba) or "numba" (one Numba
    # kernel per program, the earlier design).
    "jit_codegen": os.environ.get("FUNCTRANS_JIT_CODEGEN", "native"),
    # Raise (instead of warning and compiling that part with Numba) when LLVM refuses code
    # the native generator produced: a generator bug. The test suite turns it on.
    "native_strict": os.environ.get("FUNCTRANS_NATIVE_STRICT", "") not in ("", "0"),
    # Maximum number of compiled executables a single jitted function keeps.
    "jit_cache_size": 64,
    # x[i] with a concrete index out of range raises IndexError, as in NumPy; with False such
    # indices are clamped into range, as traced indices always are (JAX's semantics, which
    # functrans.as_jax selects: jax-md pads its neighbor lists with the index N).
    "strict_indexing": True,
    # A Python int operand of an integer array that its dtype cannot hold raises
    # OverflowError, as in NumPy; with True it wraps into the dtype (uint32 array * -1 is
    # 2**32 - 1) once it fits the default integer type (int32, int64 under enable_x64; beyond
    # it OverflowError), JAX's semantics, which functrans.as_jax selects.
    "python_int_wraparound": False,
    # Logical CPU devices in this process (pmap/shard_map shards run on them in parallel).
    # Unlike JAX, it can change at run time; arrays already placed keep their device.
    "num_cpu_devices": None,
    # The backend jit compiles for when not told (jit(..., backend=)): "cpu" or "cuda".
    "default_backend": os.environ.get("FUNCTRANS_DEFAULT_BACKEND", "cpu"),
}


# JAX's flags that have no functrans counterpart: accepted (so JAX programs that set them run)
# when the value asked for is what functrans does anyway; name -> (default, accepted values,
# or None for any value (flags about logging, caches and tracebacks, which change no result)).
_JAX_ONLY = {
    "platform_name": ("cpu", ("", "cpu")),
    "platforms": ("", ("", "cpu")),
    "default_matmul_precision": (None, (None, "default", "high", "highest", "bfloat16",
                                        "tensorfloat32", "float32", "fastest")),
    "numpy_rank_promotion": ("allow", ("allow", "warn", "raise")),
    "numpy_dtype_promotion": ("standard", ("standard", "strict")),
    "default_prng_impl": ("threefry2x32", ("threefry2x32",)),
    "threefry_partitionable": (True, None),
    "traceback_filtering": ("auto", None),
    "log_compiles": (False, None),
    "compilation_cache_dir": (None, None),
    "persistent_cache_min_compile_time_secs": (1.0, None),
    "persistent_cache_min_entry_size_bytes": (0, None),
    "enable_checks": (False, None),
    "disable_most_optimizations": (False, None),
    "explain_cache_misses": (False, None),
    # Which of JAX's implementations of remat, custom_vjp, linearize and partitioning runs:
    # each gives the same results, and functrans has one of each.
    "remat3": (False, None),
    "custom_vjp3": (False, None),
    "use_direct_linearize": (True, None),
    "use_shardy_partitioner": (True, None),
}


def _default_cpu_devices() -> int:
    env = os.environ.get("FUNCTRANS_NUM_CPU_DEVICES", "")
    if env:
        return _check_device_count(env)
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else (os.cpu_count() or 1))


def _check_device_count(value) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if n < 1 or isinstance(value, float) and value != n:
        raise ValueError(f"num_cpu_devices must be a positive integer, got {value!r}")
    return n


class Config:
    """Holds the process-wide flags; read them as attributes (``config.enable_x64``)."""

    def __init__(self):
        object.__setattr__(self, "_values", {})
        for name, value in _DEFAULTS.items():
            self.update(name, value)
        # JAX's flags are plain attributes too (config.jax_numpy_dtype_promotion is read on
        # every NumPy-level operation's plan lookup).
        for name, (value, _) in _JAX_ONLY.items():
            if name not in _DEFAULTS:
                object.__setattr__(self, "jax_" + name, value)

    def __getattr__(self, name):  # only reached for names that are not flags
        short = name.removeprefix("jax_")  # JAX's spelling: config.jax_enable_x64
        if short in _DEFAULTS:
            return self._values[short]
        if name.startswith("jax_") and short in _JAX_ONLY:
            return self._values.get(name, _JAX_ONLY[short][0])
        raise AttributeError(f"functrans.config has no flag {name!r}; "
                             f"known flags: {sorted(_DEFAULTS)}")

    # JAX's read-only alias of enable_x64 (jaxopt's test utilities read it)
    x64_enabled = property(lambda self: self._values["enable_x64"])

    def read(self, name: str):
        """The value of flag ``name`` (JAX's ``config.read``), e.g. ``"jax_enable_x64"``."""
        return getattr(self, name)

    def __setattr__(self, name, value):
        raise AttributeError("set flags with functrans.config.update(name, value)")

    def update(self, name: str, value) -> None:
        """Set flag ``name`` process-wide, e.g. ``ft.config.update("enable_x64", False)``."""
        short = name.removeprefix("jax_")  # accept JAX's spelling of flag names
        if name.startswith("jax_") and short in _JAX_ONLY and short not in _DEFAULTS:
            accepted = _JAX_ONLY[short][1]
            if accepted is not None and value not in accepted:
                raise ValueError(f"functrans does not support {name}={value!r}; it supports "
                                 f"{', '.join(repr(v) for v in accepted)}")
            self._values[name] = value
            object.__setattr__(self, name, value)
            return
        name = short
        if name not in _DEFAULTS:
            raise AttributeError(f"functrans.config has no flag {name!r}; "
                                 f"known flags: {sorted(_DEFAULTS)}")
        if name == "num_cpu_devices":
            value = _default_cpu_devices() if value is None else _check_device_count(value)
        self._values[name] = value
        # Flags are plain attributes: eager evaluation reads some on every primitive.
        object.__setattr__(self, name, value)

    @contextlib.contextmanager
    def override(self, **flags):
        """Temporarily set flags: ``with ft.config.override(debug_nans=True): ...``."""
        old = {k: getattr(self, k) for k in flags}
        for k, v in flags.items():
            self.update(k, v)
        try:
            yield
        finally:
            for k, v in old.items():
                self.update(k, v)

    def key(self) -> tuple:
        """The flags that change traced programs; part of every jit cache key."""
        return (self._values["enable_x64"], self._values["debug_nans"],
                self._values["enable_custom_prng"])

    def __repr__(self):
        return "Config(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"


config = Config()
