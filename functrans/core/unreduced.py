"""Arrays placed ``unreduced`` over mesh axes (JAX 0.10.2's ``P(..., unreduced={'x'})``): each
device holds a partial sum, and the array's value is their sum.

An :class:`UnreducedArray` keeps every device's block (its ``addressable_shards``) and, as
any functrans Array, its global value: the sum of the blocks over the unreduced axes. As in
JAX, placing a value unreduced puts it on the first device along those axes and zeros on the
others; ``reshard``/``device_put`` to a sharding without them is the all-reduce (the global
value, placed); adding or subtracting arrays unreduced alike adds their blocks; other
operations on them are refused as JAX refuses them.

    >>> from functrans.core.mesh import make_mesh, NamedSharding, P
    >>> from functrans.core.config import config
    >>> with config.override(num_cpu_devices=2):
    ...     s = NamedSharding(make_mesh((2,), ("x",)), P(unreduced={"x"}))
    ...     y = place_unreduced(np.array([1.0, 2.0]), s)
    >>> [b.data.tolist() for b in y.addressable_shards]
    [[1.0, 2.0], [0.0, 0.0]]
"""
from __future__ import annotations

import numpy as np

from .array import Array, Shard
from .errors import ShardingTypeError
from .mesh import canonical_spec, shard_slices


class UnreducedArray(Array):
    """An Array whose devices hold partial sums over its sharding's unreduced axes."""

    __slots__ = ("_blocks",)
    _unreduced = True

    @property
    def addressable_shards(self) -> list:
        from .devices import processes
        sharding = self._sharding
        return [Shard(d, i, Array._wrap(self._blocks[d], self._weak))
                for d, i in sharding.devices_indices_map(self.shape).items()
                if d.process_index == processes.index]


def _spec(sharding, ndim):
    return canonical_spec(sharding.spec, ndim, "unreduced sharding")


def from_blocks(blocks: dict, shape, dtype, weak_type, sharding) -> UnreducedArray:
    """The array whose device ``d`` holds ``blocks[d]`` (its block of the partitions), the
    value being the blocks' sum over the unreduced axes."""
    mesh, spec = sharding.mesh, _spec(sharding, len(shape))
    total = np.zeros(shape, dtype)
    for d, c in zip(mesh.devices.flat, mesh.coords()):
        # Each partial block is counted once: on the devices first along the other axes.
        if all(c[n] == 0 for n in mesh.axis_names if n not in sharding.spec.unreduced
               and not any(n in names for names in spec)):
            total[shard_slices(shape, spec, c, mesh.shape)] += blocks[d]
    a = object.__new__(UnreducedArray)
    total.setflags(write=False)
    for b in blocks.values():
        b.setflags(write=False)
    a._value, a._weak, a._sharding, a._blocks = total, weak_type, sharding, dict(blocks)
    return a


def place_unreduced(value: np.ndarray, sharding, weak_type=False) -> UnreducedArray:
    """``value`` placed unreduced as JAX places it: whole on the first device along the
    unreduced axes, zeros on the others."""
    mesh, spec = sharding.mesh, _spec(sharding, value.ndim)
    blocks = {}
    for d, c in zip(mesh.devices.flat, mesh.coords()):
        block = np.asarray(value[shard_slices(value.shape, spec, c, mesh.shape)])
        first = all(c[n] == 0 for n in sharding.spec.unreduced)
        blocks[d] = np.array(block) if first else np.zeros_like(block)
    return from_blocks(blocks, value.shape, value.dtype, weak_type, sharding)


_COMBINE = {"add": np.add, "add_any": np.add, "sub": np.subtract}


def apply_unreduced(prim, args, params) -> list:
    """An eager primitive with an unreduced operand: sums and differences of arrays
    unreduced alike stay unreduced (blockwise); JAX refuses the rest."""
    name = prim.name
    unreduced = [x for x in args if getattr(type(x), "_unreduced", False)]
    if name in _COMBINE:
        if len(unreduced) != len(args):
            raise ShardingTypeError(
                f"lhs is unreduced while rhs is not. `{name}` operation does not allow this "
                "because there will be implicit communication. Please reduce lhs via "
                f"`reshard` before calling `{name}`.")
        first = unreduced[0]
        if any(x._sharding != first._sharding or x.shape != first.shape or
               x.dtype != first.dtype for x in unreduced[1:]):
            specs = ", ".join(str(x.sharding.spec) for x in unreduced)
            raise ShardingTypeError(f"{name}: operands unreduced differently ({specs}); "
                                    "reshard them to one sharding first")
        combine = _COMBINE[name]
        blocks = {d: combine(first._blocks[d], *(x._blocks[d] for x in unreduced[1:]))
                  for d in first._blocks}
        return [from_blocks(blocks, first.shape, first.dtype,
                            all(x._weak for x in unreduced), first._sharding)]
    raise NotImplementedError(f"unreduced rule for {name} is not implemented: reshard the "
                              "operand to a sharding without unreduced axes first")


__all__ = ["UnreducedArray", "apply_unreduced", "from_blocks", "place_unreduced"]
