"""Collectives that not every process reaches (run by tests/test_mpi_collectives.py under
``mpiexec -n 2 python -m mpi4py``, 2 devices per process). Each mode must end the job with an
error naming the collective and the shards or processes, never hang:

* ``cond``: a psum in a cond branch only global shard 0 takes (its process's other shard
  finishes without it)
* ``cond_processes``: a psum in a branch the shards of process 0 take and those of process 1
  do not (process 1 ends the call)
* ``programs``: process 0 runs a psum where process 1 runs a pmax
* ``missing``: process 1 never calls the pmap (run with a short FUNCTRANS_COLLECTIVE_TIMEOUT)
"""
import sys

import numpy as np

import functrans as ft
from functrans import lax

ft.config.update("num_cpu_devices", 2)
ft.distributed.initialize()
RANK = ft.process_index()
mode = sys.argv[1]
x = np.ones((2, 3), np.float32)


def branch(pred):
    return ft.pmap(lambda v: lax.cond(pred(lax.axis_index("i")), lambda v: lax.psum(v, "i"),
                                      lambda v: v, v), "i")


if mode == "cond":
    branch(lambda i: i == 0)(x)
elif mode == "cond_processes":
    branch(lambda i: i < 2)(x)
elif mode == "programs":
    collective = lax.psum if RANK == 0 else lax.pmax
    ft.pmap(lambda v: collective(v, "i"), "i")(x)
elif mode == "missing":
    if RANK == 0:
        ft.pmap(lambda v: lax.psum(v, "i"), "i")(x)
    else:
        sys.exit(0)
print(f"unreachable: process {RANK} went on", flush=True)
