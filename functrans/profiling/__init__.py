"""JAX's profiler on functrans (``jax.profiler``; :mod:`functrans.profiler` is the face):
traces written as Chrome trace-event JSON (``trace.py``) and device memory profiles in pprof's
format (``memory.py``)."""
