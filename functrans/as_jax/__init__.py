"""Run JAX programs on functrans: ``import jax`` resolves to functrans.

``install()`` (or ``python -m functrans.as_jax script.py [args]``) makes ``import jax`` and
every ``jax.*`` module functrans provides resolve to functrans's own modules for the rest of
the process, whether or not JAX is installed: ``jax.numpy`` is :mod:`functrans.numpy`,
``jax.lax`` is :mod:`functrans.lax`, and so on (:data:`MODULES` lists the exceptions).
Real ``jax`` and ``jaxlib`` are never imported. A module or name functrans does not provide
fails as a missing one would (``ModuleNotFoundError``, ``AttributeError``), naming it.

As in JAX, 64-bit values are off unless ``JAX_ENABLE_X64`` is set (functrans's own default is
NumPy's: on)::

    >>> import functrans.as_jax
    >>> functrans.as_jax.JAX_API_VERSION
    '0.10.2'
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import re
import sys

__all__ = ["install", "installed", "JAX_API_VERSION", "MODULES"]

JAX_API_VERSION = "0.10.2"
"""The JAX release whose public API and semantics functrans follows (``jax.__version__``)."""

MODULES = {
    "jax": "functrans.as_jax.jax_root",
    "jax.core": "functrans.as_jax.jax_core",
    "jax.version": "functrans.as_jax.jax_version",
    # JAX's internals that libraries import (chex's restrict_backends replaces the compile
    # function: functrans's jit calls it for every compile); the others are jax_src's modules.
    "jax._src.compiler": "functrans.core.compiler",
    "jax._src.flatten_util": "functrans.flatten_util",
}
"""``jax`` modules that are not ``functrans`` modules of the same path."""

# Top-level functrans modules that are JAX's public modules of the same name; the others
# (core, primitives, transforms, ...) are functrans internals, not ``jax.<name>``.
PUBLIC = frozenset({
    "numpy", "lax", "random", "nn", "scipy", "tree_util", "tree", "flatten_util", "typing",
    "dtypes", "errors", "test_util", "ad_checkpoint", "stages", "sharding", "debug", "export",
    "distributed", "custom_batching", "custom_derivatives", "example_libraries",
    "experimental", "extend", "interpreters", "api_util", "profiler", "monitoring",
    "ref", "ops", "image",
})


def target(name: str) -> str | None:
    """The functrans module that ``jax`` module ``name`` is, or None if there is none.

        >>> target("jax.numpy.linalg"), target("jax._src.traceback_util"), target("jax.foo")
        ('functrans.numpy.linalg', 'functrans.as_jax.jax_src.traceback_util', None)
    """
    if name in MODULES:
        return MODULES[name]
    parts = name.split(".")
    if parts[:2] == ["jax", "_src"]:
        return ".".join(["functrans.as_jax.jax_src"] + parts[2:])
    if parts[0] != "jax" or len(parts) < 2 or parts[1] not in PUBLIC:
        return None
    return "functrans." + ".".join(parts[1:])


# JAX's XLA-only modules: XLA's client, compiler, lowering and kernel languages (functrans
# compiles with Numba, not XLA); a module under one of them is XLA-only too.
XLA_ONLY = frozenset({
    "jax.lib", "jax.ffi", "jax.cloud_tpu_init", "jax.collect_profile",
    "jax.interpreters.pxla", "jax.extend.mlir",
    "jax.extend.ffi", "jax.extend.ifrt_programs", "jax.experimental.jax2tf",
    "jax.experimental.pallas", "jax.experimental.mosaic", "jax.experimental.triton",
    "jax.experimental.serialize_executable", "jax.experimental.compilation_cache",
    "jax.experimental.custom_partitioning", "jax.experimental.topologies",
    "jax.experimental.colocated_python", "jax.experimental.buffer_callback",
    "jax.experimental.compute_on", "jax.experimental.roofline", "jax.experimental.rnn",
})
# JAX's public modules that are not XLA's: where functrans lacks one, it is still to come.
JAX_PUBLIC_MODULES = frozenset({f"jax.{m}" for m in PUBLIC} | {
    "jax.dlpack", "jax.memory", "jax.experimental.ode", "jax.experimental.jet",
    "jax.experimental.shard_map", "jax.experimental.pjit", "jax.experimental.mesh_utils",
    "jax.experimental.key_reuse", "jax.experimental.array_api", "jax.experimental.shard_alike",
    "jax.experimental.enable_x64", "jax.experimental.source_mapper", "jax.scipy.cluster",
    "jax.scipy.fft", "jax.scipy.integrate", "jax.scipy.interpolate", "jax.scipy.ndimage",
    "jax.scipy.optimize", "jax.scipy.signal", "jax.scipy.spatial", "jax.scipy.special",
    "jax.scipy.linalg", "jax.scipy.sparse", "jax.extend.random", "jax.extend.sharding",
})


def missing_message(name: str) -> str:
    """Why ``import name`` fails: JAX's internals, an XLA-only API, public JAX API functrans
    does not provide yet, or no JAX module at all.

        >>> print(missing_message("jax.lib.xla_client"))
        No module named 'jax.lib.xla_client': not provided: XLA-only (functrans runs without XLA)
        >>> print(missing_message("jax.dlpack"))
        No module named 'jax.dlpack': jax.dlpack is public JAX API that functrans does not provide yet
    """
    head = f"No module named {name!r}: "
    parts = name.split(".")
    if any(".".join(parts[:i]) in XLA_ONLY for i in range(2, len(parts) + 1)):
        return head + "not provided: XLA-only (functrans runs without XLA)"
    if any(p.startswith("_") for p in parts[1:]):
        return head + ("JAX's internals (jax._src) are not provided, except the few modules "
                       "libraries import")
    if name in JAX_PUBLIC_MODULES:
        return head + f"{name} is public JAX API that functrans does not provide yet"
    return head + "functrans provides no such JAX module"


class _Alias(importlib.abc.Loader):
    """Loads ``jax.X`` as the functrans module it names: the same module object."""

    def __init__(self, module_name):
        self.module_name = module_name
        self.own_spec = None

    def create_module(self, spec):
        module = importlib.import_module(self.module_name)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module):
        # The import system stamped the jax spec on the module: it keeps its own identity.
        module.__spec__ = self.own_spec


class _Finder(importlib.abc.MetaPathFinder):
    """Answers for ``jax``, ``jax.*`` and ``jaxlib`` before any installed package can."""

    def find_spec(self, fullname, path=None, target_module=None):
        root = fullname.partition(".")[0]
        if root == "jaxlib":
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: under functrans.as_jax, JAX runs on "
                "functrans, which never imports jaxlib (XLA)", name=fullname)
        if root != "jax":
            return None
        module_name = target(fullname)
        found = None
        if module_name is not None:
            try:
                found = importlib.util.find_spec(module_name)
            except ModuleNotFoundError:  # its parent is missing
                found = None
        if found is None:
            raise ModuleNotFoundError(missing_message(fullname), name=fullname)
        return importlib.machinery.ModuleSpec(
            fullname, _Alias(module_name),
            is_package=found.submodule_search_locations is not None)


_finder = _Finder()


def installed() -> bool:
    """Whether :func:`install` has run in this process."""
    return _finder in sys.meta_path


def install() -> None:
    """Make ``import jax`` (and its submodules) resolve to functrans in this process.

    Call it before the first ``import jax``; it raises ``RuntimeError`` if real JAX is
    imported already. It also applies JAX's default of 32-bit values (``JAX_ENABLE_X64``
    turns 64-bit values on, as in JAX), JAX's clamping of out-of-range indices (NumPy's,
    functrans's default, raises), and JAX's CPU device count
    (``XLA_FLAGS=--xla_force_host_platform_device_count=N``) when the devices are first used.
    """
    if installed():
        return
    real = sys.modules.get("jax")
    if real is not None and getattr(real, "__name__", "") == "jax":
        raise RuntimeError("JAX is imported already in this process; call "
                           "functrans.as_jax.install() before the first `import jax`")
    from functrans import config
    from functrans.core import devices
    config.update("enable_x64", os.environ.get("JAX_ENABLE_X64", "").lower()
                  in ("1", "true", "yes", "on"))
    # JAX clamps out-of-range indices where NumPy (functrans's default) raises
    config.update("strict_indexing", False)
    # JAX converts a Python int operand to int32/int64 and then to the array's dtype, wrapping
    config.update("python_int_wraparound", True)
    devices.before_first_use.append(_apply_xla_device_count)
    sys.meta_path.insert(0, _finder)


_XLA_DEVICE_COUNT = re.compile(r"--xla_force_host_platform_device_count=(\d+)")


def _apply_xla_device_count() -> None:
    # JAX programs ask for N CPU devices with XLA_FLAGS (read when JAX's backend starts: at
    # the first device query or computation); FUNCTRANS_NUM_CPU_DEVICES still wins.
    found = _XLA_DEVICE_COUNT.search(os.environ.get("XLA_FLAGS", ""))
    if found and not os.environ.get("FUNCTRANS_NUM_CPU_DEVICES"):
        from functrans import config
        config.update("num_cpu_devices", int(found.group(1)))
