"""Tests' helper: parallel regions on one thread (the oracle for results that must not depend
on the thread count)."""
from contextlib import contextmanager

import numba


@contextmanager
def one_thread():
    """Run jit's parallel regions (loops, cut products) on the calling thread alone inside.

        >>> with one_thread():
        ...     numba.get_num_threads()
        1
    """
    prev = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(prev)
