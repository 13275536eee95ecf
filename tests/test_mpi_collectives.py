"""Collectives across processes (MPI buffer operations) against the vmap oracle, and collectives
that only some shards or processes reach: an error naming the collective and who diverged,
never a hang (threads of one process here; processes under mpiexec)."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import functrans as ft
from functrans import lax
from functrans.core.errors import ShardError
from functrans.transforms.parallel.divergence import (CollectiveMismatchError,
                                                      collective_timeout)

HERE = pathlib.Path(__file__).parent / "mpi"
MPIEXEC = pathlib.Path(sys.executable).parent / "mpiexec"
needs_mpi = pytest.mark.skipif(not MPIEXEC.exists(), reason="needs the mpi extra's mpiexec; "
                               "the README's test command installs it")


def run(args, timeout=240, **env):
    env = dict(os.environ, PYTHONUNBUFFERED="1", **env)
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)


def mpi(script, *args, **env):
    return run([str(MPIEXEC), "-n", "2", sys.executable, "-m", "mpi4py", str(HERE / script),
                *args], **env)


@needs_mpi
@pytest.mark.timeout(300)
def test_every_collective_across_two_processes_equals_the_vmap_oracle():
    out = mpi("collectives.py")
    assert out.returncode == 0, out.stdout + out.stderr
    for rank in (0, 1):
        assert (f"process {rank} of 2: 18 mesh checks, 6 with large buffers and the pmap, "
                "fallback and pytree checks passed") in out.stdout


@pytest.mark.timeout(300)
def test_the_collectives_script_runs_as_one_process():
    out = run([sys.executable, str(HERE / "collectives.py")])
    assert out.returncode == 0, out.stdout + out.stderr
    assert "process 0 of 1: 3 mesh checks, 2 with large buffers" in out.stdout


_PSUM = "psum over ('i',) of float32[3]"


@needs_mpi
@pytest.mark.timeout(200)
@pytest.mark.parametrize("mode, messages", [
    ("cond", [f"divergent collectives between the shards of this process at collective #1 of "
              f"this pmap/shard_map call: shard 0 at {_PSUM}; shard 1 at the end of its "
              "program"]),
    ("cond_processes", [f"divergent collectives between processes: process 0 (call #1, "
                        f"collective #1) at {_PSUM}; process 1 (call #1, collective #1) at "
                        "the end of its program"]),
    ("programs", [f"process 0 (call #1, collective #1) at {_PSUM}; process 1 (call #1, "
                  "collective #1) at pmax over ('i',) of float32[3]"]),
    ("missing", [f"{_PSUM} (collective #1 of pmap/shard_map call #1 among processes [0, 1]): "
                 "process 1 did not reach it within 3 s (FUNCTRANS_COLLECTIVE_TIMEOUT)"]),
])
def test_a_collective_only_some_processes_reach_raises_instead_of_hanging(mode, messages):
    out = mpi("divergence.py", mode, FUNCTRANS_COLLECTIVE_TIMEOUT="3")
    assert out.returncode != 0
    assert "unreachable" not in out.stdout
    for message in messages:
        assert message in out.stderr, out.stderr[-3000:]


# ---- threads of one process ----------------------------------------------------------------
@pytest.fixture
def two_devices():
    with ft.config.override(num_cpu_devices=2):
        yield


def _branchy(then, otherwise):
    return ft.pmap(lambda v: lax.cond(lax.axis_index("i") == 0, then, otherwise, v), "i")


@pytest.mark.timeout(120)
def test_a_collective_in_a_branch_only_some_shards_take_raises(two_devices):
    f = _branchy(lambda v: lax.psum(v, "i"), lambda v: v * 2)
    with pytest.raises(CollectiveMismatchError, match=r"shard 0 at psum over \('i',\) of "
                       r"float64\[3\]; shard 1 at the end of its program"):
        f(np.ones((2, 3)))
    # The devices are usable again, and a program where every shard meets works.
    g = ft.pmap(lambda v: lax.psum(v, "i"), "i")
    np.testing.assert_array_equal(g(np.ones((2, 3))), np.full((2, 3), 2.0))


@pytest.mark.timeout(120)
def test_different_collectives_at_the_same_step_raise(two_devices):
    f = _branchy(lambda v: lax.psum(v, "i"), lambda v: lax.pmax(v, "i"))
    with pytest.raises(CollectiveMismatchError) as info:
        f(np.ones((2, 3)))
    message = str(info.value)
    assert "collective #1" in message
    assert "shard 0 at psum over ('i',)" in message and "shard 1 at pmax over ('i',)" in message
    assert isinstance(info.value, ShardError)


@pytest.mark.timeout(120)
def test_a_later_collective_a_finished_shard_never_reaches_raises(two_devices):
    # Shard 1 skips the second psum; shard 0 reaches it after shard 1 has finished.
    def f(v):
        v = lax.psum(v, "i")
        return lax.cond(lax.axis_index("i") == 0, lambda v: lax.psum(v, "i"), lambda v: v, v)
    with pytest.raises(CollectiveMismatchError, match="at collective #2 of this pmap"):
        ft.pmap(f, "i")(np.ones((2, 3)))


def test_the_collective_timeout_setting(monkeypatch):
    monkeypatch.delenv("FUNCTRANS_COLLECTIVE_TIMEOUT", raising=False)
    assert collective_timeout() == 300.0
    monkeypatch.setenv("FUNCTRANS_COLLECTIVE_TIMEOUT", "2.5")
    assert collective_timeout() == 2.5
    for bad in ("soon", "0", "-1"):
        monkeypatch.setenv("FUNCTRANS_COLLECTIVE_TIMEOUT", bad)
        with pytest.raises(ValueError, match="FUNCTRANS_COLLECTIVE_TIMEOUT"):
            collective_timeout()


# ---- buffers reused by large collectives ---------------------------------------------------
def test_a_pooled_buffer_is_reused_only_once_nothing_refers_to_it():
    from functrans.core import buffer_pool
    shape = (buffer_pool.MIN_BYTES // 4,)
    first = buffer_pool.take(shape, np.float32)
    view = first[10:]
    del first
    second = buffer_pool.take(shape, np.float32)  # a view of the first is still alive
    assert not np.shares_memory(view, second)
    address = view.__array_interface__["data"][0] - 40
    del view
    third = buffer_pool.take(shape, np.int32)
    assert third.__array_interface__["data"][0] == address
    assert third.dtype == np.int32 and third.shape == shape and third.flags.c_contiguous
    small = buffer_pool.take((4,), np.float32)  # below the pool's size: plain np.empty
    assert small.shape == (4,)
    del second, third
    buffer_pool.clear()
