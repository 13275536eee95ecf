"""Users' numba.cuda.jit kernels in functrans programs (``numba_call(..., launch=...)``):
eagerly, as steps of ``jit(..., backend="cuda")`` programs (on the device buffers the
program holds, no copies to the host between steps), under vmap, and the errors. Run in
numba-cuda's simulator (conftest.py), so sizes are small: every GPU thread is a Python thread.
"""
import math

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.core.devices import available_backends
from functrans.core.errors import JaxRuntimeError

pytestmark = pytest.mark.skipif(
    "cuda" not in available_backends(),
    reason="numba-cuda is not installed (the dev extra installs it)")

from numba import cuda  # noqa: E402

from functrans.transforms.cuda import executable as cuda_exec  # noqa: E402
from functrans.transforms.cuda.resident import DeviceResidentArray  # noqa: E402

S = ft.ShapeDtypeStruct


def cuda_jit(f):
    return ft.jit(f, backend="cuda")


@cuda.jit
def affine(x, out, scale, shift):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = scale * x[i] + shift


def blocks_of(n, threads=4):
    return max(1, math.ceil(n / threads)), threads


def test_elementwise_kernel_eagerly_and_in_a_cuda_program():
    """Params reach the kernel positionally after its results, in the order its signature
    declares them (given here in the other order); launch may be a function of the shapes."""
    x = np.linspace(-1.0, 1.0, 10).astype(np.float32)

    def f(v):
        return ft.numba_call(affine, S(v.shape, v.dtype), v, shift=1.0, scale=3.0,
                             launch=lambda shape: blocks_of(shape[0]))
    want = 3.0 * x + 1.0
    np.testing.assert_allclose(f(x), want, rtol=1e-6)
    got = cuda_jit(f)(x)
    assert type(got) is DeviceResidentArray
    np.testing.assert_allclose(got, want, rtol=1e-6)


@cuda.jit
def distances(x, y, out):
    i, j = cuda.grid(2)
    if i < x.shape[0] and j < y.shape[0]:
        out[i, j] = math.sqrt((x[i, 0] - y[j, 0]) ** 2 + (x[i, 1] - y[j, 1]) ** 2)


def test_two_dimensional_grid_kernel():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(5, 2)), rng.normal(size=(7, 2))
    want = np.sqrt(((x[:, None, :] - y[None, :, :]) ** 2).sum(-1))

    def f(a, b):
        return ft.numba_call(distances, S((5, 7), a.dtype), a, b, launch=((2, 2), (4, 4)))
    np.testing.assert_allclose(f(x, y), want, rtol=1e-12)
    np.testing.assert_allclose(cuda_jit(f)(x, y), want, rtol=1e-12)


@cuda.jit
def pair_count(pos, w, hist, rmax):
    """Weighted count of the pairs i < j by distance: hist[b] += w_i w_j (atomically)."""
    i = cuda.grid(1)
    n = pos.shape[0]
    nbins = hist.shape[0]
    if i < n:
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            b = int(math.sqrt(dx * dx + dy * dy) / rmax * nbins)
            if b < nbins:
                cuda.atomic.add(hist, b, w[i] * w[j])


def pair_count_numpy(pos, w, nbins, rmax):
    i, j = np.triu_indices(len(pos), 1)
    d = np.sqrt(((pos[i] - pos[j]) ** 2).sum(-1))
    b = (d / rmax * nbins).astype(np.int64)
    keep = b < nbins
    return np.bincount(b[keep], (w[i] * w[j])[keep], minlength=nbins)


def histogram(pos, w, nbins=8, rmax=2.5):
    return ft.numba_call(pair_count, S((nbins,), w.dtype), pos, w, rmax=rmax,
                         launch=lambda pos_shape, w_shape: blocks_of(pos_shape[0], 8))


def test_atomic_pair_count_histogram():
    rng = np.random.default_rng(1)
    pos, w = rng.uniform(0, 1.5, (30, 2)), rng.uniform(0.5, 2.0, 30)
    want = pair_count_numpy(pos, w, 8, 2.5)
    assert want.sum() > 0
    np.testing.assert_allclose(histogram(pos, w), want, rtol=1e-12)
    np.testing.assert_allclose(cuda_jit(histogram)(pos, w), want, rtol=1e-12)
    # the results start as zeros on every call (an accumulating kernel sees no old counts)
    np.testing.assert_allclose(cuda_jit(histogram)(pos, w), want, rtol=1e-12)


def _count_copies(monkeypatch):
    """Counters of the copies between host and device the cuda backend makes."""
    counts = {"to_device": 0, "to_host": 0}
    to_device = cuda_exec.to_device
    monkeypatch.setattr(cuda_exec, "to_device", lambda x, aval: counts.__setitem__(
        "to_device", counts["to_device"] + 1) or to_device(x, aval))
    array_type = type(cuda.device_array(1, np.float32))
    copy_to_host = array_type.copy_to_host

    def counted(self, *args, **kwargs):
        counts["to_host"] += 1
        return copy_to_host(self, *args, **kwargs)
    monkeypatch.setattr(array_type, "copy_to_host", counted)
    return counts


