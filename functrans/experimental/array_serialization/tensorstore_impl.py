"""Arrays to and from TensorStore (``jax.experimental.array_serialization.tensorstore_impl``),
in JAX's on-disk layout: a zarr3 (or zarr) array per checkpointed array, optionally inside an
OCDBT database, chunked by the array's shard shape (split further to keep files under 2 GB).

Each process writes the shards it holds (the replica 0 copy of each block, so a replicated
array is written once) and reads back the blocks of the devices it holds, from the whole
array's stored domain: a checkpoint written with one sharding restores with another.

    >>> import asyncio, tempfile, os
    >>> from functrans.experimental.array_serialization import tensorstore_impl as ts_impl
    >>> path = os.path.join(tempfile.mkdtemp(), "x")
    >>> spec = ts_impl.get_tensorstore_spec(path, ocdbt=False)
    >>> asyncio.run(ts_impl.async_serialize(fnp.arange(6.0), spec))
    [None]
    >>> s = ft.sharding.SingleDeviceSharding(ft.devices()[0])
    >>> asyncio.run(ts_impl.async_deserialize(s, spec))
    Array([0., 1., 2., 3., 4., 5.], dtype=float64)
"""
from __future__ import annotations

import asyncio
import functools
import math
import os
import re

import numpy as np

try:
    import tensorstore as ts
except ImportError as e:  # not a dependency of functrans: JAX's serialization needs it
    raise ModuleNotFoundError("jax.experimental.array_serialization needs the tensorstore "
                              "package: pip install tensorstore (or functrans[ecosystem])",
                              name="tensorstore") from e

from ...core.array_creation import make_array_from_single_device_arrays
from ...core.devices import process_count, process_index
from ...core.dtypes import canonicalize_dtype
from ...core.mesh import SingleDeviceSharding, Sharding
from ...core.placement import device_put

__all__ = ["async_serialize", "async_deserialize", "get_tensorstore_spec",
           "is_tensorstore_spec_leaf", "merge_nested_ts_specs", "verify_tensorstore_spec"]

_TS_ARRAY_DRIVER = "zarr3"
_TS_CONTEXT = ts.Context({"file_io_concurrency": {"limit": 128},
                          "cache_pool": {"total_bytes_limit": 10_000_000_000},
                          "cache_pool#remote": {"total_bytes_limit": 10_000_000_000},
                          "data_copy_concurrency": {"limit": 128}})
_TS_CHUNK_LAYOUT = ts.ChunkLayout(chunk=ts.ChunkLayout.Grid(elements=100_000_000))
_DEFAULT_BASE_DRIVER = "file"
_PROCESS_DIR_FORMAT = "process_{}"
_FILE_SIZE_TARGET = 2 * 1024 ** 3  # 2 GB: JAX's largest chunk file
Future, Transaction = ts.Future, ts.Transaction


class _LimitInFlightBytes:
    """Bounds the host memory that reads in flight hold (waits until enough is released)."""

    def __init__(self, host_memory_bytes_limit: int):
        self._max_bytes = host_memory_bytes_limit
        self._available = host_memory_bytes_limit
        self._cv = asyncio.Condition(lock=asyncio.Lock())

    async def wait_for_bytes(self, requested: int):
        if requested > self._max_bytes:
            raise ValueError(f"Requested more bytes ({requested}) than the limit "
                             f"({self._max_bytes})")
        async with self._cv:
            await self._cv.wait_for(lambda: self._available >= requested)
            self._available -= requested

    async def release_bytes(self, requested: int):
        async with self._cv:
            self._available += requested
            self._cv.notify_all()


def is_tensorstore_spec_leaf(leaf) -> bool:
    """Whether ``leaf`` is a TensorStore spec (a dict with a driver or kvstore) or None."""
    return leaf is None or (isinstance(leaf, dict) and ("driver" in leaf or "kvstore" in leaf))


def _prime_factors(x: int) -> list[int]:
    factors, p = [], 2
    while p * p <= x:
        while x % p == 0:
            factors.append(p)
            x //= p
        p += 1
    return factors + ([x] if x > 1 else [])


