"""Timing helpers shared by the benchmarks: medians over repeats, a side-by-side table, and
optional JAX (only when installed; functrans itself never imports it)."""
from __future__ import annotations

import gc
import statistics
import time


def median_time(fn, *, repeat=15, number=None, warmup=2, min_time=0.2):
    """Median seconds per call of ``fn()`` (calls batched so each sample takes >= ~10 ms)."""
    for _ in range(warmup):
        fn()
    if number is None:
        t0 = time.perf_counter()
        fn()
        one = max(time.perf_counter() - t0, 1e-7)
        number = max(1, int(0.01 / one))
    samples = []
    gc.disable()
    try:
        start = time.perf_counter()
        while len(samples) < repeat or (time.perf_counter() - start < min_time and
                                        len(samples) < 10 * repeat):
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            samples.append((time.perf_counter() - t0) / number)
    finally:
        gc.enable()
    return statistics.median(samples)


def fmt(seconds: float) -> str:
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def table(title: str, rows: list[tuple[str, float | None]], baseline: str) -> str:
    """Rows of (label, seconds); ratios are relative to the ``baseline`` row."""
    base = dict(rows)[baseline]
    width = max(len(r[0]) for r in rows)
    lines = [f"\n{title}", f"  {'':{width}}  {'median':>10}  {'vs ' + baseline:>14}"]
    for label, t in rows:
        ratio = "-" if t is None or not base else f"{t / base:.2f}x"
        lines.append(f"  {label:{width}}  {fmt(t):>10}  {ratio:>14}")
    return "\n".join(lines)


def maybe_jax():
    """``(jax, jax.numpy)`` if JAX is installed, else ``(None, None)``."""
    try:
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_platforms", "cpu")
        return jax, jnp
    except Exception:
        return None, None
