"""Users' code inside compiled programs (their Numba kernels): what its compiled forms depend
on, where generated code finds it, the error for a kernel that raised, and the hooks through
which a backend runs kernels it owns (CUDA kernels: ``transforms/cuda/user_kernels.py``
installs them), so that primitives, which know no backend, can call them.

A user's kernel is Python code, so the name of its compiled form (in memory and in the
on-disk caches) must change when its code does: :func:`fingerprint` hashes the function's
source (or bytecode), constants, and the globals and closure values it reads, following
the functions it calls. Generated code (the Numba backend's modules, harvested scalar
wrappers) refers to a user function by a key and finds it with :func:`lookup`.

    >>> def twice(x):
    ...     return 2 * x
    >>> key = register(twice)
    >>> lookup(key) is twice, key == register(twice)
    (True, True)
"""
from __future__ import annotations

import hashlib
import inspect
import threading
import types

import numpy as np

__all__ = ["fingerprint", "register", "lookup", "kernel_failure", "device_kernels"]

_lock = threading.Lock()
_registry: dict = {}  # key -> function


def _py_function(fn):
    """The Python function behind ``fn`` (a Numba dispatcher's ``py_func``)."""
    return getattr(fn, "py_func", fn)


def _value_digest(v, h, seen) -> None:
    """Feed what compiled code would freeze of global or closure value ``v`` into ``h``."""
    if isinstance(v, (bool, int, float, complex, str, bytes, type(None), np.generic)):
        h.update(repr((type(v).__name__, v)).encode())
    elif isinstance(v, tuple):
        h.update(b"(")
        for x in v:
            _value_digest(x, h, seen)
        h.update(b")")
    elif isinstance(v, np.ndarray):
        h.update(f"array{v.dtype.str}{v.shape}".encode())
        h.update(np.ascontiguousarray(v).tobytes())
    elif isinstance(v, types.ModuleType):
        h.update(("module " + v.__name__).encode())
    elif isinstance(_py_function(v), types.FunctionType):
        _code_digest(_py_function(v), h, seen)
        opts = getattr(v, "targetoptions", None)
        if opts:
            h.update(repr(sorted(opts.items())).encode())
    else:
        h.update(("object " + type(v).__module__ + "." + type(v).__qualname__).encode())


def _bytecode_digest(code, h) -> None:
    """Feed a code object's bytecode, names and constants (nested code objects by their
    contents: their repr holds a memory address) into ``h``."""
    h.update(code.co_code)
    h.update(repr(code.co_names).encode("utf-8", "replace"))
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _bytecode_digest(c, h)
        else:
            h.update(repr(c).encode("utf-8", "replace"))


def _code_digest(fn, h, seen) -> None:
    if fn in seen:
        h.update(b"<recursive>")
        return
    seen.add(fn)
    code = fn.__code__
    h.update(f"{fn.__module__}.{fn.__qualname__}".encode())
    try:
        h.update(inspect.getsource(fn).encode())
    except (OSError, TypeError):
        pass
    # The source alone does not tell functions apart: a lambda's source is its whole line,
    # so `f, g = (lambda x: x + 1.0), (lambda x: x - 1.0)` would share a key (and generated
    # code would call whichever was registered last). Bytecode and names differ.
    _bytecode_digest(code, h)
    h.update(repr(fn.__defaults__).encode("utf-8", "replace"))
    for name in code.co_names:
        if name in fn.__globals__:
            h.update(name.encode())
            _value_digest(fn.__globals__[name], h, seen)
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        h.update(name.encode())
        try:
            _value_digest(cell.cell_contents, h, seen)
        except ValueError:  # an empty cell
            h.update(b"<empty>")


def fingerprint(fn) -> str:
    """A hash of what Numba would compile of ``fn``: its code, its constants, the values of
    the globals and closure variables it reads (Numba freezes them at compile time) and the
    functions it calls, recursively. Two functions with equal fingerprints compile to the
    same code; editing a kernel (or a constant it reads) changes its fingerprint."""
    h = hashlib.sha256()
    _value_digest(fn, h, set())
    return h.hexdigest()[:24]


def register(fn, key: str | None = None) -> str:
    """Make ``fn`` findable by generated code; returns its key (its fingerprint unless
    given)."""
    key = key or fingerprint(fn)
    with _lock:
        _registry[key] = fn
    return key


def lookup(key: str):
    """The function registered under ``key`` (generated modules call this at import)."""
    try:
        return _registry[key]
    except KeyError:
        raise LookupError(f"functrans: no user kernel is registered under {key!r} in this "
                          "process (generated code outlived the kernel it calls)") from None


def kernel_failure(name: str, err: BaseException, source=None):
    """The error for a kernel ``name`` that raised ``err`` (as a failing ``pure_callback``: a
    runtime error carrying the kernel's exception, the original chained by the caller)."""
    import traceback

    from .errors import JaxRuntimeError
    where = f" (called from {source})" if source else ""
    return JaxRuntimeError(f"numba_call: the kernel {name} raised {type(err).__name__}: "
                           f"{err}{where}\n" + "".join(traceback.format_exception_only(err)))


class DeviceKernels:
    """How a device backend checks and runs kernels of its own (``numba.cuda.jit``): filled by
    the backend when it is imported; empty, such kernels are refused."""

    checked_launch = None  # (fn, launch, name) -> launch, or None for a CPU kernel
    check_call = None  # (code, in_avals, out_avals, loops, looped) -> None, raises if wrong
    run_eagerly = None  # (args, code, out_avals, loops, looped) -> result arrays


device_kernels = DeviceKernels()
