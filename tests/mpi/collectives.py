"""Every collective across processes against the vmap oracle (run by tests/test_mpi_collectives.py
under ``mpiexec -n 2 python -m mpi4py``; also runs as one plain process).

Each process has 2 CPU devices. The meshes: all devices in order (each process's members
contiguous, one group across processes), 2-D (a process axis and a device axis: groups within
a process and groups across), the devices interleaved by process (members of one process not
contiguous along the axis), and 3 of the 4 devices (processes holding unequal numbers of
members). Inputs are small integers, so sums are exact in any order and results must be equal,
not close. bool and bfloat16 reductions go through the pickled fallback.
"""
import sys

import numpy as np

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.core.mesh import Mesh
from functrans.sharding import P

ft.config.update("num_cpu_devices", 2)
ft.distributed.initialize()
RANK, NPROC = ft.process_index(), ft.process_count()
DEVICES = ft.devices()


def program(axis, n, full=True):
    """Every collective over ``axis`` (size ``n``) on a block ``v`` of shape (2n, 3)."""
    def g(v):
        outs = [lax.psum(v, axis), lax.pmax(v, axis), lax.pmin(v, axis)]
        if not full:
            return outs
        ring = [(j, (j + 1) % n) for j in range(n)]
        outs += [lax.all_gather(v, axis), lax.all_gather(v, axis, axis=1, tiled=True),
                 lax.psum_scatter(v, axis, tiled=True),
                 lax.psum_scatter(v[:n], axis, scatter_dimension=0),
                 lax.psum_scatter(v.T, axis, scatter_dimension=1, tiled=True),
                 lax.all_to_all(v, axis, 0, 1, tiled=True),
                 lax.all_to_all(v[:n], axis, 0, 1),
                 lax.ppermute(v, axis, ring), lax.ppermute(v, axis, [(0, n - 1)]),
                 lax.axis_index(axis) + fnp.zeros((), v.dtype)]
        return outs
    return g


def on_mesh(g, mesh, x):
    """``g`` per shard of ``mesh`` on x's blocks (x: one leading dim per mesh axis)."""
    k = len(mesh.axis_names)
    spec = P(*mesh.axis_names)
    f = ft.shard_map(lambda b: [o[(None,) * k] for o in g(b[(0,) * k])], mesh=mesh,
                     in_specs=spec, out_specs=spec)
    return f(x)


def oracle(g, axes, x, names=None):
    """vmap over every mesh axis; a collective over one axis of a 2-D mesh is checked on each
    slice along the other axis (vmap's all_gather/psum_scatter rules misplace the gathered or
    scattered dimension under an outer vmap over another axis name)."""
    names = axes if names is None else names
    if len(axes) == 2 and len(names) == 1:
        other = axes.index(names[0]) ^ 1
        slices = [oracle(g, names, np.take(x, i, other)) for i in range(x.shape[other])]
        return [np.stack([s[k] for s in slices], other) for k in range(len(slices[0]))]
    for name in reversed(axes):
        g = ft.vmap(g, axis_name=name)
    return g(x)


