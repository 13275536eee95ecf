"""Many processes, many hosts: ``initialize()`` under ``mpiexec`` joins the processes.

After it, ``ft.devices()`` lists the devices of every process (``ft.local_devices()`` this
process's), ``ft.process_index()``/``ft.process_count()`` say where this process stands, and
collectives of ``pmap``/``shard_map`` over devices of several processes exchange values through
MPI (``mpi4py``; install the ``mpi`` extra, which also brings an ``mpiexec``). A script that
calls ``initialize()`` runs unchanged as one process, with or without MPI installed::

    $ mpiexec -n 2 python -m mpi4py my_script.py

``python -m mpi4py`` makes an exception in one process abort the others instead of leaving them
waiting.

``initialize()`` also starts the processes' key-value store and barriers (process 0 serves
them; ``jax._src.distributed.global_state.client`` under ``functrans.as_jax``), through which
checkpoint libraries agree from background threads: a value one process sets, another's
blocking get receives; a barrier returns once every process reached it.

A collective across processes is one MPI call on the shard's NumPy buffer (``Allreduce`` for
``psum``/``pmax``/``pmin``, ``Allgather``, ``Reduce_scatter_block``, ``Alltoall``, point-to-point
for ``ppermute``; values MPI cannot reduce, such as bfloat16, are pickled). Before it, the
processes exchange a small fingerprint of the collective: processes at different collectives
(a ``lax.cond`` branch only some take, different programs) get an error naming them, and a
process that does not arrive within ``FUNCTRANS_COLLECTIVE_TIMEOUT`` seconds (default 300) is
reported instead of waited for; either way the job then ends.
"""
from __future__ import annotations

from .core.config import config
from .core.devices import processes


def initialize(coordinator_address=None, num_processes=None, process_id=None,
               local_device_ids=None) -> None:
    """Join the processes of this MPI job (a no-op for a single process without MPI).

    JAX's arguments are accepted for portability; MPI already knows the processes, so any
    given ``num_processes``/``process_id`` must agree with it.

    >>> ft.distributed.is_initialized()  # a single process, not started by mpiexec
    False
    """
    try:
        from mpi4py import MPI
    except ImportError:
        if num_processes not in (None, 1):
            raise RuntimeError("functrans.distributed.initialize: several processes need "
                               "mpi4py and an MPI implementation: pip install "
                               "'functrans[mpi]' and start the script with mpiexec") from None
        return
    comm = MPI.COMM_WORLD
    if comm.Get_size() == 1:
        return  # one process: nothing to join; the device count stays a live setting
    if num_processes is not None and num_processes != comm.Get_size():
        raise ValueError(f"initialize: num_processes={num_processes}, but mpiexec started "
                         f"{comm.Get_size()} processes")
    if process_id is not None and process_id != comm.Get_rank():
        raise ValueError(f"initialize: process_id={process_id}, but MPI says this is process "
                         f"{comm.Get_rank()}")
    n_local = int(config.num_cpu_devices)
    processes.local_device_counts = tuple(comm.allgather(n_local))
    processes.index, processes.count = comm.Get_rank(), comm.Get_size()
    processes.communicator = comm
    from .transforms.parallel import coordination, mpi_comms
    mpi_comms.attach(comm)  # (collective: every process is here)
    coordination.start(comm)


def is_initialized() -> bool:
    """Whether ``initialize()`` joined several processes."""
    return processes.communicator is not None


def shutdown() -> None:
    """Leave the distributed run: later programs use this process's devices only."""
    processes.index, processes.count = 0, 1
    processes.local_device_counts, processes.communicator = (), None
    from .transforms.parallel import coordination, mpi_comms
    mpi_comms.detach()
    coordination.stop()