@functools.lru_cache(maxsize=1024)
def _compute_chunk_shape(local_shape: tuple, dtype, file_size_target: int = _FILE_SIZE_TARGET):
    # JAX's rule (the same chunks, hence the same files): divide the shard shape by its
    # smallest prime factors until a chunk is at most 110% of the target file size.
    local_shape = list(local_shape)
    if not local_shape or math.prod(local_shape) == 0:
        return [max(z, 1) for z in local_shape]
    size = math.prod(local_shape) * np.dtype(dtype).itemsize
    factors = [_prime_factors(z) for z in local_shape]
    while size > 1.1 * file_size_target:
        axes = [i for i, f in enumerate(factors) if len(f) > 1]
        if not axes:
            break
        axis = min(axes, key=lambda i: factors[i][0])
        divisor = factors[axis].pop(0)
        local_shape[axis] //= divisor
        size //= divisor
    return local_shape


def _shard_shape(arr) -> tuple:
    sharding = getattr(arr, "sharding", None)
    return tuple(sharding.shard_shape(arr.shape)) if sharding is not None else tuple(arr.shape)


def _get_tensorstore_metadata(arr, is_remote: bool = False,
                              file_size_target: int = _FILE_SIZE_TARGET,
                              driver: str = _TS_ARRAY_DRIVER) -> dict:
    """The zarr3 (or zarr) metadata JAX writes for ``arr``: shape, dtype, chunks."""
    shape, local = tuple(arr.shape), _shard_shape(arr)
    if driver == "zarr3":
        return {"codecs": [{"name": "zstd"}] if is_remote else [], "shape": shape,
                "data_type": np.dtype(arr.dtype).name,
                "chunk_grid": {"name": "regular", "configuration": {
                    "chunk_shape": _compute_chunk_shape(local, np.dtype(arr.dtype),
                                                        file_size_target)}}}
    if driver == "zarr":  # zarr keeps the dtype in the base spec
        return {"compressor": {"id": "zstd"}, "shape": shape,
                "chunks": np.maximum(1, np.array(local, dtype=int)).tolist()}
    raise ValueError(f"Unsupported driver: {driver}")


def merge_nested_ts_specs(dict1: dict, dict2: dict | None) -> dict:
    """``dict1`` updated by ``dict2`` (their kvstores merged, ``dict2``'s keys win)."""
    if dict2 is None:
        return dict1
    return dict1 | dict(dict2, kvstore=dict1.get("kvstore", {}) | dict2.get("kvstore", {}))


def verify_tensorstore_spec(spec: dict, arr, path, ocdbt: bool,
                            check_metadata: bool = True) -> None:
    """Raise ``ValueError`` unless ``spec`` stores ``arr`` (dtype, shape, chunks dividing its
    shards) at ``path`` (in an OCDBT store if ``ocdbt``)."""
    if ocdbt and spec.get("kvstore", {}).get("driver", "") != "ocdbt":
        raise ValueError(f"Expected ocdbt driver, got {spec=}")
    if check_metadata:
        if arr is None:
            raise ValueError("Array is required for metadata verification.")
        metadata = spec["metadata"]
        zarr3 = spec.get("driver", "") == "zarr3"
        if zarr3 and metadata["data_type"] != np.dtype(arr.dtype).name:
            raise ValueError(f"Provided dtype ({metadata['data_type']=}) doesn't match "
                             f"({arr.dtype=})")
        if "shape" in metadata and tuple(metadata["shape"]) != tuple(arr.shape):
            raise ValueError(f"Provided shape ({metadata['shape']=}) doesn't match "
                             f"({arr.shape=})")
        if zarr3:
            chunk = metadata["chunk_grid"]["configuration"]["chunk_shape"]
            if np.any(np.array(_shard_shape(arr)) % np.array(chunk, dtype=int)):
                raise ValueError(f"Provided chunk shape {chunk} does not divide the local "
                                 f"shape of the array {_shard_shape(arr)}")
    found = spec["kvstore"]["base"]["path"] if ocdbt else spec["kvstore"]["path"]
    if str(found) != str(path):
        raise ValueError(f"Provided {path=} does not match the spec path: {spec['kvstore']}")


def _bucket_kvstore(driver: str, ckpt_path: str) -> dict:
    m = re.fullmatch(r"^(?:gs|s3)://([^/]*)/(.*)$", ckpt_path, re.DOTALL)
    if m is None:
        raise ValueError("The ckpt_path should contain the bucket name and the file path "
                         f"inside the bucket. Got: {ckpt_path}")
    return {"driver": driver, "bucket": m.group(1), "path": m.group(2)}


