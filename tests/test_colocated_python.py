"""jax.experimental.colocated_python: functions and classes run on their arguments' CPU
devices (this process's), with JAX's contract: arrays in and out on one set of devices,
specialization, lazily made objects. Oracles: NumPy values, the Python function called
directly, and JAX's error messages."""
import gc
import threading
import weakref

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.experimental import colocated_python as cp


@pytest.fixture
def cpu_sharding():
    with ft.config.override(num_cpu_devices=2):
        devs = cp.colocated_cpu_devices(ft.devices())
        mesh = ft.sharding.Mesh(devs, ("x",))
        yield devs, ft.sharding.NamedSharding(mesh, ft.sharding.PartitionSpec())


def test_function_runs_on_the_arguments_devices(cpu_sharding):
    devs, sh = cpu_sharding
    x = ft.device_put(fnp.arange(4.0), sh)
    f = cp.colocated_python(lambda x, *, k: {"y": x * k})
    out = f(x, k=ft.device_put(fnp.float32(3.0), sh))
    np.testing.assert_array_equal(np.asarray(out["y"]), np.arange(4.0) * 3)  # exact: small ints
    assert out["y"].sharding == x.sharding
    assert f.__name__ == "<lambda>"


def test_function_runs_each_call_in_this_process(cpu_sharding):
    _, sh = cpu_sharding
    seen = []
    f = cp.colocated_python(lambda x: seen.append(float(x)) or x)
    for v in (1.0, 2.0):
        f(ft.device_put(fnp.float32(v), sh))
    assert seen == [1.0, 2.0]


def test_arguments_and_results_must_be_arrays(cpu_sharding):
    _, sh = cpu_sharding
    x = ft.device_put(1, sh)
    with pytest.raises(ValueError, match="only supports jax.Array as input and output.*int"):
        cp.colocated_python(lambda x: x + 1)(1)
    with pytest.raises(ValueError, match="only supports jax.Array.*numpy.ndarray"):
        cp.colocated_python(lambda x: x)(np.ones(2))
    with pytest.raises(ValueError, match="only supports jax.Array.*int"):
        cp.colocated_python(lambda x: 1)(x)
    assert cp.colocated_python(lambda x: None)(x) is None


def test_tracers_are_refused():
    f = cp.colocated_python(lambda x: x + 1)
    with pytest.raises(TypeError, match="cannot be called inside a transformation"):
        ft.jit(f)(fnp.ones(2))


def test_a_call_without_arguments_needs_devices(cpu_sharding):
    devs, _ = cpu_sharding
    ran = []
    f = cp.colocated_python(lambda: ran.append(1))
    with pytest.raises(ValueError, match="must be first specialized with devices"):
        f()
    f.specialize(devices=devs)()
    assert ran == [1]
    with pytest.raises(ValueError, match="devices must not be empty"):
        f.specialize(devices=[])


def test_arguments_on_different_devices_are_refused(cpu_sharding):
    devs, sh = cpu_sharding
    a = ft.device_put(fnp.ones(2), sh)
    b = ft.device_put(fnp.ones(2), devs[1])
    with pytest.raises(ValueError, match="must use the same device list"):
        cp.colocated_python(lambda a, b: a)(a, b)


def test_results_must_stay_on_the_arguments_devices(cpu_sharding):
    devs, sh = cpu_sharding
    x = ft.device_put(fnp.ones(2), sh)
    with pytest.raises(ValueError, match="must return arrays on the devices it runs on"):
        cp.colocated_python(lambda x: ft.device_put(x, devs[1]))(x)


def test_out_specs_fn_is_called_once_per_input_signature(cpu_sharding):
    _, sh = cpu_sharding
    calls = []

    def out_specs(x):
        calls.append(x)
        return x

    f = cp.colocated_python(lambda x: x + 1).specialize(out_specs_fn=out_specs)
    for v in (1.0, 2.0):
        y = f(ft.device_put(fnp.float32(v), sh))
    assert float(y) == 3.0 and len(calls) == 1
    assert isinstance(calls[0], ft.ShapeDtypeStruct) and calls[0].sharding == sh
    f(ft.device_put(fnp.ones(3, fnp.float32), sh))
    assert len(calls) == 2


def test_results_are_checked_against_the_specialized_output_specs(cpu_sharding):
    _, sh = cpu_sharding
    x = ft.device_put(fnp.int32(1), sh)
    f = cp.colocated_python(lambda x: x.astype(fnp.float32))
    with pytest.raises(ValueError, match="outputs leaf 0 is float32.*specialized for int32"):
        f.specialize(out_specs_fn=lambda x: x)(x)
    with pytest.raises(ValueError, match="outputs have structure"):
        f.specialize(out_specs_fn=lambda x: (x, x))(x)


def test_in_specs_must_match_the_arguments(cpu_sharding):
    _, sh = cpu_sharding
    spec = ft.ShapeDtypeStruct((), fnp.int32, sharding=sh)
    f = cp.colocated_python(lambda x: x + 1).specialize(
        in_specs=((spec,), {}), out_specs_fn=lambda x: x)
    assert int(f(ft.device_put(fnp.int32(1), sh))) == 2
    with pytest.raises(ValueError, match="inputs leaf 0 is float32.*specialized for int32"):
        f(ft.device_put(fnp.float32(1), sh))
    with pytest.raises(ValueError, match="inputs have structure"):
        f(ft.device_put(fnp.int32(1), sh), ft.device_put(fnp.int32(1), sh))
    with pytest.raises(TypeError, match="in_specs must be a pytree of jax.ShapeDtypeStruct"):
        cp.colocated_python(lambda x: x).specialize(in_specs=((1,), {}))


