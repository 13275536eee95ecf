"""``jax.experimental.array_serialization.serialization``: checkpointing arrays to TensorStore
(:mod:`.tensorstore_impl` writes and reads them), and the managers that commit a checkpoint in
a background thread while training goes on.

A manager's commit waits for the writes, then (with several processes) for every process at
a barrier of the processes' key-value store, then runs ``on_commit_callback`` on process 0,
which then marks the checkpoint done in the store; ``wait_until_finished`` on the other
processes waits for that mark::

    >>> import tempfile, os
    >>> from functrans.experimental.array_serialization import serialization
    >>> m = serialization.GlobalAsyncCheckpointManager()
    >>> path = os.path.join(tempfile.mkdtemp(), "a")
    >>> m.serialize_with_paths([fnp.arange(3.0)], [path]); m.wait_until_finished()
    >>> s = ft.sharding.SingleDeviceSharding(ft.devices()[0])
    >>> m.deserialize_with_paths([s], [path])[0]
    Array([0., 1., 2.], dtype=float64)
"""
from __future__ import annotations

import abc
import asyncio
import functools
import itertools
import logging
import re
import threading
import time

from ... import monitoring
from ...core.devices import process_count, process_index
from ...core.errors import JaxRuntimeError
from ...core.tree import tree_map
from ...transforms.parallel import coordination
from . import tensorstore_impl as ts_impl
from .tensorstore_impl import _TS_CONTEXT as TS_CONTEXT  # noqa: F401
from .tensorstore_impl import _LimitInFlightBytes  # noqa: F401
from .tensorstore_impl import _run_deserialization as run_deserialization
from .tensorstore_impl import _run_serialization as run_serialization  # noqa: F401
from .tensorstore_impl import async_deserialize, async_serialize  # noqa: F401

__all__ = ["AsyncManager", "BarrierTimeoutError", "GlobalAsyncCheckpointManager",
           "GlobalAsyncCheckpointManagerBase", "async_deserialize", "async_serialize",
           "get_tensorstore_spec", "is_remote_storage", "run_deserialization",
           "run_serialization"]

# The older zarr layout, without OCDBT (JAX's compatibility defaults).
_get_metadata = functools.partial(ts_impl._get_tensorstore_metadata, driver="zarr")
get_tensorstore_spec = functools.partial(ts_impl.get_tensorstore_spec, driver="zarr",
                                         ocdbt=False)

_CHECKPOINT_SUCCESS = "checkpoint_write_success"
_module_unique_count = itertools.count()
_DISTRIBUTED_SYSTEM_MSG = ("Please initialize the distributed system via "
                           "`jax.distributed.initialize()` at the start of your program.")
_REMOTE = re.compile(r"^(gs://|s3://)")
logger = logging.getLogger(__name__)


class BarrierTimeoutError(Exception):
    """A process did not reach a checkpoint's commit barrier in time."""


_BARRIER_TIMED_OUT_MSG = ("Suggestions for possible fixes:\n"
                          "* Check the logs to see if one or more processes failed.\n"
                          "* Make sure the training and checkpointing endpoints are close "
                          "geographically.\n"
                          "* Try increasing the timeout you pass to "
                          "GlobalAsyncCheckpointManager.")


def is_remote_storage(tspec) -> bool:
    """Whether a spec (or kvstore URL) writes to cloud storage (gs://, s3://, gcs, s3).

        >>> is_remote_storage("gs://bucket/ckpt"), is_remote_storage({"driver": "file"})
        (True, False)
    """
    if isinstance(tspec, str):
        return bool(_REMOTE.match(tspec))
    for key in ("base", "kvstore"):
        if key in tspec:
            return is_remote_storage(tspec[key])
    return tspec.get("driver") in ("gcs", "s3")


def _get_key(key: int) -> str:
    return f"tensorstore_checkpoint_{key}"


class GlobalAsyncCheckpointManagerBase(abc.ABC):
    """What a manager that checkpoints arrays in the background provides."""

    @abc.abstractmethod
    def check_for_errors(self):
        """Raise an error the background commit met (once); returns at once otherwise."""

    @abc.abstractmethod
    def wait_until_finished(self):
        """Block until the last serialization is committed."""

    @abc.abstractmethod
    def serialize(self, arrays, tensorstore_specs, *, on_commit_callback):
        """Write arrays to TensorStore, committing in the background."""

    @abc.abstractmethod
    def deserialize(self, shardings, tensorstore_specs, global_shapes=None, dtypes=None):
        """Read arrays from TensorStore, placed by ``shardings``."""


