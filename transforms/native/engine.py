"""LLVM plumbing for the native backend: the target machine, the optimization pipeline, object
code, one process-wide JIT that loads object code, and an on-disk object cache.

Every compiled function is a named symbol in one MCJIT engine, so code compiled later (a
program's driver) calls functions compiled earlier (kernels shared with other programs)
by name. Object code is cached on disk under a name derived from a hash of the IR it was
compiled from, the LLVM and functrans versions and the target CPU; an entry that fails its
checksum (truncated, corrupted) is discarded with a warning and compiled again.

    >>> text = "define i64 @ft_example_triple(i64 %x) {\\n  %y = mul i64 %x, 3\\n  ret i64 %y\\n}\\n"
    >>> import ctypes
    >>> addr = load("ft_example_triple", compile_ir(text))
    >>> ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(addr)(5)
    15
"""
from __future__ import annotations

import hashlib
import os
import threading
import warnings

import llvmlite
import llvmlite.binding as llb
import numba
from numba.core import config as numba_config

from functrans._version import __version__
from functrans.transforms.lowering.cache_dir import (cache_dir, private_dir,
                                                     warn_unwritable, write_atomically)
from functrans.transforms.lowering.numba_cache import CacheWarning

from . import workers
from .llvm_compile import PIPELINE, Compiler

__all__ = ["compile_ir", "compile_all", "load", "address", "is_loaded", "cached_object", "store_object",
           "target_key", "CacheWarning"]

_MAGIC = b"FTNATIVE1\n"
_lock = threading.RLock()  # our registry; LLVM calls themselves are serialized by llvmlite
_state: dict = {}
_loaded: dict = {}  # symbol -> address
stats = {"compiled": 0, "from_disk": 0, "rebuilt": 0}
"""Objects compiled by LLVM, loaded from the disk cache, and cache entries found corrupt
(then compiled again), in this process."""


def _init():
    if _state:
        return _state
    with _lock:
        if _state:
            return _state
        # As Numba: NUMBA_CPU_NAME / NUMBA_CPU_FEATURES give portable code, else the host.
        compiler = Compiler(numba_config.CPU_NAME, numba_config.CPU_FEATURES)
        target = llb.Target.from_default_triple()
        machine = target.create_target_machine(cpu=compiler.cpu, features=compiler.features,
                                               opt=3, codemodel="jitdefault")
        engine = llb.create_mcjit_compiler(llb.parse_assembly(""), machine)
        _state.update(compiler=compiler, engine=engine, triple=compiler.triple,
                      layout=compiler.layout, tm=compiler.tm,
                      key="\0".join((__version__, llvmlite.__version__, numba.__version__,
                                     compiler.triple, compiler.cpu, compiler.features,
                                     PIPELINE)))
    return _state


def target_key() -> str:
    """What compiled code depends on besides its IR: versions, triple, CPU and features."""
    return _init()["key"]


def compile_ir(text: str, *, opt: int = 3, links: dict | None = None,
               unroll: bool = True) -> bytes:
    """Object code for the LLVM IR ``text``, optimized at level ``opt``. ``links`` maps
    symbols to IR texts defining them (harvested scalar functions): they are linked in and
    made internal, so they inline and no two objects export them. ``unroll=False`` keeps
    loops rolled (no unrolling, no interleaving: less code, compiled faster). Raises
    ``RuntimeError`` naming LLVM's complaint if the IR does not parse or verify (a generator
    bug)."""
    return compile_all([(text, links or {}, opt, unroll)])[0]


def compile_all(jobs) -> list:
    """Object code for each job ``(text, links, opt, unroll)`` (as :func:`compile_ir`), on
    two cores when there are several (see workers.py)."""
    st = _init()
    objs = workers.compile_many(jobs, lambda job: st["compiler"].compile(*job),
                                st["compiler"].cpu, st["compiler"].features)
    stats["compiled"] += len(objs)
    return objs


def load(symbol: str, obj: bytes) -> int:
    """Load object code into the process's JIT (once per ``symbol``); the address of
    ``symbol``, which later objects may call by name."""
    with _lock:
        addr = _loaded.get(symbol)
        if addr is not None:
            return addr
        engine = _init()["engine"]
        engine.add_object_file(llb.ObjectFileRef.from_data(obj))
        engine.finalize_object()
        addr = engine.get_function_address(symbol)
        if not addr:
            raise RuntimeError(f"native object code does not define {symbol!r}")
        _loaded[symbol] = addr
        return addr


def address(symbol: str):
    """The address of a loaded symbol, or None."""
    return _loaded.get(symbol)


def is_loaded(symbol: str) -> bool:
    return symbol in _loaded


# -- on-disk cache -------------------------------------------------------------------------

def _dir() -> str:
    try:
        path = os.path.join(cache_dir(), "native")
        os.makedirs(path, mode=0o700, exist_ok=True)
        return path
    except OSError:
        path = os.path.join(private_dir(), "native")
        os.makedirs(path, mode=0o700, exist_ok=True)
        return path


def _path(symbol: str) -> str:
    return os.path.join(_dir(), symbol + ".o")


def has_cached(symbol: str) -> bool:
    """Whether the disk cache has an entry for ``symbol`` (not checked for corruption)."""
    return os.path.exists(_path(symbol))


def cached_object(symbol: str):
    """The cached object code for ``symbol``, or None. A file that is truncated or fails its
    checksum is deleted with a :class:`CacheWarning` (the caller compiles it again)."""
    path = _path(symbol)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    head = len(_MAGIC) + 32
    if data[:len(_MAGIC)] == _MAGIC and len(data) > head and \
            hashlib.sha256(data[head:]).digest() == data[len(_MAGIC):head]:
        stats["from_disk"] += 1
        return data[head:]
    stats["rebuilt"] += 1
    warnings.warn(f"functrans: discarding a corrupt compiled-code cache entry ({path}); "
                  "it is compiled again", CacheWarning, stacklevel=2)
    try:
        os.unlink(path)
    except OSError:
        pass
    return None


def store_object(symbol: str, obj: bytes) -> None:
    """Write ``obj`` to the cache atomically (a reader never sees half a file; two processes
    writing the same entry both succeed). A failure to write (a full disk) leaves nothing
    behind and warns once: the cache is an optimization."""
    directory = None
    try:
        directory = _dir()
        write_atomically(_path(symbol),
                         lambda f: f.write(_MAGIC + hashlib.sha256(obj).digest() + obj))
    except OSError as e:
        warn_unwritable(directory or e.filename, e)


def symbol_for(prefix: str, text: str) -> str:
    """A symbol name derived from IR ``text`` and the target: equal texts share code."""
    digest = hashlib.sha256((target_key() + "\0" + text).encode()).hexdigest()[:32]
    return f"{prefix}_{digest}"
