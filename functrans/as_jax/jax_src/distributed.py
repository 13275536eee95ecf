"""``jax._src.distributed``: the state of a multi-process run, as libraries read it
(``global_state.client``, ``.process_id``, ``.num_processes``). functrans's processes are
an MPI job joined by ``jax.distributed.initialize()``; the client is its key-value store and
barriers (``functrans/transforms/parallel/coordination.py``), None with one process, as in
JAX before ``initialize()``.

    >>> import functrans.as_jax.jax_src.distributed as distributed
    >>> distributed.global_state.client is None, distributed.global_state.num_processes
    (True, 1)
"""
from __future__ import annotations

from functrans import distributed as _distributed
from functrans.core.devices import processes as _processes
from functrans.transforms.parallel import coordination as _coordination

__all__ = ["global_state", "initialize", "shutdown"]


class State:
    """The run's processes, read live from functrans's: ``process_id``, ``num_processes``,
    ``client`` (the key-value store and barriers; None with one process). JAX's service
    objects have no counterpart: ``service`` is None (process 0's server is internal) and
    ``preemption_sync_manager`` is None (functrans has no preemption service)."""

    service = None
    preemption_sync_manager = None
    partition_index = None

    @property
    def process_id(self) -> int:
        return _processes.index

    @property
    def num_processes(self) -> int:
        return _processes.count

    @property
    def client(self):
        return _coordination.client()

    @property
    def coordinator_address(self):
        client = _coordination.client()
        return None if client is None else "%s:%d" % client.address

    def initialize(self, coordinator_address=None, num_processes=None, process_id=None,
                   local_device_ids=None, *args, **kwargs):
        _distributed.initialize(coordinator_address, num_processes, process_id,
                                local_device_ids)

    def shutdown(self):
        _distributed.shutdown()


global_state = State()
initialize = _distributed.initialize
shutdown = _distributed.shutdown
