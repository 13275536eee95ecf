"""Importing functrans keeps freed memory for reuse (``functrans/core/malloc.py``): a loop
whose step allocates and frees many medium arrays stops page-faulting after its first step.
Each case runs in a fresh interpreter, since the allocator's settings are process-wide and
the pattern depends on the heap's history."""
import json
import os
import subprocess
import sys

import pytest

if not sys.platform.startswith("linux"):
    pytest.skip("glibc's malloc settings: Linux only", allow_module_level=True)

# Ten 1 MB temporaries alive at once per step, as a gradient's residuals are: glibc's adaptive
# thresholds follow the largest single block freed, so by default it trims the ~10 MB freed
# at the top of the heap after every step and faults the pages in again at the next.
_STEPS = """
import json, resource, sys
if sys.argv[1] == "import":
    import functrans
import numpy as np
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
counts = []
for _ in range(5):
    before = faults()
    arrays = [np.ones(1 << 17) for _ in range(10)]
    del arrays
    counts.append(faults() - before)
print(json.dumps(counts))
"""


def _fault_counts(mode, **env):
    out = subprocess.run([sys.executable, "-c", _STEPS, mode], capture_output=True, text=True,
                         env={**os.environ, **env}, timeout=120, check=True).stdout
    return json.loads(out)


def test_a_step_that_frees_many_medium_arrays_stops_faulting_after_functrans_is_imported():
    untouched = _fault_counts("numpy only")
    assert min(untouched[1:]) > 2000  # the storm this guards against: ~2,500 pages each step
    tuned = _fault_counts("import")
    assert max(tuned[1:]) < 50, tuned  # pages come back only on the first step


def test_the_tuning_can_be_turned_off_and_never_overrides_the_users_malloc_settings():
    assert min(_fault_counts("import", FUNCTRANS_MALLOC_TUNING="0")[1:]) > 2000
    # The user's own (here: glibc's default) trim threshold is respected.
    assert min(_fault_counts("import", MALLOC_TRIM_THRESHOLD_="131072")[1:]) > 2000


@pytest.mark.parametrize("given, expected", [
    ({}, "PASSIVE 1000"),
    ({"OMP_WAIT_POLICY": "active"}, "active 1000"),
    ({"GOMP_SPINCOUNT": "0"}, "PASSIVE 0")])
def test_openmp_threads_spin_briefly_then_sleep_unless_the_user_chose(given, expected):
    # core/thread_waits.py: functrans sets OMP_WAIT_POLICY and GOMP_SPINCOUNT before the
    # first parallel loop starts libgomp, and leaves a user's own settings alone; the
    # parallel loop and a product cut on the pool must run.
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(given)
    code = ("import os, numpy as np, functrans as ft, functrans.numpy as fnp\n"
            "x = fnp.ones(1 << 19, 'float32')\n"
            "assert float(ft.jit(lambda a: fnp.sum(a * 2))(x).block_until_ready()) == 2 ** 20\n"
            "m = np.ones((256, 256), 'float32')\n"
            "assert (np.asarray(ft.jit(lambda a: a @ a)(m)) == 256).all()\n"
            "print(os.environ['OMP_WAIT_POLICY'], os.environ['GOMP_SPINCOUNT'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, check=True).stdout
    assert out.strip() == expected
