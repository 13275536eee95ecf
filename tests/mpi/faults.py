"""Faults under mpiexec (run by tests/test_mpi.py): ``raise`` makes one shard of process 1
raise; ``exit`` makes process 1 die. Either way the whole job must end, not hang."""
import os
import sys

import numpy as np

import functrans as ft
from functrans import lax

ft.config.update("num_cpu_devices", 2)
ft.distributed.initialize()
mode = sys.argv[1]


def check(i):
    if int(i) == 3:
        raise ValueError("shard 3 is broken")


if mode == "exit" and ft.process_index() == 1:
    os._exit(3)
if mode == "raise":
    ft.pmap(lambda v: ft.debug.callback(check, lax.axis_index("i")) or lax.psum(v, "i"),
            "i")(np.ones(2))
# Process 0 waits here for a partner that is gone.
ft.pmap(lambda v: lax.psum(v, "i"), "i")(np.ones(2))
print("unreachable: the job should have ended", flush=True)
