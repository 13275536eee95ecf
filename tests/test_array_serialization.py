"""jax.experimental.array_serialization: arrays written to TensorStore in JAX's layout (checked
by reading the stored arrays with TensorStore itself), read back under other shardings, and the
background-commit manager; and the array/sharding API checkpoint libraries read (shards'
replica ids, Array.device, memories, memory kinds, device_put of a Format)."""
from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.experimental.layout import Format, Layout
from functrans.sharding import NamedSharding, P, SingleDeviceSharding

ts = pytest.importorskip("tensorstore", reason="array_serialization needs tensorstore "
                         "(the ecosystem extra)")
from functrans.experimental.array_serialization import serialization  # noqa: E402
from functrans.experimental.array_serialization import tensorstore_impl as ts_impl  # noqa: E402


@pytest.fixture
def mesh4():
    with ft.config.override(num_cpu_devices=4):
        yield ft.make_mesh((4,), ("x",))


def _stored(spec) -> np.ndarray:
    return ts.open(spec, open=True).result().read().result()


# ---- the specs and chunks JAX writes ---------------------------------------------------------
def test_specs_and_chunks_are_jaxs():
    # The values JAX 0.10.2's functions return for the same arguments.
    assert ts_impl.get_tensorstore_spec("/ckpt/dir/w") == {
        "driver": "zarr3", "kvstore": {"driver": "ocdbt", "base": {"driver": "file",
                                                                   "path": "/ckpt/dir"},
                                       "path": "w"}}
    assert ts_impl.get_tensorstore_spec("gs://bucket/dir/w", ocdbt=False, process_idx=1) == {
        "driver": "zarr3", "kvstore": {"driver": "gcs", "bucket": "bucket",
                                       "path": "dir/process_1/w"}}
    assert serialization.get_tensorstore_spec("/ckpt/w") == {
        "driver": "zarr", "kvstore": {"driver": "file", "path": "/ckpt/w"}}
    assert ts_impl._compute_chunk_shape((64, 30), np.dtype("float32"), 1000) == [8, 30]
    assert ts_impl._compute_chunk_shape((7, 9), np.dtype("float64"), 100) == [7, 3]
    with pytest.raises(ValueError, match="should be absolute"):
        ts_impl.get_tensorstore_spec("relative/w")
    assert serialization.is_remote_storage("s3://b/x") and not serialization.is_remote_storage(
        ts_impl.get_tensorstore_spec("/a/b"))


# ---- writing: each shard's block, chunked by the shard shape ---------------------------------
def test_a_split_array_is_stored_whole_with_one_chunk_per_shard(tmp_path, mesh4):
    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    a = ft.device_put(x, NamedSharding(mesh4, P("x")))
    spec = ts_impl.get_tensorstore_spec(str(tmp_path / "a"), ocdbt=False)
    asyncio.run(ts_impl.async_serialize(a, spec))
    np.testing.assert_array_equal(_stored(spec), x)
    stored = ts.open(spec, open=True).result()
    assert stored.dtype.numpy_dtype == np.float32
    assert list(stored.chunk_layout.write_chunk.shape) == [2, 3]  # the shard shape


def test_a_replicated_array_is_written_by_replica_zero_only(tmp_path, mesh4):
    a = ft.device_put(np.arange(4.0), NamedSharding(mesh4, P()))
    assert [s.replica_id for s in a.addressable_shards] == [0, 1, 2, 3]
    spec = ts_impl.get_tensorstore_spec(str(tmp_path / "r"), ocdbt=False)
    commits: list = []
    asyncio.run(ts_impl.async_serialize(a, spec, commit_future=commits))
    assert len(commits) == 2  # the array's creation and one write
    for c in commits:
        c.result()
    np.testing.assert_array_equal(_stored(spec), np.arange(4.0))


def test_ocdbt_and_int_dtypes_round_trip(tmp_path):
    x = fnp.array([[3, -7, 2]], dtype=fnp.int32)
    spec = ts_impl.get_tensorstore_spec(str(tmp_path / "db" / "ids"))
    asyncio.run(ts_impl.async_serialize(x, spec))
    s = SingleDeviceSharding(ft.devices()[0])
    back = asyncio.run(ts_impl.async_deserialize(s, spec))
    assert back.dtype == np.int32 and back.tolist() == [[3, -7, 2]]