def mixed_program(pos, w):
    """Generated CUDA steps before the user's kernel (centering, abs) and after it
    (normalizing, a cumulative sum)."""
    centered = pos - fnp.mean(pos, axis=0)
    hist = histogram(centered, fnp.abs(w))
    return hist / fnp.sum(hist), fnp.cumsum(hist)


def test_a_program_mixing_generated_steps_and_the_users_kernel_stays_on_the_device(
        monkeypatch):
    rng = np.random.default_rng(2)
    pos, w = rng.normal(size=(24, 2)), rng.uniform(-2.0, 2.0, 24)
    f = cuda_jit(mixed_program)
    f(pos, w)  # compiled, index maps uploaded
    counts = _count_copies(monkeypatch)
    share, cumulative = f(pos, w)
    # the two arguments were copied in; nothing came back to the host between the steps
    assert counts == {"to_device": 2, "to_host": 0}
    assert type(share) is DeviceResidentArray and type(cumulative) is DeviceResidentArray
    hist = pair_count_numpy(pos - pos.mean(0), np.abs(w), 8, 2.5)
    np.testing.assert_allclose(share, hist / hist.sum(), rtol=1e-12)
    np.testing.assert_allclose(cumulative, np.cumsum(hist), rtol=1e-12)
    assert counts["to_host"] == 2  # each result once, when read
    # a result kept on the device feeds the next program's kernel as it is
    g = cuda_jit(lambda p, v: histogram(p.reshape(4, 2), v))
    again = g(cumulative, w[:4])
    assert counts["to_device"] == 3  # w[:4] only
    np.testing.assert_allclose(again, pair_count_numpy(np.cumsum(hist).reshape(4, 2), w[:4],
                                                       8, 2.5), rtol=1e-12)


def cpu_cumsum(x, out):
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i]
        out[i] = acc


def test_a_cpu_kernel_in_a_cuda_program_runs_on_the_host_between_device_steps(monkeypatch):
    x = np.linspace(0.0, 1.0, 6)

    def f(v):
        y = ft.numba_call(cpu_cumsum, S(v.shape, v.dtype), fnp.sin(v))
        return y * 2.0
    g = cuda_jit(f)
    g(x)
    counts = _count_copies(monkeypatch)
    got = g(x)
    # in: the argument, then the CPU kernel's result; out: the CPU kernel's operand
    assert counts == {"to_device": 2, "to_host": 1}
    np.testing.assert_allclose(got, np.cumsum(np.sin(x)) * 2.0, rtol=1e-12)


@cuda.jit
def scale_rows(x, s, out):
    """out = x * s[..., :1]: one row (rank 1) or rows (rank 2, as vmap's expand_dims and
    broadcast_all call it: s has a row per batch element, or one for all)."""
    if out.ndim == 1:
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = x[i] * s[0]
    else:
        b, i = cuda.grid(2)
        if b < out.shape[0] and i < out.shape[1]:
            out[b, i] = x[b, i] * s[b % s.shape[0], 0]


def _launch_rows(x_shape, s_shape):
    if len(x_shape) == 1:
        return blocks_of(x_shape[0])
    return (x_shape[0], max(1, math.ceil(x_shape[1] / 4))), (1, 4)


@pytest.mark.parametrize("method", ["sequential", "expand_dims", "broadcast_all"])
def test_vmap(method):
    rng = np.random.default_rng(3)
    xs, ss = rng.normal(size=(3, 6)), rng.normal(size=(3, 1))

    def f(x, s):
        return ft.numba_call(scale_rows, S(x.shape, x.dtype), x, s, launch=_launch_rows,
                             vmap_method=method)
    want = xs * ss
    np.testing.assert_allclose(ft.vmap(f)(xs, ss), want, rtol=1e-12)
    np.testing.assert_allclose(cuda_jit(ft.vmap(f))(xs, ss), want, rtol=1e-12)
    # one operand batched, the other not
    np.testing.assert_allclose(cuda_jit(ft.vmap(f, in_axes=(0, None)))(xs, ss[1]),
                               xs * ss[1], rtol=1e-12)


def test_nested_sequential_vmap_launches_on_views_of_the_batched_buffers():
    x = np.arange(24.0).reshape(2, 3, 4)
    s = np.array([[2.0], [3.0]])

    def f(v, c):
        return ft.numba_call(scale_rows, S(v.shape, v.dtype), v, c, launch=_launch_rows,
                             vmap_method="sequential")
    g = ft.vmap(ft.vmap(f, in_axes=(0, None)), in_axes=(0, 0))
    np.testing.assert_allclose(cuda_jit(g)(x, s), x * s[:, :, None], rtol=1e-12)
    np.testing.assert_allclose(g(x, s), x * s[:, :, None], rtol=1e-12)


def test_batched_kernel_gets_the_launch_configuration():
    xs, ss = np.ones((2, 5)), np.array([[2.0], [4.0]])

    @cuda.jit
    def one_row(x, s, out):  # never launched: vmap uses the batched form
        pass

    def f(x, s):
        return ft.numba_call(one_row, S(x.shape, x.dtype), x, s, launch=_launch_rows,
                             batched_kernel=scale_rows)
    np.testing.assert_allclose(cuda_jit(ft.vmap(f))(xs, ss), xs * ss)