def test_each_specialization_is_given_once(cpu_sharding):
    devs, _ = cpu_sharding
    f = cp.colocated_python(lambda x: x).specialize(out_specs_fn=lambda x: x, devices=devs)
    with pytest.raises(ValueError, match="out_specs_fn already specified"):
        f.specialize(out_specs_fn=lambda x: x)
    with pytest.raises(ValueError, match="devices already specified"):
        f.specialize(devices=devs)
    with pytest.raises(TypeError, match="out_specs_fn must be a function"):
        cp.colocated_python(lambda x: x).specialize(out_specs_fn=3)
    with pytest.raises(TypeError, match="expects a function"):
        cp.colocated_python(3)


def test_calls_from_two_threads_run_concurrently(cpu_sharding):
    _, sh = cpu_sharding
    # Both calls must be inside the function at once to pass the barrier: calls made one
    # after the other would break it after the timeout.
    barrier = threading.Barrier(2, timeout=30)

    def f(x):
        barrier.wait()
        return x + 1

    f = cp.colocated_python(f).specialize(out_specs_fn=lambda x: x)
    x = ft.device_put(fnp.int32(1), sh)
    results = [None, None]
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, f(x)))
               for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [int(r) for r in results] == [2, 2]


class Adder:
    """Adds its increment."""
    made = []

    def __init__(self, increment):
        Adder.made.append(self)
        self.increment = increment
        self.calls = 0

    def add(self, x):
        self.calls += 1
        return x + self.increment

    def count(self, x):
        return x * 0 + self.calls


def test_class_makes_its_object_at_the_first_method_call(cpu_sharding):
    _, sh = cpu_sharding
    Adder.made.clear()
    Wrapped = cp.colocated_python_class(Adder)
    assert Wrapped.__name__ == "Adder" and Wrapped.__doc__ == Adder.__doc__
    adder = Wrapped(2)
    assert Adder.made == []
    x = ft.device_put(fnp.int32(1), sh)
    assert int(adder.add(x)) == 3 and int(adder.add(x)) == 3
    assert int(adder.count(x)) == 2  # one object serves every method
    assert len(Adder.made) == 1
    assert int(adder.add.specialize(out_specs_fn=lambda x: x)(x)) == 3


def test_deleting_the_wrapper_deletes_the_object(cpu_sharding):
    _, sh = cpu_sharding
    Adder.made.clear()
    adder = cp.colocated_python_class(Adder)(1)
    adder.add(ft.device_put(fnp.int32(1), sh))
    alive = weakref.ref(Adder.made.pop())
    assert alive() is not None
    del adder
    gc.collect()
    assert alive() is None


def test_a_failing_constructor_fails_every_call(cpu_sharding):
    _, sh = cpu_sharding
    made = []

    class Bad:
        def __init__(self):
            made.append(1)
            raise RuntimeError("boom")

        def m(self, x):
            return x

    bad = cp.colocated_python_class(Bad)()
    for _ in range(2):
        with pytest.raises(RuntimeError, match="boom"):
            bad.m(ft.device_put(fnp.ones(1), sh))
    assert made == [1]
    with pytest.raises(TypeError, match="expects a class"):
        cp.colocated_python_class(lambda: None)


def test_typed_key_arrays_go_in_and_out():
    key = ft.random.key(0)
    seen = []

    def out_specs(k):
        seen.append((k.shape, str(k.dtype)))
        return k

    f = cp.colocated_python(lambda k: ft.random.fold_in(k, 3)).specialize(out_specs_fn=out_specs)
    out = f(key)
    want = ft.random.fold_in(key, 3)
    np.testing.assert_array_equal(ft.random.key_data(out), ft.random.key_data(want))
    assert seen == [((), str(key.dtype))]


def test_specs_with_a_bare_partition_spec_check_shapes_and_dtypes(cpu_sharding):
    _, sh = cpu_sharding
    spec = ft.ShapeDtypeStruct((2,), fnp.float32, sharding=ft.sharding.PartitionSpec())
    f = cp.colocated_python(lambda x: x * 2).specialize(
        in_specs=((spec,), {}), out_specs_fn=lambda x: spec)
    np.testing.assert_array_equal(f(ft.device_put(fnp.ones(2, fnp.float32), sh)), [2.0, 2.0])
    with pytest.raises(ValueError, match=r"inputs leaf 0 is float32\[3\]"):
        f(ft.device_put(fnp.ones(3, fnp.float32), sh))


def test_arguments_must_be_on_the_specialized_devices(cpu_sharding):
    devs, sh = cpu_sharding
    f = cp.colocated_python(lambda x: x).specialize(devices=devs[:1])
    with pytest.raises(ValueError, match="specialized for devices"):
        f(ft.device_put(fnp.ones(2), sh))
    np.testing.assert_array_equal(f(ft.device_put(fnp.ones(2), devs[0])), [1.0, 1.0])
