"""Helpers for programs that run as several processes (``jax.experimental.multihost_utils``).

With one process they do what JAX's do there: ``process_allgather`` adds a leading axis of
size 1 (or leaves the value as it is with ``tiled=True``), ``broadcast_one_to_all`` returns
the values, ``sync_global_devices`` returns at once; results are NumPy arrays. Under
``functrans.distributed.initialize()`` (MPI) they exchange values through the process
communicator::

    >>> from functrans.experimental import multihost_utils
    >>> multihost_utils.process_allgather(fnp.arange(3))
    array([[0, 1, 2]])
"""
from __future__ import annotations

import zlib

import numpy as np

from ..core.array import Array
from ..core.devices import processes
from ..core.mesh import NamedSharding, PartitionSpec
from ..core.placement import device_put
from ..core.tree import broadcast_prefix, tree_flatten, tree_map, tree_unflatten

__all__ = ["assert_equal", "broadcast_one_to_all", "global_array_to_host_local_array",
           "host_local_array_to_global_array", "process_allgather", "reached_preemption_sync_point",
           "sync_global_devices"]


def _comm():
    return processes.communicator if processes.count > 1 else None


def process_allgather(in_tree, tiled: bool = False):
    """Every process's value of each leaf of ``in_tree``, as NumPy arrays: stacked along a new
    leading axis (one entry per process), or concatenated along axis 0 with ``tiled=True``
    (scalars are always stacked). An array already spanning the processes' devices gives its
    global value (that needs ``tiled=True``, as in JAX).

    >>> from functrans.experimental import multihost_utils
    >>> multihost_utils.process_allgather({"a": fnp.ones(2)}, tiled=True)
    {'a': array([1., 1.])}
    """
    comm = _comm()

    def gather(x):
        if isinstance(x, Array) and not x.is_fully_addressable:
            if not tiled:
                raise ValueError("process_allgather: an array spanning several processes' "
                                 "devices can only be gathered with tiled=True")
            return _gather_blocks(x, comm)
        v = np.asarray(x)
        if comm is None:
            return v if tiled else v[None]
        if v.ndim == 0 or not tiled:
            v = v[None]
        return np.concatenate(comm.allgather(v), axis=0)
    return tree_map(gather, in_tree)


def _gather_blocks(x, comm) -> np.ndarray:
    """The global value of an array spread over processes: each process sends its blocks
    (once per distinct index: replicated blocks are sent by one device)."""
    if not x._spread:
        return np.asarray(x)
    mine, seen = [], set()
    for shard in x.addressable_shards:
        key = tuple((s.start, s.stop) for s in shard.index)
        if key not in seen:
            seen.add(key)
            mine.append((shard.index, np.asarray(shard.data._value)))
    out = np.empty(x.shape, x.dtype)
    for part in comm.allgather(mine):
        for index, block in part:
            out[index] = block
    return out


def broadcast_one_to_all(in_tree, is_source: bool | None = None):
    """The source process's ``in_tree`` (process 0's unless ``is_source`` says which), in every
    process, as NumPy arrays; each process must pass the same tree structure.

    >>> from functrans.experimental import multihost_utils
    >>> multihost_utils.broadcast_one_to_all({"step": 3})
    {'step': array(3)}
    """
    leaves, tree = tree_flatten(in_tree)
    values = [np.asarray(v) for v in leaves]
    comm = _comm()
    if comm is not None:
        sources = comm.allgather(processes.index == 0 if is_source is None else bool(is_source))
        if not any(sources):
            raise ValueError("broadcast_one_to_all: no process passed is_source=True")
        values = comm.bcast(values, root=sources.index(True))
    return tree_unflatten(tree, values)


