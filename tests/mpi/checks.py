"""Multi-process checks, run by tests/test_mpi.py under ``mpiexec -n 2 python -m mpi4py`` and
also as one plain process (the same script must work unchanged without MPI).

Each process has 2 CPU devices. The oracle is the single-device program run on the global data
(every process can build the global inputs: they are seeded by the shard index).
"""
import numpy as np

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.sharding import P, make_mesh

ft.config.update("num_cpu_devices", 2)
ft.distributed.initialize()
RANK, NPROC = ft.process_index(), ft.process_count()
N = ft.device_count()


def close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)


def global_batch():
    return np.stack([np.random.default_rng(g).normal(size=(5, 3)) for g in range(N)])


def local_part(x):
    return x[RANK * 2:(RANK + 1) * 2]


def check_devices():
    assert NPROC in (1, 2)
    assert N == 2 * NPROC and ft.local_device_count() == 2
    assert [d.process_index for d in ft.local_devices()] == [RANK, RANK]
    assert [d.id for d in ft.devices()] == list(range(N))


def check_pmap_collectives():
    x = global_batch()

    def f(v):
        ring = [(j, (j + 1) % N) for j in range(N)]
        return (lax.psum(v, "i") + lax.all_gather(v, "i").sum(0) * lax.axis_index("i")
                + lax.ppermute(v, "i", ring) - lax.pmax(v, "i"))
    got = ft.pmap(f, "i")(local_part(x))
    close(got, local_part(ft.vmap(f, axis_name="i")(x)))


def loss(w, xb):
    return fnp.sum(fnp.tanh(xb @ w) ** 2)


def check_data_parallel_gradients():
    x, w = global_batch(), np.linspace(-1, 1, 6).reshape(3, 2)
    step = ft.pmap(lambda w, xb: lax.pmean(ft.grad(loss)(w, xb), "i"), "i", in_axes=(None, 0))
    want = ft.grad(loss)(w, x.reshape(-1, 3)) / N
    for g in np.asarray(step(w, local_part(x))):
        close(g, want)
    # grad of a pmap across processes: the gradient of this process's slices.
    total = ft.grad(lambda x: ft.pmap(lambda v: v * lax.psum(v, "i"), "i")(x).sum())
    vm = ft.grad(lambda x: ft.vmap(lambda v: v * lax.psum(v, "i"), axis_name="i")(x).sum())
    close(total(local_part(x)), local_part(vm(x)))


def check_shard_map_over_global_mesh():
    mesh = make_mesh((NPROC, 2), ("proc", "dev"))
    rng = np.random.default_rng(99)
    x, w1, w2 = rng.normal(size=(4, 8)), rng.normal(size=(8, 8)), rng.normal(size=(8, 2))

    def layer(x, w1, w2):  # data split over processes, model over each process's devices
        return lax.psum(fnp.tanh(x @ w1) @ w2, "dev")
    f = ft.shard_map(layer, mesh=mesh, in_specs=(P("proc"), P(None, "dev"), P("dev")),
                     out_specs=P("proc"))
    close(f(x, w1, w2), fnp.tanh(x @ w1) @ w2)
    g = ft.grad(lambda w1: (f(x, w1, w2) ** 2).sum())(w1)
    close(g, ft.grad(lambda w1: ((fnp.tanh(x @ w1) @ w2) ** 2).sum())(w1))


def check_debug_print():
    ft.pmap(lambda v: ft.debug.print("process {} shard {} value {}", RANK,
                                     lax.axis_index("i"), v), "i")(np.arange(2.0) + 2 * RANK)


for check in (check_devices, check_pmap_collectives, check_data_parallel_gradients,
              check_shard_map_over_global_mesh, check_debug_print):
    check()
print(f"process {RANK} of {NPROC}: all checks passed", flush=True)
