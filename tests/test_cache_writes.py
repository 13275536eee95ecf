"""Writes into the compiled-code cache that fail (a full disk) leave nothing behind, warn once
per process with a ``CacheWarning`` naming the directory and the error, and the process goes
on without the entry: jit's private BLAS copy falls back to NumPy's copy, object code and
harvested IR are compiled again next time, Numba's entries are skipped.

A full disk is simulated two ways: in this process, files that take a few bytes and then
fail with ENOSPC; in a child process, a file size limit (RLIMIT_FSIZE) that the 30 MB BLAS
copy exceeds, as a full disk would stop it.
"""
import errno
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from functrans.transforms.lowering import blas_library, cache_dir, compile, runtime
from functrans.transforms.lowering.cache_dir import CacheWarning
from functrans.transforms.native import engine, harvest


class _FullDisk:
    """A file that takes its first ``room`` bytes, then fails as on a full disk."""

    def __init__(self, f, room):
        self.f, self.room = f, room

    def write(self, data):
        n = min(len(data), self.room)
        self.f.write(data[:n])
        self.room -= n
        if n < len(data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return n

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


@pytest.fixture
def full_disk(tmp_path, monkeypatch):
    """An empty cache directory on a "full disk", and a process that has not warned yet."""
    monkeypatch.setenv("FUNCTRANS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache_dir, "_warned", False)
    fdopen = os.fdopen
    monkeypatch.setattr(os, "fdopen", lambda fd, *a, **k: _FullDisk(fdopen(fd, *a, **k), 100))
    return tmp_path


def _no_leftovers(root):
    left = [p for p in root.rglob("*") if p.is_file()]
    assert not left, left  # no temporary file, no partial entry


def _one_warning(caught, directory):
    mine = [w for w in caught if issubclass(w.category, CacheWarning)]
    assert len(mine) == 1, [str(w.message) for w in mine]
    message = str(mine[0].message)
    assert str(directory) in message and "No space left on device" in message, message


@pytest.mark.skipif(blas_library.NUMPY is None or blas_library.NUMPY.core() is None,
                    reason="no OpenBLAS to copy")
def test_a_failed_blas_copy_leaves_nothing_and_keeps_numpys_copy(full_disk):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            assert blas_library._private_copy(blas_library.NUMPY, "Haswell") is None
    _no_leftovers(full_disk)
    _one_warning(caught, cache_dir.cache_dir())


def test_failed_object_and_ir_writes_leave_nothing(full_disk):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(2):
            engine.store_object(f"object{k}", b"\x7fELF" * 1000)
            harvest._write_cached(f"rule{k}", "define i32 @rule() {}\n" * 100)
    assert engine.cached_object("object0") is None  # compiled again next time
    _no_leftovers(full_disk)
    _one_warning(caught, engine._dir())


def test_a_failed_kernel_module_write_leaves_nothing(full_disk):
    path = os.path.join(cache_dir.cache_dir(), "ft_0123.py")
    with pytest.raises(OSError):  # load_kernel then writes it to a directory of its own
        compile._write_module(path, "x = 1\n" * 100)
    _no_leftovers(full_disk)


def test_a_failed_numba_cache_save_is_a_warning(monkeypatch):
    """Numba raises out of the compile when it cannot save an entry (the code is built):
    for functrans's functions that is a warning, once."""
    monkeypatch.setattr(cache_dir, "_warned", False)
    cache = runtime.idiv._cache

    def full(sig, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(cache, "_save_overload", full)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            cache.save_overload(None, None)
    _one_warning(caught, cache.cache_path)


_CHILD = textwrap.dedent("""
    import resource, signal, warnings
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failing write instead of a kill
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
    warnings.simplefilter("always")
    import numpy as np, functrans as ft, functrans.numpy as fnp
    from functrans.transforms.lowering import blas_library as b
    x = np.linspace(0, 1, 64 * 64).reshape(64, 64)
    got = ft.jit(lambda a: fnp.tanh(a @ a) * 2.0)(x)
    print(b.info().get("private"), np.allclose(got, np.tanh(x @ x) * 2.0))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux") or not blas_library.info(),
                    reason="the private BLAS copy is made on Linux, of an OpenBLAS")
def test_runs_on_a_full_disk_leave_no_partial_blas_copy(tmp_path):
    """Each run used to leave a partial copy of the library (``*.so.<pid>.tmp``) behind,
    silently, so the disk stayed full."""
    env = dict(os.environ, FUNCTRANS_CACHE_DIR=str(tmp_path))
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() in (["False", "True"], ["None", "True"]), out.stdout
        assert out.stderr.count("cannot write the compiled-code cache") == 1, out.stderr
        assert "File too large" in out.stderr  # the size limit's error, named
        assert not list(tmp_path.rglob("*.tmp")) and not list(tmp_path.rglob("*.so*"))