def get_tensorstore_spec(ckpt_path, ocdbt: bool = True, process_idx: int | None = None,
                         arr=None, driver: str = _TS_ARRAY_DRIVER) -> dict:
    """The TensorStore spec JAX stores an array at ``ckpt_path`` with: a ``driver`` array
    (zarr3) in a file (or gs://, s3://) kvstore, inside an OCDBT database at the parent
    directory if ``ocdbt`` (the name is its key); under ``process_<i>/`` for
    ``process_idx``; with ``arr``'s metadata if given.

        >>> from functrans.experimental.array_serialization import tensorstore_impl
        >>> tensorstore_impl.get_tensorstore_spec("/ckpt/w", ocdbt=False)
        {'driver': 'zarr3', 'kvstore': {'driver': 'file', 'path': '/ckpt/w'}}
    """
    ckpt_path = re.sub(r"^(gs|s3):/", r"\1://", os.path.normpath(str(ckpt_path)))
    if process_idx is not None:
        parent, name = os.path.split(ckpt_path)
        ckpt_path = os.path.join(parent, _PROCESS_DIR_FORMAT.format(process_idx), name)
    remote = ckpt_path.startswith(("gs://", "s3://"))
    entry_key = None
    if ocdbt:
        ckpt_path, entry_key = os.path.split(ckpt_path)
        if not remote and not os.path.isabs(ckpt_path):
            raise ValueError(f"Checkpoint path should be absolute. Got {ckpt_path}")
    if ckpt_path.startswith("gs://"):
        base = _bucket_kvstore("gcs", ckpt_path)
    elif ckpt_path.startswith("s3://"):
        base = _bucket_kvstore("s3", ckpt_path)
    else:
        base = {"driver": _DEFAULT_BASE_DRIVER, "path": ckpt_path}
    spec = {"driver": driver,
            "kvstore": {"driver": "ocdbt", "base": base, "path": entry_key} if ocdbt else base}
    if arr is not None:
        spec["metadata"] = _get_tensorstore_metadata(arr, driver=driver)
    return spec


def _spec_has_metadata(tree) -> bool:
    return isinstance(tree, dict) and ("metadata" in tree or any(
        _spec_has_metadata(v) for v in tree.values()))


async def async_serialize(arr_inp, tensorstore_spec, commit_future=None, context=_TS_CONTEXT,
                          chunk_layout=_TS_CHUNK_LAYOUT, primary_host: int | None = None,
                          replica_id: int = 0, transaction=None):
    """Write ``arr_inp``'s shards held by this process (those of replica ``replica_id``) to
    the array ``tensorstore_spec`` describes, creating it (on ``primary_host`` only, or on
    every process for None). With a list ``commit_future``, the writes' commit futures are
    appended to it and this returns once the data is copied; otherwise it returns once
    committed. Across processes, an array every process holds whole is refused (each process
    would write all of it)."""
    if process_count() > 1 and getattr(arr_inp, "is_fully_addressable", True):
        raise ValueError("Passing fully addressable arrays to a multiprocess serialization "
                         "is not allowed, as this may lead to a race condition between "
                         "processes. Serialization have failed for the array with the path "
                         f'from kvstore: "{tensorstore_spec["kvstore"]}".')
    if not _spec_has_metadata(tensorstore_spec):
        tensorstore_spec["metadata"] = _get_tensorstore_metadata(
            arr_inp, driver=tensorstore_spec["driver"])
    if tensorstore_spec["driver"] == "zarr" and "dtype" not in tensorstore_spec:
        tensorstore_spec["dtype"] = np.dtype(arr_inp.dtype).name
    if primary_host is None or process_index() == primary_host:
        created = ts.open(ts.Spec(tensorstore_spec), create=True, open=True, context=context,
                          chunk_layout=chunk_layout, transaction=transaction)
        if commit_future is not None:
            commit_future.append(created)
        else:
            await created
    # Opened again assuming the metadata (no I/O): other processes may not see it created.
    t = await ts.open(ts.Spec(tensorstore_spec), open=True, assume_metadata=True,
                      context=context, chunk_layout=chunk_layout, transaction=transaction)

    async def write(shard):
        if shard.replica_id != replica_id:
            return None
        data = np.asarray(shard.data)
        await asyncio.sleep(0)  # let the other shards' writes start
        written = t[shard.index].write(data, can_reference_source_data_indefinitely=True)
        if commit_future is not None:
            commit_future.append(written.commit)
            await written.copy
        else:
            await written.commit
        return None

    return await asyncio.gather(*(write(s) for s in arr_inp.addressable_shards))


