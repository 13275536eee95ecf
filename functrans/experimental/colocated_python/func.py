"""``jax.experimental.colocated_python.func``: colocated Python functions.

JAX ships the function to the hosts of the CPU devices its arguments live on and runs it
there. Every functrans device is a CPU device of the process holding it, so the hosts are
this process: the function runs here, on the calling thread (each thread's calls run in
order, calls from different threads run concurrently, as JAX's). Its contract is JAX's:
arguments and results are arrays (pytrees of them), all on one set of devices, and the
results stay on the arguments' devices; ``specialize`` supplies input specs, a function
computing output specs, or the devices a call without arguments runs on. Calls are
synchronous (JAX allows a backend to run them so); a specialized call's results are checked
against its output specs.

    >>> from functrans.experimental.colocated_python import func
    >>> add_one = func.make_callable(lambda x: x + 1)
    >>> add_one(ft.numpy.ones(2))
    Array([2., 2.], dtype=float64)

JAX's IFRT program machinery (``_compile_to_executable`` and the like) is XLA-only; reading
one of those names raises, saying so.
"""
from __future__ import annotations

import dataclasses
import functools
import threading
from typing import Any, Callable

from ...core.api_util import ShapeDtypeStruct
from ...core.array import Array
from ...core.placement import device_put
from ...core.trace import Tracer
from ... import tree_util


