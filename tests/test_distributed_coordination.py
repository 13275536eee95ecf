"""The processes' key-value store and barriers (jax._src.distributed's client; process 0 serves
them under MPI), exercised here by threads standing for processes; and the XLA-only modules
orbax imports (colocated_python, pxla, ifrt_programs), which import and name themselves
XLA-only when used."""
from __future__ import annotations

import threading
import time

import pytest

import functrans as ft
from functrans.errors import JaxRuntimeError
from functrans.transforms.parallel.coordination import Client, Server


@pytest.fixture
def store():
    server = Server(b"secret", n_processes=3)
    yield server, [Client(server.address, b"secret", p) for p in range(3)]
    server.stop()


def _in_threads(*calls):
    # each call in its own thread (a process), returning their results or errors
    out = [None] * len(calls)

    def run(i, f):
        try:
            out[i] = f()
        except Exception as e:  # noqa: BLE001  (reported to the test)
            out[i] = e
    threads = [threading.Thread(target=run, args=(i, f)) for i, f in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return out


def test_values_set_get_list_delete_and_count(store):
    _, (c0, c1, _) = store
    c0.key_value_set("ckpt/1/p0", "done")
    c1.key_value_set("ckpt/1/p1", "done")
    c1.key_value_set("other", "x")
    assert c1.key_value_try_get("ckpt/1/p0") == "done"
    assert c0.key_value_dir_get("ckpt/1") == [("ckpt/1/p0", "done"), ("ckpt/1/p1", "done")]
    with pytest.raises(JaxRuntimeError, match="ALREADY_EXISTS"):
        c0.key_value_set("other", "y")
    c0.key_value_set("other", "y", allow_overwrite=True)
    assert c1.key_value_try_get("other") == "y"
    c0.key_value_delete("ckpt/1")
    assert c0.key_value_dir_get("ckpt/1") == []
    with pytest.raises(JaxRuntimeError, match="NOT_FOUND"):
        c0.key_value_try_get("ckpt/1/p0")
    c0.key_value_set_bytes("raw", b"\x00\xffab")
    assert c1.key_value_try_get_bytes("raw") == b"\x00\xffab"
    assert c1.blocking_key_value_get_bytes("raw", 1000) == b"\x00\xffab"
    assert [c0.key_value_increment("n", 2), c1.key_value_increment("n", 5)] == [2, 7]


def test_a_blocking_get_waits_for_another_process_to_set(store):
    _, (c0, c1, _) = store

    def later():
        time.sleep(0.3)
        c1.key_value_set("ready", "yes")
    start = time.monotonic()
    got, _ = _in_threads(lambda: c0.blocking_key_value_get("ready", 10_000), later)
    assert got == "yes" and time.monotonic() - start >= 0.3
    with pytest.raises(JaxRuntimeError, match="DEADLINE_EXCEEDED"):
        c0.blocking_key_value_get("never", 200)


def test_barriers_wait_for_every_process_and_time_out(store):
    _, clients = store
    passed = []

    def arrive(c, delay):
        time.sleep(delay)
        c.wait_at_barrier("step_1", 10_000)
        passed.append((c.process_id, time.monotonic()))
    start = time.monotonic()
    _in_threads(*(lambda c=c, d=d: arrive(c, d) for c, d in zip(clients, (0, 0.1, 0.4))))
    assert sorted(p for p, _ in passed) == [0, 1, 2]
    assert min(t for _, t in passed) - start >= 0.4  # nobody passed before the last arrived
    # the same id may be used again once passed
    assert _in_threads(*(lambda c=c: c.wait_at_barrier("step_1", 10_000) for c in clients)) \
        == [None] * 3
    # a subset of processes
    c0, c1, c2 = clients
    assert _in_threads(lambda: c0.wait_at_barrier("pair", 5000, process_ids=[0, 2]),
                       lambda: c2.wait_at_barrier("pair", 5000, process_ids=[0, 2])) == [None] * 2
    # process 2 never arrives: both waiting processes time out, told who arrived
    errors = _in_threads(lambda: c0.wait_at_barrier("late", 300),
                         lambda: c1.wait_at_barrier("late", 300))
    for e in errors:
        assert isinstance(e, JaxRuntimeError)
        assert "DEADLINE_EXCEEDED: Barrier timed out. Id: late" in str(e)
    assert any("arrived: [0, 1] of [0, 1, 2]" in str(e) for e in errors)


def test_requests_need_the_token_and_a_running_server():
    server = Server(b"secret", n_processes=1)
    with pytest.raises(JaxRuntimeError, match="PERMISSION_DENIED"):
        Client(server.address, b"guess", 0).key_value_try_get("x")
    client = Client(server.address, b"secret", 0)
    server.stop()
    with pytest.raises(JaxRuntimeError, match=r"UNAVAILABLE: .* \(served by process 0\)"):
        client.key_value_set("x", "1")


def test_single_process_state_and_preemption_answer():
    import functrans.as_jax.jax_src.distributed as distributed
    from functrans.experimental import multihost_utils
    assert distributed.global_state.client is None
    assert (distributed.global_state.process_id, distributed.global_state.num_processes) == (0, 1)
    assert distributed.global_state.preemption_sync_manager is None
    assert multihost_utils.reached_preemption_sync_point(3) is False  # JAX's, without a service


# ---- the XLA-only modules orbax imports ------------------------------------------------------
def test_colocated_python_finds_cpu_devices_and_refuses_ifrt_serialization():
    from functrans.experimental import colocated_python as cp
    from functrans.experimental.colocated_python import func, serialization
    with ft.config.override(num_cpu_devices=2):
        devs = ft.devices()
        assert cp.colocated_cpu_devices(devs) == devs
        mesh = ft.make_mesh((2,), ("x",))
        cpu_mesh = cp.colocated_cpu_devices(mesh)
        assert cpu_mesh.axis_names == ("x",) and list(cpu_mesh.devices.flat) == devs
    # (colocated functions themselves run in this process: tests/test_colocated_python.py)
    with pytest.raises(NotImplementedError, match="XLA-only"):
        serialization.DeviceList(devs)
    assert getattr(func, "_make_prng_wrapped_fun", None) is None
    with pytest.raises(AttributeError, match="XLA-only"):
        serialization._reduce_mesh  # noqa: B018


def test_pxla_and_ifrt_programs_import_with_xla_only_names():
    from functrans.extend.ifrt_programs import ifrt_programs
    from functrans.interpreters import pxla
    with pytest.raises(AttributeError, match="pxla.global_avals_to_results_handler is not "
                       "provided: XLA-only"):
        pxla.global_avals_to_results_handler  # noqa: B018
    with pytest.raises(AttributeError, match="make_plugin_program is not provided: XLA-only"):
        ifrt_programs.make_plugin_program  # noqa: B018