class AsyncManager:
    """The background commit of a checkpoint (see the module's docstring)."""

    def __init__(self, timeout_secs: int = 300):
        self._timeout_secs = timeout_secs
        self._timeout_in_ms = timeout_secs * 1000
        self._commit_futures = None
        self._thread = None
        self._exception = None
        self._on_commit_callback = None
        if process_count() > 1 and coordination.client() is None:
            raise ValueError(_DISTRIBUTED_SYSTEM_MSG)
        self._client = coordination.client()
        self._count: int | None = None

    def __del__(self):
        if self._thread is not None and self._thread.is_alive():
            logger.warning("Please add `.wait_until_finished()` in the main thread before "
                           "your program finishes: errors raised while writing may be lost "
                           "if this object is deleted before writing completes.")

    def _thread_func(self):
        try:
            start = time.time()
            for future in self._commit_futures:
                future.result()
            key = None
            if process_count() > 1:
                key = _get_key(self._count)
                self._client.wait_at_barrier(key, self._timeout_in_ms)
            if process_index() == 0:
                if self._on_commit_callback is not None:
                    self._on_commit_callback()
                if key is not None:
                    self._client.key_value_set(key, _CHECKPOINT_SUCCESS)
            monitoring.record_event_duration_secs(
                "/jax/checkpoint/write/async/thread_duration_sec", time.time() - start)
        except Exception as e:  # noqa: BLE001  (raised by check_for_errors in the caller)
            self._exception = e

    def _start_async_commit(self, on_commit_callback):
        self._count = next(_module_unique_count)
        self._on_commit_callback = on_commit_callback
        self._thread = threading.Thread(target=self._thread_func)
        self._thread.start()

    def check_for_errors(self):
        if self._exception is not None:
            exception, self._exception = self._exception, None
            if (isinstance(exception, JaxRuntimeError)
                    and "DEADLINE_EXCEEDED: Barrier timed out" in str(exception)):
                raise BarrierTimeoutError("\n".join([str(exception), _BARRIER_TIMED_OUT_MSG]))
            raise exception

    def wait_until_finished(self):
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.check_for_errors()
        if process_count() > 1 and self._count is not None:
            # Process 0 marks the commit done once its callback ran.
            self._client.blocking_key_value_get(_get_key(self._count), self._timeout_in_ms)

    def _add_futures(self, futures):
        self._commit_futures = futures


class GlobalAsyncCheckpointManager(AsyncManager, GlobalAsyncCheckpointManagerBase):
    """Serializes arrays through TensorStore, committing in a background thread."""

    def serialize(self, arrays, tensorstore_specs, *, on_commit_callback=None,
                  transaction=None):
        """Write ``arrays`` to ``tensorstore_specs``: returns once the data is copied; the
        commit (then ``on_commit_callback``, on process 0, once every process committed)
        runs in the background. A previous serialization is waited for first."""
        self.wait_until_finished()
        commit_futures: list = []

        async def run():
            return await asyncio.gather(*tree_map(
                lambda a, spec: ts_impl.async_serialize(
                    a, spec, commit_future=commit_futures, transaction=transaction),
                list(arrays), list(tensorstore_specs)))
        asyncio.run(run())
        self._add_futures(commit_futures)
        self._start_async_commit(on_commit_callback)

    def serialize_with_paths(self, arrays, paths, *, on_commit_callback=None,
                             transaction=None):
        """:meth:`serialize` to the zarr arrays at ``paths``."""
        return self.serialize(arrays, [get_tensorstore_spec(p) for p in paths],
                              on_commit_callback=on_commit_callback, transaction=transaction)

    def deserialize(self, shardings, tensorstore_specs, global_shapes=None, dtypes=None,
                    concurrent_gb: int = 32):
        """The arrays at ``tensorstore_specs`` placed by ``shardings`` (after waiting for a
        serialization in progress)."""
        self.wait_until_finished()
        return run_deserialization(shardings, tensorstore_specs, global_shapes, dtypes,
                                   concurrent_gb)

    def deserialize_with_paths(self, shardings, paths, global_shapes=None, dtypes=None,
                               concurrent_gb: int = 32):
        """:meth:`deserialize` from the zarr arrays at ``paths``."""
        return self.deserialize(shardings, [get_tensorstore_spec(p) for p in paths],
                                global_shapes, dtypes, concurrent_gb)
