"""The demo's MLP trained four parallel ways: ``python -m functrans.demo --distributed``.

Each variant runs a few SGD-with-momentum steps of the demo's 64-128-10 digit classifier
with the batch, the parameters or the layers spread over devices, and checks every step
against the single-device step (``functrans.demos.mlp.train_step``):

* **data parallel** (DP): each device has a copy of the parameters and a slice of the batch;
  the gradients are averaged (``pmean``);
* **FSDP / ZeRO-3**: each device holds 1/P of every layer's parameters *and* of the momentum
  (one flat buffer per layer, split in P chunks); a layer is ``all_gather``-ed just before it
  is used (and again in the backward pass: the layer is rematerialized), and its gradient is
  reduce-scattered (``psum_scatter``, the transpose of ``all_gather``) so each device updates
  only its chunk;
* **tensor parallel** (Megatron): the first weight split by columns (each device computes
  its hidden units, no communication), the second by rows (partial logits, one ``psum``);
* **pipeline** (GPipe, two stages): layer 1 on device 0, layer 2 on device 1, the batch cut
  into microbatches whose activations go from stage to stage with ``ppermute``; the
  backward pass is ``grad`` of that program (the ``ppermute``s transposed: cotangents flow
  back from stage 1 to stage 0).

Every variant is ``pmap`` over the devices, with each process passing only its own devices'
blocks (as in JAX): in one process with N CPU devices the process holds all N blocks; under
``mpiexec -n 2 python -m mpi4py -m functrans.demo --distributed`` each process has one device
and holds only its shards. The oracle (the single-device step on the whole batch) is cheap
enough that every process computes it and checks its own blocks against it.
"""
from __future__ import annotations

import argparse
import re
import sys
import time

import numpy as np

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.data import load_digits
from functrans.demos.mlp import NUM_CLASSES, SIZES, init_params, parallel_step, sgd, train_step

AXIS = "devices"
# float32 with sums in another order (a batch split in parts, a hidden layer in blocks, the
# partial logits added by psum): results agree to a few float32 ulps of values of order 1.
# Over a few steps that stays below 1e-5; a wrong gradient (a missing 1/P, a psum too many)
# is off by 1e-3 or more.
TOLERANCE = 1e-5


# ---- shared pieces -----------------------------------------------------------------------
def cross_entropy(z, y):
    """The demo's loss on logits ``z`` (the same operations, so the same rounding)."""
    logp = ft.nn.log_softmax(z)
    return -fnp.mean(fnp.sum(logp * ft.nn.one_hot(y, NUM_CLASSES, dtype="float32"), axis=-1))


def local_indices(n):
    """Which of the ``n`` mapped devices this process feeds (pmap across processes maps
    over every process's devices, in ``ft.devices()`` order, and takes local blocks)."""
    if ft.process_count() == 1:
        return list(range(n))
    return [i for i, d in enumerate(ft.devices()[:n]) if d.process_index == ft.process_index()]


def stack_local(blocks):
    """The blocks of this process's devices, stacked on a new leading (device) axis."""
    mine = [blocks[i] for i in local_indices(len(blocks))]
    return ft.tree_util.tree_map(lambda *b: np.stack([np.asarray(a) for a in b]), *mine)


def nbytes(tree):
    return sum(np.asarray(a).nbytes for a in ft.tree_util.tree_leaves(tree))


def split_batch(x, n):
    """``x`` cut into ``n`` equal slices along the batch axis (one per device)."""
    return list(np.asarray(x).reshape(n, -1, *np.shape(x)[1:]))


# ---- 1. data parallel ------------------------------------------------------------------
def dp_shard(params, n):
    """Every device holds a full copy."""
    return [params] * n


# The demo's own data-parallel step: the local batch's gradient, averaged over the devices
# with pmean, so every copy applies the same update.
dp_step = parallel_step