def _run_serialization(arrays, tensorstore_specs) -> None:
    """Write each of ``arrays`` to its spec, waiting for the commits."""
    async def run():
        return await asyncio.gather(*(async_serialize(a, s)
                                      for a, s in zip(arrays, tensorstore_specs)))
    asyncio.run(run())


def estimate_read_memory_footprint(t, domain) -> int:
    """Bytes read to fetch ``domain`` of ``t``: whole chunks it touches."""
    nbytes = t.dtype.numpy_dtype.itemsize
    if domain is None:
        domain = t.domain
    template = t.chunk_layout.read_chunk_template
    if not all(template[i].finite for i in range(t.rank)):
        return domain.size * nbytes
    for i in range(t.rank):
        size = template.shape[i]
        lower = domain.origin[i] - template.origin[i]
        upper = lower + domain.shape[i]
        nbytes *= -(-upper // size) * size - lower // size * size
    return nbytes


def _sharding_of(in_type):
    # A Sharding, a ShapeDtypeStruct with one, or a Format (its .sharding).
    sharding = in_type if isinstance(in_type, Sharding) else getattr(in_type, "sharding", None)
    if not isinstance(sharding, Sharding):
        raise TypeError("sharding passed to deserialization should be specified, concrete "
                        f"and an instance of `jax.sharding.Sharding`. Got {in_type}")
    return sharding


async def async_deserialize(in_type, tensorstore_spec, global_shape=None, dtype=None,
                            byte_limiter: _LimitInFlightBytes | None = None,
                            context=_TS_CONTEXT, chunk_layout=_TS_CHUNK_LAYOUT,
                            assume_metadata: bool = False):
    """The array stored at ``tensorstore_spec``, placed by ``in_type`` (a Sharding, or a
    ShapeDtypeStruct or Format carrying one): each of this process's devices reads its block.
    A ``global_shape`` larger than the stored one pads with zeros, a smaller one truncates;
    ``dtype`` casts on the host."""
    if dtype is None and hasattr(in_type, "dtype") and not isinstance(in_type, Sharding):
        dtype = in_type.dtype
    sharding = _sharding_of(in_type)
    t = await ts.open(tensorstore_spec, open=True, assume_metadata=assume_metadata,
                      context=context, chunk_layout=chunk_layout)
    shape = tuple(t.shape if global_shape is None else global_shape)
    stored = t.dtype.numpy_dtype
    dtype = canonicalize_dtype(np.dtype(stored if dtype is None else dtype))
    block_shape = tuple(sharding.shard_shape(shape))

    async def read(index, device):
        requested = ts.IndexTransform(input_shape=shape)[index].domain
        present = t.domain.intersect(requested)
        nbytes = estimate_read_memory_footprint(t, present)
        if byte_limiter is not None:
            await byte_limiter.wait_for_bytes(nbytes)
        out = np.zeros(block_shape, dtype=stored)
        await ts.array(out)[ts.d[:].translate_to[requested.origin]][present].write(
            t[present])
        block = device_put(out.astype(dtype, copy=False), SingleDeviceSharding(device))
        if byte_limiter is not None:
            await byte_limiter.release_bytes(nbytes)
        return block

    index_map = sharding.devices_indices_map(shape)
    mine = [d for d in sharding._addressable_device_assignment]
    blocks = await asyncio.gather(*(read(index_map[d], d) for d in mine))
    return make_array_from_single_device_arrays(shape, sharding, list(blocks))


def _run_deserialization(shardings, tensorstore_specs, global_shapes=None, dtypes=None,
                         concurrent_gb: int = 32):
    """Read each spec's array placed by its sharding (at most ``concurrent_gb`` GB of reads
    in flight)."""
    n = len(tensorstore_specs)
    shapes = [None] * n if global_shapes is None else list(global_shapes)
    dtypes = [None] * n if dtypes is None else list(dtypes)

    async def run():
        limiter = _LimitInFlightBytes(concurrent_gb * 10 ** 9)
        return await asyncio.gather(*(
            async_deserialize(s, spec, shape, dt, byte_limiter=limiter)
            for s, spec, shape, dt in zip(shardings, tensorstore_specs, shapes, dtypes)))
    return asyncio.run(run())
