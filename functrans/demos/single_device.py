"""The functrans demo: ``python -m functrans.demo`` trains a digit classifier end to end.

A 64-128-10 MLP (:mod:`functrans.demos.mlp`) written with ``functrans.numpy`` learns the UCI
handwritten digits shipped in ``functrans/data`` (1,797 8x8 images; no download). Along the
way it shows:

* ``jit(value_and_grad)``: the training step, timed against the same step run eagerly;
* ``vmap(grad)``: per-example gradients, their norm distribution, and a DP-SGD-style run
  (clip each example's gradient, add Gaussian noise);
* ``pmap``: the data-parallel step over CPU devices (``lax.pmean`` of the gradients),
  checked against the single-device step;
* a progress bar (tqdm), held-out accuracy, and a plot of the curves (matplotlib, Agg).

tqdm and matplotlib come with ``pip install -e ".[demo]"``; they are imported by :func:`main`
only, never by the library. ``--quick`` trains for fewer epochs (for tests and impatient
people).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import tempfile
import time

import numpy as np

import functrans as ft
import functrans.numpy as fnp
from functrans.data import load_digits, train_test_split
from functrans.demos.mlp import (SIZES, accuracy, dp_step, gaussian_like, global_norms,
                                 init_params, loss, parallel_step, train_step)


# ---- helpers -----------------------------------------------------------------------------
def batches(n, batch_size, rng):
    """Shuffled index batches of exactly ``batch_size`` (the rest of an epoch is dropped, so
    every step has one shape and one compiled kernel, and splits evenly over devices)."""
    order = rng.permutation(n)
    return [order[i:i + batch_size] for i in range(0, n - batch_size + 1, batch_size)]


def timed(fn, *args, repeat=1):
    """Median wall time of ``fn(*args)`` in seconds (results blocked on)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        ft.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def max_diff(a, b):
    return max(float(np.max(np.abs(np.asarray(u) - np.asarray(v))))
               for u, v in zip(ft.tree_util.tree_leaves(a), ft.tree_util.tree_leaves(b)))


def percentiles(values, qs=(10, 50, 90, 99)):
    values = np.asarray(values)
    return "  ".join(f"p{q} {np.percentile(values, q):.3f}" for q in qs) + \
        f"  max {values.max():.3f}"


def save_plot(path, history, norms_start, norms_end, clip):
    import matplotlib
    matplotlib.use("Agg")  # files only: works without a display
    import matplotlib.pyplot as plt

    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(14, 4))
    steps = np.arange(1, len(history["step_loss"]) + 1)
    ax1.plot(steps, history["step_loss"], lw=0.6, alpha=0.5, label="train (per step)")
    per_epoch = len(steps) / max(len(history["test_loss"]), 1)
    epoch_steps = per_epoch * np.arange(1, len(history["test_loss"]) + 1)
    ax1.plot(epoch_steps, history["test_loss"], "o-", ms=3, label="test (per epoch)")
    ax1.set_yscale("log"), ax1.set_xlabel("step"), ax1.set_ylabel("cross-entropy")
    ax1.set_title("loss"), ax1.legend()
    epochs = np.arange(1, len(history["test_acc"]) + 1)
    ax2.plot(epochs, history["train_acc"], "o-", ms=3, label="train")
    ax2.plot(epochs, history["test_acc"], "o-", ms=3, label="test")
    if history.get("dp_test_acc"):
        ax2.plot(np.arange(1, len(history["dp_test_acc"]) + 1), history["dp_test_acc"], "s--",
                 ms=3, label="test, DP-SGD")
    ax2.set_xlabel("epoch"), ax2.set_ylabel("accuracy"), ax2.set_title("accuracy")
    ax2.set_ylim(min(0.8, min(history["test_acc"])), 1.0), ax2.legend()
    bins = np.logspace(np.log10(max(min(norms_start.min(), norms_end.min()), 1e-6)),
                       np.log10(max(norms_start.max(), norms_end.max())), 40)
    ax3.hist(norms_start, bins=bins, alpha=0.6, label="at initialization")
    ax3.hist(norms_end, bins=bins, alpha=0.6, label="after training")
    ax3.axvline(clip, color="k", ls="--", lw=1, label=f"DP-SGD clip {clip:g}")
    ax3.set_xscale("log"), ax3.set_xlabel("per-example gradient norm")
    ax3.set_title("per-example gradients (vmap)"), ax3.legend()
    fig.suptitle("functrans: MLP 64-128-10 on the UCI handwritten digits")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---- the run -----------------------------------------------------------------------------
