"""jit over arrays spread over 2 MPI processes (one CPU device each): data-parallel, FSDP and
Megatron steps equal the unsharded step; eager operations and eager grad on spread arrays;
each process holds only its blocks. Run by tests/test_jit_partitioning.py under mpiexec."""
import numpy as np

import functrans as ft
import functrans.numpy as fnp
from functrans.experimental import multihost_utils as mu
from functrans.sharding import AxisType, NamedSharding, PartitionSpec as P

ft.config.update("num_cpu_devices", 1)
ft.distributed.initialize()
rank = ft.process_index()
mesh = ft.make_mesh((2,), ("x",), axis_types=(AxisType.Auto,))
rng = np.random.default_rng(0)
w = [rng.normal(size=(16, 8)), rng.normal(size=(8, 4))]
x = rng.normal(size=(32, 16))


@ft.jit
def step(params, x):
    def loss(p):
        return fnp.mean((fnp.tanh(x @ p[0]) @ p[1]) ** 2)
    grads = ft.grad(loss)(params)
    return [p - 0.1 * g for p, g in zip(params, grads)]


want = step(w, x)  # unsharded, in each process
put = lambda a, spec: ft.device_put(a, NamedSharding(mesh, spec))  # noqa: E731
for name, w_specs, x_spec in [("DP", (P(), P()), P("x")), ("FSDP", (P("x"), P("x")), P("x")),
                              ("TP", (P(None, "x"), P("x")), P())]:
    got = step([put(v, s) for v, s in zip(w, w_specs)], put(x, x_spec))
    for g, v, s in zip(got, want, w_specs):
        assert not g.is_fully_addressable and g.sharding.spec == s, (name, g.sharding)
        # float64; partial sums of 2 processes reassociate a 32-term sum: 1e-12 relative.
        np.testing.assert_allclose(mu.process_allgather(g, tiled=True), v, rtol=1e-12)
    if name == "FSDP":  # each process holds half of every parameter
        assert [g.local_nbytes for g in got] == [v.nbytes // 2 for v in want]

a = put(np.arange(8.0), P("x"))
np.testing.assert_array_equal(mu.process_allgather(a * 2.0 + 1.0, tiled=True),
                              np.arange(8.0) * 2 + 1)
assert float(mu.process_allgather(fnp.sum(a), tiled=True)) == 28.0
g = ft.grad(lambda v: fnp.sum(v ** 2))(a)
np.testing.assert_array_equal(mu.process_allgather(g, tiled=True), np.arange(8.0) * 2)
try:
    float(fnp.sum(a))
    raise SystemExit("a value spread over processes was read")
except RuntimeError as e:
    assert "process_allgather" in str(e)
print(f"process {rank}: partitioned checks passed")
