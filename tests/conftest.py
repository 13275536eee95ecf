"""Shared test settings: hypothesis profiles sized for CI (2 cores, minutes not hours)."""
import os

import numpy as np

# Type-check every jaxpr the suite traces or optimizes (set before functrans is imported).
os.environ.setdefault("FUNCTRANS_CHECK_JAXPRS", "1")
# jit's tests check compiled kernels, so the suite compiles before a first call returns;
# tiered jit (the default: first calls interpreted) is tested in test_jit_tiered.py.
os.environ.setdefault("FUNCTRANS_JIT_TIERED", "0")
# Native code LLVM refuses is a generator bug: fail the test instead of falling back to Numba.
os.environ.setdefault("FUNCTRANS_NATIVE_STRICT", "1")
# The cuda backend runs in numba-cuda's simulator unless a GPU run is asked for
# (FUNCTRANS_TEST_REAL_GPU=1); set before numba.cuda is first imported.
if os.environ.get("FUNCTRANS_TEST_REAL_GPU", "") in ("", "0"):
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=int(os.environ.get("FT_HYPOTHESIS_EXAMPLES", "25")), deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True)
settings.register_profile("thorough", max_examples=300, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("FT_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def rng():
    return np.random.default_rng(0)