@dataclasses.dataclass(frozen=True)
class Specialization:
    """What a colocated function is specialized with: input specs (a treedef and its
    leaves), the function giving output specs, the output specs it gave, the devices."""

    in_specs_treedef: Any = None
    in_specs_leaves: tuple | None = None
    out_specs_fn: Callable | None = None
    out_specs_treedef: Any = None
    out_specs_leaves: tuple | None = None
    devices: tuple | None = None

    def update(self, **overrides) -> "Specialization":
        """A specialization with ``overrides`` added; each may be given once, as in JAX."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for name, value in overrides.items():
            if value is None:
                continue
            if fields[name] is not None:
                what = name.replace("_treedef", "").replace("_leaves", "")
                raise ValueError(f"{what} already specified")
            fields[name] = tuple(value) if name == "devices" else value
        return Specialization(**fields)


def _get_spec(x) -> ShapeDtypeStruct:
    """The spec of an argument or result, which must be an array (JAX's rule)."""
    if isinstance(x, Tracer):
        raise TypeError(
            "colocated_python functions run Python on their arguments' devices and cannot be "
            f"called inside a transformation (jit, vmap, grad, ...): got a tracer {x.aval}")
    if not isinstance(x, Array):
        raise ValueError("colocated_python only supports jax.Array as input and output, but "
                         f"got {type(x)}.")
    if getattr(x, "_is_key_array", False):
        # (a typed key's dtype is no NumPy dtype, which ShapeDtypeStruct requires)
        return KeySpec(x.shape, x.dtype, _sharding(x))
    return ShapeDtypeStruct(x.shape, x.dtype, sharding=_sharding(x))


@dataclasses.dataclass(frozen=True)
class KeySpec:
    """The spec of a typed PRNG key array: its shape, key dtype and sharding."""

    shape: tuple
    dtype: Any
    sharding: Any = None

    @property
    def _sharding(self):
        return self.sharding


def _sharding(x):
    # A typed key array has no sharding of its own: its key data carries it.
    s = getattr(x, "sharding", None)
    return s if s is not None else getattr(getattr(x, "_data", None), "sharding", None)


def _placed(spec):
    """The sharding a spec names, if it names devices (a bare PartitionSpec does not)."""
    s = getattr(spec, "_sharding", None)
    return s if hasattr(s, "device_set") else None


def _devices_of(leaves) -> tuple | None:
    """The device list all ``leaves`` share (in their shardings' device order)."""
    found = set()
    for x in leaves:
        s = _sharding(x)
        if s is not None:
            found.add(_device_list(s))
    if not found:
        return None
    if len(found) != 1:
        raise ValueError("All arguments must use the same device list, but got multiple "
                         f"device lists: {sorted(found, key=str)}.")
    return found.pop()


def _device_list(sharding) -> tuple:
    mesh = getattr(sharding, "mesh", None)
    if mesh is not None and getattr(mesh, "devices", None) is not None:
        return tuple(mesh.devices.flat)
    return tuple(sorted(sharding.device_set, key=lambda d: d.id))


def _check_specs(what: str, treedef, specs, expected_treedef, expected_leaves):
    """Values of ``specs`` (with ``treedef``) match the ones specialized, or a ValueError
    names the first difference."""
    if treedef != expected_treedef:
        raise ValueError(f"colocated_python: the {what} have structure {treedef}, but the "
                         f"function is specialized for {expected_treedef}")
    for i, (got, want) in enumerate(zip(specs, expected_leaves)):
        if got.shape != tuple(want.shape) or got.dtype != want.dtype:
            raise ValueError(
                f"colocated_python: {what} leaf {i} is {got.dtype}{list(got.shape)}, but the "
                f"function is specialized for {want.dtype}{list(want.shape)}")
        want_sharding = _placed(want)
        if (want_sharding is not None and got.sharding is not None
                and set(want_sharding.device_set) != set(got.sharding.device_set)):
            raise ValueError(
                f"colocated_python: {what} leaf {i} is on devices "
                f"{sorted(got.sharding.device_set, key=lambda d: d.id)}, but the function is "
                f"specialized for {sorted(want_sharding.device_set, key=lambda d: d.id)}")


def _run(fun, spec: Specialization, args, kwargs, lock, state):
    """One call: check the arguments, run ``fun``, check and place its results."""
    leaves, treedef = tree_util.tree_flatten((args, kwargs))
    in_specs = [_get_spec(x) for x in leaves]
    if not leaves and spec.devices is None:
        raise ValueError("No devices found. colocated_python function without input "
                         "arguments must be first specialized with devices.")
    devices = spec.devices if spec.devices is not None else _devices_of(leaves)
    if spec.devices is not None and leaves and set(_devices_of(leaves)) != set(devices):
        raise ValueError(f"colocated_python: the arguments are on {list(_devices_of(leaves))}"
                         f", but the function is specialized for devices {list(devices)}")
    if spec.in_specs_leaves is not None:
        _check_specs("inputs", treedef, in_specs, spec.in_specs_treedef, spec.in_specs_leaves)
    out_treedef = out_leaves = None
    if spec.out_specs_fn is not None:
        # Output specs are computed once per input signature, as JAX compiles one program
        # per signature.
        key = (treedef, tuple((s.shape, s.dtype, s.sharding) for s in in_specs))
        with lock:
            if key not in state:
                args_specs, kwargs_specs = tree_util.tree_unflatten(treedef, in_specs)
                out = spec.out_specs_fn(*args_specs, **kwargs_specs)
                o_leaves, o_tree = tree_util.tree_flatten(out)
                state[key] = (o_tree, tuple(o_leaves))
            out_treedef, out_leaves = state[key]
    elif spec.out_specs_leaves is not None:
        out_treedef, out_leaves = spec.out_specs_treedef, spec.out_specs_leaves
    result = fun(*args, **kwargs)
    r_leaves, r_tree = tree_util.tree_flatten(result)
    r_specs = [_get_spec(x) for x in r_leaves]
    if r_leaves and devices is not None:
        r_devices = _devices_of(r_leaves)
        if set(r_devices) != set(devices):
            raise ValueError(
                "colocated_python: the function must return arrays on the devices it runs on "
                f"({list(devices)}), got arrays on {list(r_devices)}")
    if out_leaves is not None:
        _check_specs("outputs", r_tree, r_specs, out_treedef, out_leaves)
        r_leaves = [x if _placed(o) is None or _sharding(x) == _placed(o)
                    else device_put(x, _placed(o)) for x, o in zip(r_leaves, out_leaves)]
        result = tree_util.tree_unflatten(r_tree, r_leaves)
    return result


def make_callable(fun: Callable, specialization: Specialization | None = None):
    """``fun`` as a colocated Python function: called with arrays, it runs on their devices'
    host; ``.specialize(in_specs=, out_specs_fn=, devices=)`` returns it specialized.

        >>> f = make_callable(lambda: None).specialize(devices=ft.devices()[:1])
        >>> f() is None
        True
    """
    spec = specialization if specialization is not None else Specialization()
    lock, state = threading.Lock(), {}

    @functools.wraps(fun)
    def call(*args, **kwargs):
        return _run(fun, spec, args, kwargs, lock, state)

    def specialize(in_specs=None, out_specs_fn=None, devices=None):
        """This function specialized with ``in_specs`` (a pytree of ShapeDtypeStructs for
        the call's ``(args, kwargs)``), ``out_specs_fn`` (input specs -> output specs) and
        ``devices`` (where a call without array arguments runs)."""
        if in_specs is not None:
            leaves, treedef = tree_util.tree_flatten(in_specs)
            for s in leaves:
                if not isinstance(s, ShapeDtypeStruct):
                    raise TypeError("colocated_python: in_specs must be a pytree of "
                                    f"jax.ShapeDtypeStruct, got {type(s).__name__}")
            in_specs = (treedef, tuple(leaves))
        else:
            in_specs = (None, None)
        if out_specs_fn is not None and not callable(out_specs_fn):
            raise TypeError("colocated_python: out_specs_fn must be a function of the input "
                            f"specs, got {type(out_specs_fn).__name__}")
        if devices is not None:
            devices = list(devices)
            if not devices:
                raise ValueError("colocated_python: devices must not be empty")
        return make_callable(fun, spec.update(in_specs_treedef=in_specs[0],
                                              in_specs_leaves=in_specs[1],
                                              out_specs_fn=out_specs_fn, devices=devices))

    call.specialize = specialize
    return call


def __getattr__(name: str):
    raise AttributeError(f"jax.experimental.colocated_python.func.{name} is XLA-only: "
                         "colocated Python functions are IFRT programs (functrans runs "
                         "without XLA)")