# ---- 2. FSDP / ZeRO-3 ------------------------------------------------------------------
def _flat_size(shape, n):
    """A layer's (w, b) as one flat buffer, padded to a multiple of ``n`` devices."""
    m, k = shape
    return -(-(m * k + k) // n) * n


def fsdp_shard(params, n):
    """Per device: one chunk of each layer's flat (w, b) buffer; padding is zeros (its
    gradient is zero, so it stays zero)."""
    chunks = []
    for w, b in params:
        flat = np.concatenate([np.ravel(w), np.ravel(b)])
        flat = np.pad(flat, (0, _flat_size(np.shape(w), n) - flat.size))
        chunks.append(np.split(flat, n))
    return [tuple(c[d] for c in chunks) for d in range(n)]


def _gathered_layer(shape, last):
    """Layer function that all-gathers its weights first. ``checkpoint`` keeps only the
    chunk and the input for the backward pass, which gathers again: no device keeps more
    than one layer's full weights (ZeRO-3's re-gather in backward)."""
    m, k = shape

    def layer(chunk, h):
        flat = lax.all_gather(chunk, AXIS, tiled=True)
        z = h @ flat[:m * k].reshape(m, k) + flat[m * k:m * k + k]
        return z if last else ft.nn.relu(z)
    return ft.checkpoint(layer)


def make_fsdp_step(sizes=SIZES):
    """The FSDP step for an MLP of ``sizes``. Each device's objective is its batch slice's
    mean loss / P, so the objectives sum to the whole batch's mean loss; the gradient of a
    chunk comes out of the transpose of ``all_gather``, a ``psum_scatter``: summed over the
    devices, and only this device's chunk."""
    shapes = list(zip(sizes[:-1], sizes[1:]))
    layers = [_gathered_layer(s, i == len(shapes) - 1) for i, s in enumerate(shapes)]

    def local_loss(chunks, x, y):
        for layer, chunk in zip(layers, chunks):
            x = layer(chunk, x)
        return cross_entropy(x, y)

    def step(chunks, velocity, x, y, lr):
        n = lax.axis_size(AXIS)
        value, grads = ft.value_and_grad(lambda c: local_loss(c, x, y) / n)(chunks)
        chunks, velocity = sgd(chunks, velocity, grads, lr)
        return chunks, velocity, lax.psum(value, AXIS)
    return step


def fsdp_gathered_bytes(chunks, n):
    """The largest layer all-gathered during the step (one device's chunk times ``n``)."""
    return max(np.asarray(c).nbytes // np.shape(c)[0] * n for c in chunks)


# ---- 3. tensor parallel ----------------------------------------------------------------
def tp_shard(params, n):
    """Per device: a block of w1's columns and b1, the matching rows of w2; b2 copied."""
    (w1, b1), (w2, b2) = params
    return [((c1, c2), (r, np.asarray(b2))) for c1, c2, r in
            zip(np.split(np.asarray(w1), n, axis=1), np.split(np.asarray(b1), n),
                np.split(np.asarray(w2), n, axis=0))]


def tp_step(params, velocity, x, y, lr):
    """Every device sees the whole batch. Its objective is the loss / P (the P copies sum to
    one loss); the psum's transpose adds the devices' cotangents, so the split weights get
    their exact gradient, and the copied b2 sums its P partial gradients."""
    def local_loss(p):
        (w1, b1), (w2, b2) = p
        h = ft.nn.relu(x @ w1 + b1)            # this device's hidden units: no communication
        z = lax.psum(h @ w2, AXIS) + b2        # partial logits summed over devices
        return cross_entropy(z, y)

    n = lax.axis_size(AXIS)
    value, grads = ft.value_and_grad(lambda p: local_loss(p) / n)(params)
    (g1, gb1), (g2, gb2) = grads
    grads = ((g1, gb1), (g2, lax.psum(gb2, AXIS)))
    params, velocity = sgd(params, velocity, grads, lr)
    return params, velocity, value * n


# ---- 4. two-stage pipeline ---------------------------------------------------------------
def pipe_shard(params, n=2):
    """Device s holds stage s's layer as one flat buffer. SPMD blocks share one shape, so
    the smaller stage is zero-padded to the larger one's size."""
    assert n == 2, "the pipeline has two stages"
    flats = [np.concatenate([np.ravel(w), np.ravel(b)]) for w, b in params]
    size = max(f.size for f in flats)
    return [np.pad(f, (0, size - f.size)) for f in flats]


def make_pipe_step(microbatches, sizes=SIZES):
    """GPipe forward over two stages: at tick t stage 0 runs microbatch t and stage 1 runs
    microbatch t-1 (received by ppermute at the end of tick t-1); tick 0 and the last tick
    are the bubble (one stage idle). ``grad`` of this program is the backward schedule."""
    (m1, k1), (m2, k2) = zip(sizes[:-1], sizes[1:])

    def stage0(buf, x, h, y):
        w, b = buf[:m1 * k1].reshape(m1, k1), buf[m1 * k1:m1 * k1 + k1]
        return ft.nn.relu(x @ w + b), fnp.float32(0)

    def stage1(buf, x, h, y):
        w, b = buf[:m2 * k2].reshape(m2, k2), buf[m2 * k2:m2 * k2 + k2]
        return fnp.zeros_like(h), cross_entropy(h @ w + b, y)

    def idle(buf, x, h, y):
        return fnp.zeros_like(h), fnp.float32(0)

    def local_loss(buf, xs, ys):
        first = lax.axis_index(AXIS) == 0
        h = fnp.zeros((xs.shape[1], k1), "float32")   # what stage 1 has received
        total = fnp.float32(0)
        for t in range(microbatches + 1):
            run0 = stage0 if t < microbatches else idle
            run1 = stage1 if t > 0 else idle
            out, value = lax.cond(first, run0, run1, buf, xs[min(t, microbatches - 1)], h,
                                  ys[max(t - 1, 0)])
            total = total + value
            if t < microbatches:  # stage 0's activations to stage 1, for the next tick
                h = lax.ppermute(out, AXIS, [(0, 1)])
        return total / microbatches   # the loss lives on stage 1; stage 0's objective is 0

    def step(buf, velocity, xs, ys, lr):
        value, grads = ft.value_and_grad(local_loss)(buf, xs, ys)
        buf, velocity = sgd(buf, velocity, grads, lr)
        return buf, velocity, lax.psum(value, AXIS)
    return step


# ---- running and checking ----------------------------------------------------------------
class Variant:
    """One way to parallelize the step: its devices, how it splits the state and the batch
    (``data(x, y)`` gives the per-device arguments and their pmap in_axes), its step."""

    def __init__(self, name, n, shard, step, data, transient=lambda params, n: 0):
        self.name, self.n, self.shard, self.step, self.data = name, n, shard, step, data
        self.transient = transient


def variants(n, microbatches=4):
    """The four variants on ``n`` devices (the pipeline always uses two)."""
    def batch_split(x, y, n):  # each device its slice of the batch
        return (stack_local(split_batch(x, n)), stack_local(split_batch(y, n))), 0

    def whole(x, y, n):  # every device the whole batch
        return (x, y), None

    def microbatched(x, y, n):
        return (np.asarray(x).reshape(microbatches, -1, x.shape[-1]),
                np.asarray(y).reshape(microbatches, -1)), None

    return [
        Variant("data parallel", n, dp_shard, dp_step, batch_split),
        Variant("FSDP (ZeRO-3)", n, fsdp_shard, make_fsdp_step(), batch_split,
                transient=fsdp_gathered_bytes),
        Variant("tensor parallel", n, tp_shard, tp_step, whole),
        Variant("pipeline (2 stages)", 2, pipe_shard, make_pipe_step(microbatches),
                microbatched),
    ]


def reference_run(params, batches, lr, timing_repeats=10):
    """The single-device steps: ``[(params, velocity, loss) after each batch]``, and the
    median time of a step (the first call, which compiles, left out)."""
    step = ft.jit(train_step)
    velocity = ft.tree_util.tree_map(np.zeros_like, params)
    out, times = [], []
    for x, y in batches:
        t0 = time.perf_counter()
        params, velocity, value = ft.block_until_ready(step(params, velocity, x, y, lr))
        times.append(time.perf_counter() - t0)
        out.append((params, velocity, value))
    for _ in range(timing_repeats):  # the last step again: timing only
        t0 = time.perf_counter()
        ft.block_until_ready(step(params, velocity, x, y, lr))
        times.append(time.perf_counter() - t0)
    return out, float(np.median(times[1:]))


def max_abs_diff(a, b):
    return max(float(np.max(np.abs(np.asarray(u, "float64") - np.asarray(v, "float64"))))
               for u, v in zip(ft.tree_util.tree_leaves(a), ft.tree_util.tree_leaves(b)))


def global_max(value):
    """The maximum of a number over every process (a pmax over all devices)."""
    local = np.full(ft.local_device_count(), value, dtype="float32")
    return float(np.asarray(ft.pmap(lambda v: lax.pmax(v, AXIS), AXIS)(local))[0])


def run_variant(v, params0, batches, lr, reference, timing_repeats=10):
    """Train ``v`` over ``batches``, checking each step's params, momentum and loss against
    ``reference``; the differences are maxima over every process. Memory is measured on the
    state the step returned: this process's blocks only."""
    zeros = ft.tree_util.tree_map(np.zeros_like, params0)
    state = (stack_local(v.shard(params0, v.n)), stack_local(v.shard(zeros, v.n)))
    pstep, dparams, dloss, times = None, 0.0, 0.0, []
    for (x, y), (ref_params, ref_velocity, ref_loss) in zip(batches, reference):
        (xd, yd), axis = v.data(x, y, v.n)
        pstep = pstep or ft.pmap(v.step, AXIS, in_axes=(0, 0, axis, axis, None))
        t0 = time.perf_counter()
        *state, value = ft.block_until_ready(pstep(*state, xd, yd, lr))
        times.append(time.perf_counter() - t0)
        want = [stack_local(v.shard(ref_params, v.n)), stack_local(v.shard(ref_velocity, v.n))]
        dparams = max(dparams, max_abs_diff(state, want))
        dloss = max(dloss, float(np.max(np.abs(np.asarray(value) - float(ref_loss)))))
    for _ in range(timing_repeats):  # the last step again, its result dropped: timing only
        t0 = time.perf_counter()
        ft.block_until_ready(pstep(*state, xd, yd, lr))
        times.append(time.perf_counter() - t0)
    held, local = nbytes(state), len(local_indices(v.n))
    return dict(name=v.name, n=v.n, dparams=global_max(dparams), dloss=global_max(dloss),
                per_device=held // local, per_process=held,
                gathered=v.transient(state[0], v.n), step_ms=1e3 * np.median(times[1:]),
                program=lambda: ft.make_jaxpr(pstep)(*state, xd, yd, lr))


def collectives(rows):
    """How often each collective appears in each variant's step program (forward and
    backward), read off its jaxpr."""
    names = ("psum", "all_gather", "psum_scatter", "ppermute")
    counts = {}
    for r in rows:
        text = str(r["program"]())
        counts[r["name"]] = {c: len(re.findall(rf"= {c}\[", text)) for c in names}
    return counts


def run(n_devices, steps=5, batch_size=64, microbatches=4, lr=0.05, seed=0):
    """Run every variant for ``steps`` steps on ``n_devices`` (the process's or the MPI
    job's devices). Returns the table's rows, a single-device row first."""
    params = [(np.asarray(w), np.asarray(b)) for w, b in init_params(ft.random.key(seed))]
    batches = train_batches(batch_size, steps, seed)
    lr = np.float32(lr)
    reference, ref_s = reference_run(params, batches, lr)
    whole = nbytes((params, params))
    single = dict(name="single device", n=1, dparams=0.0, dloss=0.0, per_device=whole,
                  per_process=whole, gathered=0, step_ms=1e3 * ref_s)
    return [single] + [run_variant(v, params, batches, lr, reference)
                       for v in variants(n_devices, microbatches)]


def table(rows):
    """The rows as text: agreement, what a device and this process hold, time."""
    whole = rows[0]["per_device"]
    lines = [f"{'variant':<20}{'devices':>8}{'max|dparams|':>13}{'max|dloss|':>11}"
             f"{'held/device':>14}{'':>6}{'+gathered':>11}{'held/process':>14}{'ms/step':>9}"]
    for r in rows:
        lines.append(
            f"{r['name']:<20}{r['n']:>8}{r['dparams']:>13.1e}{r['dloss']:>11.1e}"
            f"{r['per_device']:>12,} B{r['per_device'] / whole:>6.0%}{r['gathered']:>9,} B"
            f"{r['per_process']:>12,} B{r['step_ms']:>9.2f}")
    return "\n".join(lines)


def train_batches(batch_size, steps, seed):
    """``steps`` batches of the digits (float32 pixels in [0, 1], int labels)."""
    images, labels = load_digits()
    x = (images / 16.0).astype("float32")
    order = np.random.default_rng(seed).permutation(len(x))[:batch_size * steps]
    return [(x[i], labels[i]) for i in order.reshape(steps, batch_size)]


def setup_devices(n):
    """One device per process under mpiexec, else ``n`` CPU devices in this process (before
    anything uses the devices)."""
    try:
        from mpi4py import MPI
        several = MPI.COMM_WORLD.Get_size() > 1
    except ImportError:
        several = False
    ft.config.update("num_cpu_devices", 1 if several else n)
    ft.distributed.initialize()


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m functrans.demo --distributed",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, default=4,
                        help="CPU devices in one process (default 4); under mpiexec each "
                             "process has one")
    parser.add_argument("--steps", type=int, default=5, help="training steps per variant")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--microbatches", type=int, default=4,
                        help="pipeline microbatches per batch")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.steps < 2:
        parser.error("--steps must be at least 2 (the first step compiles, the others are "
                     "timed)")
    return args