def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m functrans.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=None,
                        help="training epochs (default 30; 8 with --quick)")
    parser.add_argument("--devices", type=int, default=None,
                        help="CPU devices for the data-parallel (pmap) part (default: as "
                             "many as there are cores, at least 2, dividing the batch)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--quick", action="store_true",
                        help="8 epochs and no DP-SGD run (~10-20 s)")
    parser.add_argument("--plot", type=pathlib.Path, default=None,
                        help="where to save the plot (default: functrans_demo.png in the "
                             "system's temporary directory)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--distributed", action="store_true",
                        help="instead: data-parallel, FSDP, tensor-parallel and pipeline "
                             "training checked against one device "
                             "(functrans.demos.distributed; its options: --distributed --help)")
    args = parser.parse_args(argv)
    if args.epochs is None:
        args.epochs = 8 if args.quick else 30
    if args.devices is None:  # the most devices (at least 2) that split a batch evenly
        args.devices = max(d for d in range(1, max(2, ft.local_device_count()) + 1)
                           if args.batch_size % d == 0)
    if args.plot is None:
        args.plot = pathlib.Path(tempfile.gettempdir()) / "functrans_demo.png"
    if args.epochs < 1 or args.devices < 1 or args.batch_size < 1:
        parser.error("--epochs, --devices and --batch-size must be positive")
    if args.batch_size % args.devices:
        parser.error(f"--batch-size {args.batch_size} must split evenly over "
                     f"--devices {args.devices}")
    return args