def same(got, want, what):
    for i, (a, b) in enumerate(zip(got, want)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, (what, i, a.dtype, b.dtype, a.shape,
                                                           b.shape)
        np.testing.assert_array_equal(a.astype(np.float64), b.astype(np.float64),
                                      err_msg=f"{what}: output {i}")


def data(shape, dtype, seed):
    return np.random.default_rng(seed).integers(-8, 8, shape).astype(dtype)


def meshes():
    n = len(DEVICES)
    yield "1-D", Mesh(np.array(DEVICES, dtype=object), ("i",)), [("i",)]
    if NPROC == 2:
        grid = np.array(DEVICES, dtype=object).reshape(2, 2)
        yield "2-D", Mesh(grid, ("proc", "dev")), [("proc",), ("dev",), ("proc", "dev")]
        yield "interleaved", Mesh(grid.T.reshape(-1), ("i",)), [("i",)]
        yield "3 of 4 devices", Mesh(np.array(DEVICES[:3], dtype=object), ("i",)), [("i",)]
    assert n == 2 * NPROC


def check_collectives():
    checked = 0
    for label, mesh, axis_sets in meshes():
        sizes = mesh.shape
        for names in axis_sets:
            n = int(np.prod([sizes[a] for a in names]))
            axis = names[0] if len(names) == 1 else names
            g = program(axis, n, full=len(names) == 1)
            for dtype in (np.float32, np.float64, np.int32):
                x = data(tuple(sizes.values()) + (2 * n, 3), dtype, checked)
                same(on_mesh(g, mesh, x), oracle(g, mesh.axis_names, x, names),
                     f"{label} mesh over {names}, {np.dtype(dtype).name}")
                checked += 1
    return checked


def check_pmap_over_all_devices():
    """pmap across processes: each process passes and gets back its own devices' slices."""
    n = len(DEVICES)
    g = program("i", n)
    for dtype in (np.float32, np.int32):
        x = data((n, 2 * n, 3), dtype, 7)
        mine = slice(RANK * 2, RANK * 2 + 2)
        same(ft.pmap(g, "i")(x[mine]), [o[mine] for o in oracle(g, ("i",), x)],
             f"pmap {np.dtype(dtype).name}")


def check_scalar_shards():
    """Per-shard scalars keep their rank through every reduction path (small ones ride with
    the fingerprint, larger ones take Allreduce): a psum of 0-d values is 0-d."""
    n = len(DEVICES)
    x = data((n,), np.float64, 5)
    mine = slice(RANK * 2, RANK * 2 + 2)
    g = lambda v: [lax.psum(v, "i"), lax.pmax(v, "i"), lax.pmean(v, "i")]  # noqa: E731
    same(ft.pmap(g, "i")(x[mine]), [o[mine] for o in oracle(g, ("i",), x)], "0-d shards")


def check_large_buffers():
    """Results over a mebibyte come from reused buffers (and several local shards share one
    read-only result): a result kept from one call must not change when the next call, with
    other data, reuses buffers."""
    def g(v):
        return [lax.psum(v, "i"), lax.all_gather(v, "i"),
                lax.all_gather(v, "i", axis=1, tiled=True), lax.psum_scatter(v, "i", tiled=True)]
    checked = 0
    for label, mesh, _ in meshes():
        if len(mesh.axis_names) != 1:
            continue
        n = mesh.size
        kept = []
        for seed in (1, 2):
            x = data((n, 2 * n, 50_000), np.float32, seed)
            kept.append((on_mesh(g, mesh, x), oracle(g, ("i",), x)))
        for got, want in kept:
            same(got, want, f"{label} mesh, large buffers")
            checked += 1
    return checked


def check_fallback_dtypes():
    """Reductions MPI cannot do on these dtypes go through the pickled fallback; moving them
    (all_gather, ppermute) goes as raw bytes."""
    n = len(DEVICES)
    mesh = Mesh(np.array(DEVICES, dtype=object), ("i",))

    def g(v):
        return [lax.pmax(v, "i"), lax.pmin(v, "i"), lax.all_gather(v, "i"),
                lax.ppermute(v, "i", [(j, (j + 1) % n) for j in range(n)])]
    flags = data((n, 4, 3), np.int32, 3) > 0
    same(on_mesh(g, mesh, flags), oracle(g, ("i",), flags), "bool")
    halves = data((n, 4, 3), np.float32, 4).astype(fnp.bfloat16)

    def h(v):
        return g(v) + [lax.psum(v, "i"), lax.psum_scatter(v, "i", tiled=True)]
    same(on_mesh(h, mesh, halves), oracle(h, ("i",), halves), "bfloat16")


def check_pytree_psum_and_pmean():
    n = len(DEVICES)
    x = data((n, 5), np.float64, 11)
    f = ft.pmap(lambda v: lax.pmean({"a": v, "b": (v * 2).astype(np.float32)}, "i"), "i")
    got = f(x[RANK * 2:RANK * 2 + 2])
    np.testing.assert_array_equal(got["a"][0], x.mean(0))
    np.testing.assert_array_equal(got["b"][1], (2 * x).mean(0).astype(np.float32))


checked = check_collectives()
check_pmap_over_all_devices()
large = check_large_buffers()
check_scalar_shards()
check_fallback_dtypes()
check_pytree_psum_and_pmean()
print(f"process {RANK} of {NPROC}: {checked} mesh checks, {large} with large buffers and the "
      "pmap, fallback and pytree checks passed", flush=True)
sys.stdout.flush()
