"""Faults under mpiexec (run by tests/test_mpi.py). Whatever happens, the whole job must end,
not hang:

* ``raise``: one shard of process 1 raises;
* ``exit``: process 1 dies before its first collective;
* ``exit_in_small_psum``: process 1 dies while process 0 waits in a psum of a few bytes (the
  fingerprint check, which has a deadline);
* ``exit_in_large_psum``: process 1 dies inside a psum of 16 MiB per shard after both
  processes agreed to run it, so process 0 is inside MPI's Allreduce (no deadline there).
"""
import os
import sys
import time

import numpy as np

import functrans as ft
from functrans import lax
from functrans.transforms.parallel import mpi_buffers

ft.config.update("num_cpu_devices", 2)
ft.distributed.initialize()
mode = sys.argv[1]
RANK = ft.process_index()


def check(i):
    if int(i) == 3:
        raise ValueError("shard 3 is broken")


def die(*args):
    print(f"process {RANK} exits inside the psum", flush=True)
    time.sleep(0.5)  # the other process is waiting inside the collective by then
    os._exit(3)


def psum(x):
    print(f"process {RANK} enters a psum of {x[0].nbytes} bytes per shard", flush=True)
    ft.pmap(lambda v: lax.psum(v, "i"), "i")(x)


if mode == "exit" and RANK == 1:
    os._exit(3)
if mode == "raise":
    ft.pmap(lambda v: ft.debug.callback(check, lax.axis_index("i")) or lax.psum(v, "i"),
            "i")(np.ones(2))
if mode == "exit_in_small_psum":
    if RANK == 1:
        die()
    psum(np.ones((2, 4), np.float32))
if mode == "exit_in_large_psum":
    if RANK == 1:  # after the fingerprint check, where the data would move
        mpi_buffers._BUFFER_OPS["psum"] = lambda *args, **params: die()
    psum(np.ones((2, 1 << 22), np.float32))
# Process 0 waits here for a partner that is gone.
ft.pmap(lambda v: lax.psum(v, "i"), "i")(np.ones(2))
print("unreachable: the job should have ended", flush=True)