def main(argv=None) -> float:
    """Run the demo; returns the final test accuracy."""
    from tqdm.auto import tqdm

    args = parse_args(argv)
    start = time.perf_counter()
    # These matrices are tiny (64x128): BLAS threads cannot speed them up, and on a busy
    # machine waiting for them to wake costs more than the product (30 ms instead of 0.2 ms
    # per step on 2 shared cores). The demo is the whole process: one BLAS thread for it.
    from functrans.transforms.lowering.blas import set_blas_threads
    set_blas_threads(1)
    images, labels = load_digits()
    x = (images / 16.0).astype("float32")
    x_train, x_test, y_train, y_test = train_test_split(x, labels, test_fraction=0.2,
                                                        seed=args.seed)
    print(f"UCI digits: {len(x_train)} training and {len(x_test)} test images, 8x8 "
          f"(bundled in functrans/data)")
    print(f"model: MLP {'-'.join(map(str, SIZES))}, ReLU, cross-entropy; SGD with momentum, "
          f"lr {args.lr} (cosine decay), batch {args.batch_size}")
    key = ft.random.key(args.seed)
    init_key, dp_key = ft.random.split(key)
    params0 = init_params(init_key)
    zeros = ft.tree_util.tree_map(fnp.zeros_like, params0)
    rng = np.random.default_rng(args.seed)
    lr = np.float32(args.lr)

    # 1. One step, eager vs compiled. jit traces once, optimizes and compiles a Numba kernel
    # (cached on disk, so the next run skips the compile). The first call returns after
    # tracing: it runs on the interpreter while the kernel compiles in the background, and
    # block_until_ready on its result waits for the kernel.
    step = ft.jit(train_step)
    xb, yb = x_train[:args.batch_size], y_train[:args.batch_size]
    t0 = time.perf_counter()
    first = step(params0, zeros, xb, yb, lr)
    first_s = time.perf_counter() - t0
    ft.block_until_ready(first)
    compile_s = time.perf_counter() - t0
    jit_s = timed(step, params0, zeros, xb, yb, lr, repeat=50)
    eager_s = timed(train_step, params0, zeros, xb, yb, lr, repeat=3)
    print(f"\n[jit] one value_and_grad + SGD step, batch {args.batch_size}: eager "
          f"{eager_s * 1e3:.1f} ms, jit {jit_s * 1e3:.2f} ms ({eager_s / jit_s:.0f}x faster); "
          f"first call {first_s:.2f} s, kernel ready after {compile_s:.2f} s (trace, "
          "optimize, compile; or load from the disk cache)")

    # 2. Train.
    history = {k: [] for k in ("step_loss", "train_acc", "test_acc", "test_loss")}
    params, velocity = params0, zeros
    steps_per_epoch = len(x_train) // args.batch_size
    total_steps = args.epochs * steps_per_epoch
    # Cosine decay to 0: the last epochs settle instead of bouncing between minima.
    schedule = (lr * 0.5 * (1 + np.cos(np.pi * np.arange(total_steps) / total_steps))
                ).astype("float32")
    t0 = time.perf_counter()
    with tqdm(total=total_steps, desc="training", unit="step",
              leave=False) as bar:
        for epoch in range(args.epochs):
            for idx in batches(len(x_train), args.batch_size, rng):
                params, velocity, value = step(params, velocity, x_train[idx], y_train[idx],
                                               schedule[len(history["step_loss"])])
                history["step_loss"].append(float(value))
                bar.update()
            history["train_acc"].append(accuracy(params, x_train, y_train))
            history["test_acc"].append(accuracy(params, x_test, y_test))
            history["test_loss"].append(float(loss(params, x_test, y_test)))
            bar.set_postfix(epoch=epoch + 1, loss=f"{history['step_loss'][-1]:.3f}",
                            test_acc=f"{history['test_acc'][-1]:.3f}")
    train_s = time.perf_counter() - t0
    print(f"[train] {args.epochs} epochs x {steps_per_epoch} steps in {train_s:.2f} s "
          f"({train_s / total_steps * 1e3:.2f} ms/step incl. Python); "
          f"test accuracy by epoch: "
          + " ".join(f"{a:.3f}" for a in history["test_acc"][:3]) + " ... "
          + f"{history['test_acc'][-1]:.3f}")

    # 3. Per-example gradients: vmap(grad) gives one gradient per image in one pass.
    per_example_norms = ft.jit(
        lambda p, x, y: global_norms(ft.vmap(ft.grad(loss), in_axes=(None, 0, 0))(
            p, x[:, None], y[:, None])))
    norms_start = np.asarray(per_example_norms(params0, x_train, y_train))
    norms_end = np.asarray(per_example_norms(params, x_train, y_train))
    print(f"\n[vmap] per-example gradient norms over the {len(x_train)} training images")
    print(f"  at initialization: {percentiles(norms_start)}")
    print(f"  after training:    {percentiles(norms_end)}")
    print("  (most examples are fit; a few hard ones dominate the gradient: what DP-SGD's "
          "clipping bounds)")

    # DP-SGD: clip every example's gradient to `clip`, add noise, train from scratch.
    # Clipped gradients are short (norm <= 1 against ~6 unclipped at the start), so DP-SGD
    # takes a larger learning rate.
    clip, noise, dp_lr = 1.0, 1.0, np.float32(4 * args.lr)
    history["dp_test_acc"] = []
    if args.quick:  # one compile fewer
        print(f"  with clip {clip}, DP-SGD would clip {np.mean(norms_start > clip):.0%} of "
              f"them at initialization (the DP-SGD run is skipped with --quick)")
    else:
        dp = ft.jit(dp_step)
        dp_epochs = max(1, args.epochs // 2)
        dp_params, dp_velocity = params0, zeros
        clipped = []
        for _ in tqdm(range(dp_epochs), desc="DP-SGD", unit="epoch", leave=False):
            for idx in batches(len(x_train), args.batch_size, rng):
                dp_key, k = ft.random.split(dp_key)
                noise_tree = gaussian_like(k, params0, noise * clip)
                dp_params, dp_velocity, norms = dp(dp_params, dp_velocity, x_train[idx],
                                                   y_train[idx], noise_tree, dp_lr,
                                                   np.float32(clip))
                clipped.append(float(np.mean(np.asarray(norms) > clip)))
            history["dp_test_acc"].append(accuracy(dp_params, x_test, y_test))
        print(f"  DP-SGD (clip {clip}, noise multiplier {noise}, no privacy accounting), "
              f"{dp_epochs} epochs: {np.mean(clipped):.0%} of per-example gradients clipped, "
              f"test accuracy {history['dp_test_acc'][-1]:.3f}")

    # 4. Data parallel: the batch split over devices, gradients averaged with pmean.
    n = args.devices
    ft.config.update("num_cpu_devices", n)  # logical CPU devices, one thread each
    pstep = ft.pmap(parallel_step, axis_name="devices", in_axes=(None, None, 0, 0, None))
    xs, ys = xb.reshape(n, -1, xb.shape[-1]), yb.reshape(n, -1)
    p_compile_s = timed(pstep, params0, zeros, xs, ys, lr)
    p_params, p_velocity, p_value = pstep(params0, zeros, xs, ys, lr)
    s_params, s_velocity, s_value = step(params0, zeros, xb, yb, lr)
    # Every device holds the same replicated result; compare device 0's with one device's.
    diff = max_diff(ft.tree_util.tree_map(lambda a: a[0], (p_params, p_velocity, p_value)),
                    (s_params, s_velocity, s_value))
    p_s = timed(pstep, params0, zeros, xs, ys, lr, repeat=20)
    print(f"\n[pmap] data-parallel step on {n} CPU devices ({len(ft.devices())} available), "
          f"{args.batch_size // n} examples each, pmean of the gradients:")
    print(f"  equals the single-device step: max |difference| {diff:.1e} over params, "
          f"momentum and loss (float32 rounding)")
    print(f"  {p_s * 1e3:.2f} ms/step vs {jit_s * 1e3:.2f} ms on one device (a batch this "
          f"small is dominated by synchronization; first call {p_compile_s:.2f} s)")
    if diff > 1e-5:
        raise SystemExit(f"data-parallel step differs from the single-device step by {diff}")

    # 5. Results.
    acc = history["test_acc"][-1]
    args.plot.parent.mkdir(parents=True, exist_ok=True)
    save_plot(args.plot, history, norms_start, norms_end, clip)
    correct = int(round(acc * len(x_test)))
    print(f"\nplot: {os.fspath(args.plot)}")
    print(f"total time: {time.perf_counter() - start:.1f} s")
    print(f"test accuracy: {acc:.4f} ({correct}/{len(x_test)} held-out images)")
    return acc