def main(argv=None):
    """The ``--distributed`` demo; returns the table's rows."""
    args = parse_args(argv)
    setup_devices(args.devices)
    # Tiny matrices: BLAS threads only add wake-up latency next to the device threads.
    from functrans.transforms.lowering.blas import set_blas_threads
    set_blas_threads(1)
    rank, n = ft.process_index(), ft.device_count()
    if args.batch_size % (n * args.microbatches) or SIZES[1] % n or n < 2:
        raise SystemExit(f"needs at least 2 devices; the batch ({args.batch_size}) must split "
                         f"over {n} devices and {args.microbatches} microbatches, the "
                         f"hidden layer ({SIZES[1]}) over the devices")
    rows = run(n, args.steps, args.batch_size, args.microbatches, args.lr, args.seed)
    counts = collectives(rows[1:])
    worst = max(max(r["dparams"], r["dloss"]) for r in rows)
    if rank == 0:
        where = (f"{ft.process_count()} processes x {ft.local_device_count()} device"
                 if ft.process_count() > 1 else f"1 process, {n} CPU devices")
        fsdp = counts["FSDP (ZeRO-3)"]
        text = [
            f"MLP {'-'.join(map(str, SIZES))} on the digits, SGD with momentum, batch "
            f"{args.batch_size}, {args.steps} steps per variant; {where}",
            f"every step checked against the single-device step: params, momentum and loss "
            f"agree to {TOLERANCE:g} (float32, the parts summed in another order)",
            "held = params + momentum (float32) between steps; +gathered = the weights FSDP "
            "gathers during one (its largest layer; activations and gradients not counted)",
            table(rows),
            f"FSDP step program: {fsdp['all_gather']} all_gather (each layer before its use, "
            f"again in the backward pass: rematerialized), {fsdp['psum_scatter']} psum_scatter "
            f"(the layers' gradients); pipeline: {counts['pipeline (2 stages)']['ppermute']} "
            f"ppermute (stage 0 to 1 forward, 1 to 0 backward)",
            "(a model this small is all synchronization: these runs show the splits are exact "
            "and what each device holds, not speed-ups)"]
        sys.stdout.write("\n".join(text) + "\n")
        sys.stdout.flush()
    status = "agree" if worst <= TOLERANCE else "DIFFER"
    # One write per line: under mpiexec the processes share one output pipe.
    sys.stdout.write(f"process {rank} of {ft.process_count()}: all variants {status} with "
                     f"the single-device step (max |difference| {worst:.1e})\n")
    sys.stdout.flush()
    if worst > TOLERANCE:
        raise SystemExit(1)
    return rows


if __name__ == "__main__":
    main()