# ---- reading: any sharding, padding, casting ------------------------------------------------
def test_reading_under_another_sharding_pads_truncates_and_casts(tmp_path, mesh4):
    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    spec = ts_impl.get_tensorstore_spec(str(tmp_path / "a"), ocdbt=False)
    asyncio.run(ts_impl.async_serialize(ft.device_put(x, NamedSharding(mesh4, P("x"))), spec))
    cols = NamedSharding(ft.make_mesh((4,), ("x",)), P(None, "x"))
    wide = asyncio.run(ts_impl.async_deserialize(cols, spec, global_shape=(8, 4)))
    expected = np.zeros((8, 4), np.float32)
    expected[:, :3] = x
    np.testing.assert_array_equal(wide, expected)  # a larger shape pads with zeros
    assert wide.sharding == cols
    assert [s.data.shape for s in wide.addressable_shards] == [(8, 1)] * 4
    short = asyncio.run(ts_impl.async_deserialize(
        ft.ShapeDtypeStruct((4, 3), np.float64, sharding=SingleDeviceSharding(ft.devices()[1])),
        spec, global_shape=(4, 3)))
    assert short.dtype == np.float64 and short.devices() == {ft.devices()[1]}
    np.testing.assert_array_equal(short, x[:4])
    with pytest.raises(TypeError, match="instance of `jax.sharding.Sharding`"):
        asyncio.run(ts_impl.async_deserialize("cpu", spec))


def test_run_serialization_and_deserialization_of_several_arrays(tmp_path):
    arrays = [fnp.arange(5.0), fnp.ones((2, 2), fnp.float32)]
    specs = [ts_impl.get_tensorstore_spec(str(tmp_path / n), ocdbt=False) for n in "ab"]
    serialization.run_serialization(arrays, specs)
    s = SingleDeviceSharding(ft.devices()[0])
    back = serialization.run_deserialization([s, s], specs)
    for a, b in zip(arrays, back):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


# ---- the manager: commits in the background, then the callback -----------------------------
def test_manager_commits_in_the_background_then_calls_back(tmp_path):
    m = serialization.GlobalAsyncCheckpointManager()
    called = threading.Event()
    paths = [str(tmp_path / "w"), str(tmp_path / "b")]
    arrays = [fnp.arange(6.0).reshape(2, 3), fnp.array([1, 2], fnp.int32)]
    m.serialize_with_paths(arrays, paths, on_commit_callback=called.set)
    m.wait_until_finished()
    assert called.is_set()
    s = SingleDeviceSharding(ft.devices()[0])
    back = m.deserialize_with_paths([s, s], paths)
    assert back[0].tolist() == [[0, 1, 2], [3, 4, 5]] and back[1].dtype == np.int32
    assert isinstance(m, serialization.GlobalAsyncCheckpointManagerBase)

    def fail():
        raise OSError("disk full")
    m.serialize_with_paths([fnp.ones(2)], [str(tmp_path / "c")], on_commit_callback=fail)
    with pytest.raises(OSError, match="disk full"):
        m.wait_until_finished()  # the background thread's error reaches the caller once
    m.check_for_errors()


# ---- what libraries read from arrays and shardings ------------------------------------------
def test_shards_replica_ids_follow_device_order(mesh4):
    mesh = ft.make_mesh((2, 2), ("a", "b"))
    a = ft.device_put(np.arange(8.0).reshape(4, 2), NamedSharding(mesh, P("a")))
    # rows split over "a", copies over "b": devices (0, 1) hold rows 0-1, (2, 3) rows 2-3
    assert [(s.device.id, s.replica_id) for s in a.addressable_shards] == [
        (0, 0), (1, 1), (2, 0), (3, 1)]
    assert [s.replica_id for s in fnp.ones(3).addressable_shards] == [0]
    assert NamedSharding(mesh, P("a"))._addressable_device_assignment == ft.devices()[:4]


def test_array_device_memories_and_memory_kinds(mesh4):
    x = fnp.ones(3)
    assert x.device == ft.devices()[0] and x.copy_to_host_async() is None
    split = ft.device_put(np.arange(4.0), NamedSharding(mesh4, P("x")))
    assert split.device == split.sharding  # several devices: the sharding, as JAX's
    d = ft.devices()[1]
    assert str(d) == "cpu:1" and repr(d) == "CpuDevice(id=1)"
    assert [m.kind for m in d.addressable_memories()] == ["device"]
    assert d.default_memory().kind == "device" and d.client.runtime_type == "functrans"
    assert SingleDeviceSharding(d, memory_kind="device").memory_kind == "device"
    assert NamedSharding(mesh4, P(), memory_kind=None).memory_kind == "device"
    with pytest.raises(ValueError, match="one memory, kind 'device'"):
        SingleDeviceSharding(d, memory_kind="pinned_host")


def test_device_put_of_a_format_places_by_its_sharding():
    d = ft.devices()[1]
    y = ft.device_put(np.ones((2, 3)), Format(None, SingleDeviceSharding(d)))
    assert y.devices() == {d}
    assert ft.device_put(np.ones((2, 3)), Format(Layout((0, 1)), None)).shape == (2, 3)
    with pytest.raises(ValueError, match="not row-major"):
        ft.device_put(np.ones((2, 3)), Format(Layout((1, 0)), SingleDeviceSharding(d)))
