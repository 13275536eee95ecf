"""Let waiting worker threads sleep: no multi-millisecond stalls when other processes are busy.

Parallel loops run on Numba's OpenMP thread pool (GNU libgomp). By default libgomp's idle
threads, and a thread waiting at the barrier that ends a parallel loop, spin for about 300,000
iterations (a few milliseconds) before sleeping. On an idle machine a parallel loop's other
thread arrives within microseconds, so the spin costs nothing; but when another process keeps
a core busy, the spinning thread holds its core while the thread it waits for has none, until
the scheduler's time slice ends. On the 2-core VM this project is measured on, with two other
busy processes, a jitted ``a + b`` of 400k float32 took 0.34 ms at the median but 4.4 ms at the
90th percentile (12 ms at worst), and an MLP training step's 90th percentile was 64 ms against
a 2.6 ms median; with ``OMP_WAIT_POLICY=PASSIVE`` (waiting threads sleep at once) the same
runs' 90th percentiles were 0.46 ms and 2.6 ms, and the idle machine's medians did not move
(2.5 ms for the MLP step, 7.0-7.3 ms for a CNN gradient, either way). So functrans sets
``OMP_WAIT_POLICY=PASSIVE`` at import unless it is set already; libgomp reads it when it starts,
which is when the first parallel loop runs.
"""
from __future__ import annotations

import os


def sleep_while_waiting() -> None:
    """Ask OpenMP's threads to sleep while they wait (unless the user chose a policy).

    >>> sleep_while_waiting()
    >>> os.environ["OMP_WAIT_POLICY"]   # (functrans's import already set it)
    'PASSIVE'
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
