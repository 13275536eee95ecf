"""Multi-process runs under mpiexec (the ``mpi`` extra installs mpi4py and MPICH, whose
``mpiexec`` sits next to the Python executable), and what happens when a process fails."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).parent / "mpi"
MPIEXEC = pathlib.Path(sys.executable).parent / "mpiexec"
needs_mpi = pytest.mark.skipif(not MPIEXEC.exists(), reason="needs the mpi extra's mpiexec; "
                               "the README's test command installs it")


def run(args, timeout=240, **env):
    env = dict(os.environ, PYTHONUNBUFFERED="1", **env)
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)


def mpi(script, *args, timeout=240):
    return run([str(MPIEXEC), "-n", "2", sys.executable, "-m", "mpi4py", str(HERE / script),
                *args], timeout=timeout)


@needs_mpi
def test_two_processes_agree_with_the_single_device_program():
    out = mpi("checks.py")
    assert out.returncode == 0, out.stdout + out.stderr
    for rank in (0, 1):
        assert f"process {rank} of 2: all checks passed" in out.stdout
    # debug.print in the shards: each process prints its own shards, in order.
    printed = re.findall(r"process (\d) shard (\d) value ([\d.]+)", out.stdout)
    assert sorted(printed) == [(str(p), str(s), str(float(s)))
                               for p, s in ((0, 0), (0, 1), (1, 2), (1, 3))]
    for p in "01":  # each process prints its own shards in shard order
        assert [s for q, s, _ in printed if q == p] == sorted(s for q, s, _ in printed if q == p)


def test_the_same_script_runs_as_one_process():
    out = run([sys.executable, str(HERE / "checks.py")])
    assert out.returncode == 0, out.stdout + out.stderr
    assert "process 0 of 1: all checks passed" in out.stdout


@needs_mpi
@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode, message", [
    ("raise", "shard 3 raised ValueError: shard 3 is broken; aborting all 2 processes"),
    ("exit", ""),  # mpiexec ends the job when a process dies
])
def test_a_failing_process_ends_the_job_instead_of_hanging(mode, message):
    out = mpi("faults.py", mode)
    assert out.returncode != 0
    assert "unreachable" not in out.stdout
    assert message in out.stderr


@needs_mpi
@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["exit_in_small_psum", "exit_in_large_psum"])
def test_a_process_dying_inside_a_collective_ends_the_job(mode):
    # mpiexec ends the job as soon as a process exits without MPI_Finalize: it kills the
    # survivor (SIGKILL, so the survivor cannot say anything) and exits with the dead
    # process's status. What is observable: the job ends, non-zero, with the survivor
    # inside the psum and never past it.
    out = mpi("faults.py", mode, timeout=60)
    assert out.returncode == 3, out.stdout + out.stderr
    assert "process 0 enters a psum" in out.stdout
    assert "process 1 exits inside the psum" in out.stdout
    assert "unreachable" not in out.stdout


@needs_mpi
@pytest.mark.timeout(120)
def test_a_survivor_left_running_names_the_process_that_died():
    # With the launcher's cleanup off, the survivor of a small psum finds at the deadline of
    # its fingerprint check that process 1 never came, says so and aborts the job.
    out = run([str(MPIEXEC), "-disable-auto-cleanup", "-n", "2", sys.executable, "-m",
               "mpi4py", str(HERE / "faults.py"), "exit_in_small_psum"], timeout=60,
              FUNCTRANS_COLLECTIVE_TIMEOUT="3")
    assert out.returncode != 0
    assert "unreachable" not in out.stdout
    assert ("functrans: process 0: psum over ('i',) of float32[4] (collective #1 of "
            "pmap/shard_map call #1 among processes [0, 1]): process 1 did not reach it "
            "within 3 s") in out.stderr, out.stderr[-3000:]
    assert "aborting all 2 processes" in out.stderr
