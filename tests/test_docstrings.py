"""Every docstring example in the package runs and prints what it shows.

Examples run in their module's namespace plus ``ft``, ``fnp``, ``lax`` and ``np`` (the names
the docs use throughout, ``random`` for ``ft.random`` and ``P`` for ``PartitionSpec``), with
the default configuration (x64 on) and 2 CPU devices."""
import doctest
import importlib
import pkgutil

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax


def _modules():
    names = []
    for pkg in (ft, ft.transforms):
        names += [m.name for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")
                  if not m.name.endswith(".demo")]
    return sorted(set(names))


def _doctests(module_name):
    module = importlib.import_module(module_name)
    tests = doctest.DocTestFinder(exclude_empty=True).find(module)
    return [t for t in tests if t.examples]


MODULES = [m for m in _modules() if _doctests(m)]


def test_examples_are_found():
    assert len(MODULES) > 40 and sum(len(_doctests(m)) for m in MODULES) > 400


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples(module_name):
    from functrans.core import trace
    runner = doctest.DocTestRunner(
        optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS, verbose=False)
    module = importlib.import_module(module_name)
    report = []
    # Primitives an example defines (trace.py's own "sin") are the example's: they must not
    # stay registered for the primitive-coverage tests that run later in this process.
    registered = list(trace._PRIMITIVES)
    for test in _doctests(module_name):
        globs = {"ft": ft, "fnp": fnp, "lax": lax, "np": np, "random": ft.random,
                 "P": ft.sharding.P}
        if test.name.startswith(("functrans.core.array.Array.", "functrans.core.trace.Tracer.")):
            test.globs = {**vars(module), **globs, **vars(fnp)}  # methods reuse fnp's docs
        else:
            test.globs = {**globs, **vars(module)}
        try:
            with ft.config.override(enable_x64=True, num_cpu_devices=2):
                runner.run(test, out=report.append)
        finally:
            trace._PRIMITIVES[:] = registered
    failed, attempted = runner.summarize(verbose=False)
    assert attempted > 0
    assert failed == 0, "".join(report)
