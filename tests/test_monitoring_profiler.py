"""jax.monitoring (listeners called with JAX's arguments; jit compiles recorded), jax.profiler
(a trace written where TensorBoard and Perfetto look, with annotations and jit calls as
spans; memory profiles in pprof's format), and as_jax's message for each kind of missing
module."""
import glob
import gzip
import json
import os
import subprocess
import sys

import pytest

import functrans as ft
import functrans.monitoring as monitoring
import functrans.numpy as fnp
import functrans.profiler as profiler
from functrans.as_jax import _finder, missing_message
from functrans.transforms.jit.api import Jitted


@pytest.fixture
def listeners():
    seen = []
    fns = (lambda e, **kw: seen.append(("event", e, kw)),
           lambda e, d, **kw: seen.append(("duration", e, d, kw)),
           lambda e, s, t, **kw: seen.append(("span", e, s, t, kw)),
           lambda e, v, **kw: seen.append(("scalar", e, v, kw)))
    monitoring.register_event_listener(fns[0])
    monitoring.register_event_duration_secs_listener(fns[1])
    monitoring.register_event_time_span_listener(fns[2])
    monitoring.register_scalar_listener(fns[3])
    yield seen
    monitoring.unregister_event_listener(fns[0])
    monitoring.unregister_event_duration_listener(fns[1])
    monitoring.unregister_event_time_span_listener(fns[2])
    monitoring.unregister_scalar_listener(fns[3])


def test_listeners_get_jax_arguments(listeners):
    monitoring.record_event("/a", step=1, name="x")
    monitoring.record_event_duration_secs("/b", 0.25, step=2)
    monitoring.record_event_time_span("/c", 1.0, 2.5)
    monitoring.record_scalar("/d", 7, unit="bytes")
    assert listeners == [("event", "/a", {"step": 1, "name": "x"}),
                         ("duration", "/b", 0.25, {"step": 2}), ("span", "/c", 1.0, 2.5, {}),
                         ("scalar", "/d", 7, {"unit": "bytes"})]


def test_unregister_and_clear():
    seen = []
    cb = lambda e, **kw: seen.append(e)  # noqa: E731
    monitoring.register_event_listener(cb)
    assert cb in monitoring.get_event_listeners()
    monitoring._unregister_event_listener_by_callback(cb)
    monitoring.record_event("/gone")
    assert seen == [] and cb not in monitoring.get_event_listeners()
    with pytest.raises(AssertionError):
        monitoring.unregister_event_listener(cb)
    d = lambda e, t, **kw: None  # noqa: E731
    monitoring.register_event_duration_secs_listener(d)
    monitoring._unregister_event_duration_listener_by_index(-1)
    assert d not in monitoring.get_event_duration_listeners()


def test_jit_compiles_are_recorded(listeners):
    ft.jit(lambda x: x * 3.0 + 1.0)(fnp.arange(3.0))
    compiles = [e for e in listeners if e[1] == "/jax/core/compile/backend_compile_duration"]
    assert len(compiles) == 1 and compiles[0][2] >= 0
    assert compiles[0][3] == {"fun_name": "<lambda>"}


def _read_trace(log_dir):
    files = glob.glob(os.path.join(log_dir, "plugins", "profile", "*", "*.trace.json.gz"))
    assert len(files) == 1, files
    with gzip.open(files[0]) as f:
        return json.load(f)["traceEvents"]


def test_trace_holds_annotations_and_jit_calls(tmp_path):
    plain_call = Jitted.__call__

    @ft.jit
    def step(x):
        return x * 2.0

    @profiler.annotate_function
    def helper(x):
        return x + 1

    step(1.0)  # compiled before the trace
    with profiler.trace(str(tmp_path), create_perfetto_trace=True):
        assert Jitted.__call__ is not plain_call
        for i in range(2):
            with profiler.StepTraceAnnotation("train", step_num=i):
                with profiler.TraceAnnotation("inner", tag="t"):
                    assert float(step(helper(1.0))) == 4.0
    assert Jitted.__call__ is plain_call  # calls pay nothing once the trace stops
    events = _read_trace(tmp_path)
    spans = [e for e in events if e["ph"] == "X"]
    names = [e["name"] for e in spans]
    assert names.count("jit(step)") == 2 and names.count("inner") == 2
    assert [e["args"] for e in spans if e["name"] == "train"] == [{"step_num": 0},
                                                                  {"step_num": 1}]
    assert any(n.endswith("helper") for n in names)
    train = [e for e in spans if e["name"] == "train"][0]
    jit0 = [e for e in spans if e["name"] == "jit(step)"][0]
    assert train["ts"] <= jit0["ts"] and jit0["ts"] + jit0["dur"] <= train["ts"] + train["dur"]
    assert glob.glob(str(tmp_path / "plugins/profile/*/perfetto_trace.json.gz"))
    with profiler.TraceAnnotation("after"):  # no trace on: nothing recorded, no error
        pass


def test_start_stop_trace_errors(tmp_path):
    with pytest.raises(RuntimeError, match="No profile started"):
        profiler.stop_trace()
    profiler.start_trace(tmp_path)
    try:
        with pytest.raises(RuntimeError, match="already been started"):
            profiler.start_trace(tmp_path)
        ft.jit(lambda x: -x)(2.0)  # a first call: its compile is a span
    finally:
        profiler.stop_trace()
    names = {e["name"] for e in _read_trace(tmp_path)}
    assert {"jit(<lambda>)", "/jax/core/compile/backend_compile_duration"} <= names


def test_device_memory_profile(tmp_path):
    x = fnp.ones((123, 7), fnp.float32)
    data = profiler.device_memory_profile()
    raw = gzip.decompress(data)
    assert b"float32[123,7]" in raw and b"space" in raw and b"bytes" in raw
    profiler.save_device_memory_profile(tmp_path / "mem.prof")
    assert (tmp_path / "mem.prof").read_bytes()[:2] == b"\x1f\x8b"
    del x


@pytest.mark.parametrize("name, says", [
    ("jax._src.no_such_module", "JAX's internals (jax._src) are not provided"),
    ("jax.lib", "not provided: XLA-only"),
    ("jax.lib.xla_client", "not provided: XLA-only"),
    ("jax.experimental.serialize_executable", "not provided: XLA-only"),
    ("jax.extend.mlir", "not provided: XLA-only"),
    ("jax.experimental.pallas.tpu", "not provided: XLA-only"),
    ("jax.experimental.jet",
     "jax.experimental.jet is public JAX API that functrans does not provide yet"),
    ("jax.dlpack", "jax.dlpack is public JAX API that functrans does not provide yet"),
    ("jax.no_such_thing", "functrans provides no such JAX module"),
])
def test_as_jax_missing_module_messages(name, says):
    assert says in missing_message(name)
    with pytest.raises(ModuleNotFoundError, match=f"No module named '{name}'") as e:
        _finder.find_spec(name)
    assert says in str(e.value)


def test_as_jax_imports_monitoring_and_profiler(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(
        "import jax, jax.monitoring, jax.profiler\n"
        "import functrans\n"
        "assert jax.monitoring is functrans.monitoring and jax.profiler is functrans.profiler\n"
        "seen = []\n"
        "jax.monitoring.register_event_listener(lambda e, **k: seen.append(e))\n"
        "jax.monitoring.record_event('/x')\n"
        "assert seen == ['/x']\n"
        "try:\n    import jax.dlpack\nexcept ModuleNotFoundError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-m", "functrans.as_jax", str(script)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "jax.dlpack is public JAX API that functrans does not provide yet" in r.stdout