def sync_global_devices(name: str) -> None:
    """Wait until every process reaches the barrier called ``name`` (at once with one process);
    processes reaching barriers of different names raise ``AssertionError``.

    >>> from functrans.experimental import multihost_utils
    >>> multihost_utils.sync_global_devices("checkpoint saved")
    """
    assert_equal(np.uint32(zlib.crc32(name.encode())),
                 f"sync_global_devices name mismatch ({name!r})")


def reached_preemption_sync_point(step_id: int) -> bool:
    """Whether every process has reached the step at which to save before a preemption.

    JAX answers from its coordination service's preemption manager, which turns a SIGTERM
    notice into an agreed step. With one process there is no distributed service and JAX
    answers False; so does this. Across MPI processes functrans has no preemption service,
    and it raises ``RuntimeError`` as JAX does when its service is off (checkpoint libraries
    take that as "no preemption").

    >>> from functrans.experimental import multihost_utils
    >>> multihost_utils.reached_preemption_sync_point(10)
    False
    """
    if processes.count == 1:
        return False
    raise RuntimeError("reached_preemption_sync_point: functrans has no preemption service "
                       "(preemption notices are not propagated between MPI processes)")


def assert_equal(in_tree, fail_message: str = "") -> None:
    """Raise ``AssertionError`` (with ``fail_message``) unless every process passes equal
    values; a barrier across processes.

    >>> from functrans.experimental import multihost_utils
    >>> multihost_utils.assert_equal(fnp.arange(2))
    """
    comm = _comm()
    if comm is None:
        return
    leaves = [np.asarray(v) for v in tree_flatten(in_tree)[0]]
    everyone = comm.allgather(leaves)
    for other in everyone:
        if len(other) != len(leaves) or not all(
                a.shape == b.shape and np.array_equal(a, b) for a, b in zip(leaves, other)):
            raise AssertionError(f"{fail_message} Expected the same values in every process: "
                                 f"this one has {leaves}, another {other}")


def host_local_array_to_global_array(local_inputs, global_mesh, pspecs):
    """Arrays of this process's data as global arrays on ``global_mesh``, split as the
    ``pspecs`` (a PartitionSpec or a pytree prefix of them) say. With one process the local
    data is the global array, so each is placed on ``NamedSharding(global_mesh, spec)``.

    >>> from functrans.experimental import multihost_utils
    >>> x = multihost_utils.host_local_array_to_global_array(
    ...     np.arange(4.0), ft.make_mesh((2,), ("x",)), P("x"))
    >>> [s.data.tolist() for s in x.addressable_shards]
    [[0.0, 1.0], [2.0, 3.0]]
    """
    _single_process("host_local_array_to_global_array", global_mesh)
    return _place(local_inputs, global_mesh, pspecs, "host_local_array_to_global_array")


def global_array_to_host_local_array(global_inputs, global_mesh, pspecs):
    """This process's part of global arrays (the inverse of
    ``host_local_array_to_global_array``): with one process, the arrays themselves.

    >>> from functrans.experimental import multihost_utils
    >>> multihost_utils.global_array_to_host_local_array(
    ...     fnp.arange(2.0), ft.make_mesh((2,), ("x",)), P()).tolist()
    [0.0, 1.0]
    """
    _single_process("global_array_to_host_local_array", global_mesh)
    return _place(global_inputs, global_mesh, pspecs, "global_array_to_host_local_array")


def _single_process(what, mesh):
    if any(d.process_index != processes.index for d in mesh.devices.flat):
        raise NotImplementedError(f"{what}: a mesh over several processes' devices is not "
                                  "supported; build global arrays with "
                                  "ft.make_array_from_callback")


def _place(tree, mesh, pspecs, what):
    leaves, treedef = tree_flatten(tree)
    specs = ([pspecs] * len(leaves) if isinstance(pspecs, PartitionSpec)
             else broadcast_prefix(pspecs, tree, what=f"{what} pspecs"))
    return tree_unflatten(treedef, [device_put(x, NamedSharding(mesh, s or PartitionSpec()))
                                    for x, s in zip(leaves, specs)])