# ---- errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize("launch", [128, (4,), (1.5, 4), "auto", (4, (1, 2, 3, 4)), (True, 4)])
def test_a_wrong_launch_configuration_is_refused_naming_the_kernel(launch):
    with pytest.raises(TypeError, match="kernel 'affine' got launch=.*blocks, threads_per_block"):
        ft.numba_call(affine, S((4,), "float32"), np.ones(4, "float32"), scale=1.0, shift=0.0,
                      launch=launch)


def test_launch_errors():
    x = np.ones(4, "float32")
    with pytest.raises(ValueError, match="at least 1"):
        ft.numba_call(affine, S((4,), "float32"), x, scale=1.0, shift=0.0, launch=(0, 4))
    with pytest.raises(TypeError, match="kernel 'affine' got launch=None"):
        ft.numba_call(affine, S((4,), "float32"), x, scale=1.0, shift=0.0,
                      launch=lambda shape: None)
    with pytest.raises(TypeError, match="launch function of kernel 'affine' raised"):
        ft.numba_call(affine, S((4,), "float32"), x, scale=1.0, shift=0.0,
                      launch=lambda: (1, 4))
    with pytest.raises(TypeError, match="'affine' is a numba.cuda.jit kernel: give its "
                                        "launch configuration"):
        ft.numba_call(affine, S((4,), "float32"), x, scale=1.0, shift=0.0)
    with pytest.raises(TypeError, match="launch= is for numba.cuda.jit kernels.*cpu_cumsum"):
        ft.numba_call(cpu_cumsum, S((4,), "float32"), x, launch=(1, 4))


def test_params_must_match_the_kernel_signature():
    x = np.ones(4, "float32")
    with pytest.raises(TypeError, match="declares no parameter offset.*scale, shift"):
        ft.numba_call(affine, S((4,), "float32"), x, scale=1.0, offset=0.0, launch=(1, 4))
    with pytest.raises(TypeError, match="takes parameter 'shift'.*shift=..."):
        ft.numba_call(affine, S((4,), "float32"), x, scale=1.0, launch=(1, 4))


def test_a_cuda_kernel_under_cpu_jit_says_to_use_the_cuda_backend():
    f = ft.jit(lambda v: ft.numba_call(affine, S(v.shape, v.dtype), v, scale=1.0, shift=0.0,
                                       launch=(1, 4)))
    with pytest.raises(TypeError, match="kernel 'affine' is a numba.cuda.jit kernel.*cpu "
                                        "backend.*backend='cuda'"):
        f(np.ones(4, "float32"))


def test_a_failing_kernel_raises_naming_it():
    @cuda.jit
    def out_of_bounds(x, out):
        i = cuda.grid(1)
        out[i + 100] = x[i]

    def f(v):
        return ft.numba_call(out_of_bounds, S(v.shape, v.dtype), v, launch=(1, 2))
    for g in (f, cuda_jit(f)):
        with pytest.raises(JaxRuntimeError, match="kernel out_of_bounds raised"):
            g(np.ones(2))


def test_inside_control_flow_and_without_the_zero_fill():
    """In a fori_loop body (a nested program the host drives); zero_outputs=False when the
    kernel writes every element."""
    from functrans import lax
    x = np.linspace(0.0, 1.0, 6)

    def step(i, v):
        return ft.numba_call(affine, S(v.shape, v.dtype), v, scale=0.5, shift=1.0,
                             launch=(2, 4), zero_outputs=False)
    want = x
    for _ in range(3):
        want = 0.5 * want + 1.0
    np.testing.assert_allclose(cuda_jit(lambda v: lax.fori_loop(0, 3, step, v))(x), want,
                               rtol=1e-12)


def test_numba_kernel_declares_a_cuda_kernel_once():
    double = ft.numba_kernel(affine, result=lambda x, **p: S(x.shape, x.dtype),
                             launch=lambda shape: blocks_of(shape[0]))
    x = np.arange(5.0)
    np.testing.assert_allclose(cuda_jit(lambda v: double(v, scale=2.0, shift=0.0))(x), 2 * x)
    with pytest.raises(TypeError, match="kernel 'affine' has no derivative rule"):
        ft.grad(lambda v: double(v, scale=2.0, shift=0.0).sum())(x)


def test_scalar_kernel_in_a_cuda_program_runs_on_the_host_between_device_steps():
    """numba_vectorize's function is compiled for the CPU: in a CUDA program it is a host
    step (values copied over and back), and the program's results equal the CPU backend's."""
    import math
    gauss = ft.numba_vectorize(lambda v: math.exp(-v * v))
    x = np.linspace(-1.0, 1.0, 7)
    f = lambda v: fnp.sin(gauss(v)) * 2.0  # noqa: E731
    np.testing.assert_allclose(np.asarray(ft.jit(f, backend="cuda")(x)),
                               np.sin(np.exp(-x * x)) * 2.0, rtol=1e-14)
