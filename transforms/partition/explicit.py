"""Sharding in types: on ``Explicit`` mesh axes an operation whose operands' shardings leave
its result's sharding ambiguous is an error, as in JAX (on ``Auto`` axes the partitioner
chooses and reshards instead).

Checked for the cases JAX rejects: elementwise operands split differently along one dimension
or giving a result that uses an axis twice, a dot contracting dimensions split on both
sides, and a reshape that cannot keep a split. Messages follow JAX's, with the user's line::

    >>> spec_str((("x",), ()), (4, 4), np.dtype("float32"))
    'f32[4@x,4]'
"""
from __future__ import annotations

from functrans.core.errors import ShardingTypeError
from functrans.core.mesh import AxisType
from functrans.core.dtypes import short_name


def spec_str(spec, shape, dtype) -> str:
    """An array type with its splits, as JAX prints it: ``f32[8@x,4@(x,y)]``."""
    dims = []
    for n, names in zip(shape, spec):
        if not names:
            dims.append(str(n))
        elif len(names) == 1:
            dims.append(f"{n}@{names[0]}")
        else:
            dims.append(f"{n}@({','.join(names)})")
    return f"{short_name(dtype)}[{','.join(dims)}]"


def _tuple_str(spec) -> str:
    parts = [repr(None) if not n else repr(n[0]) if len(n) == 1 else repr(n) for n in spec]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def check(eqn, specs, plan, mesh) -> None:
    """Raise ShardingTypeError if ``eqn`` on operands laid out as ``specs`` is ambiguous on
    the mesh's Explicit axes (nothing to check on Auto axes)."""
    explicit = explicit_axes(mesh)
    if not explicit:
        return
    specs = [tuple(tuple(n for n in names if n in explicit) for names in s) for s in specs]
    where = f" (at {eqn.source})" if eqn.source is not None else ""
    name = eqn.prim.name
    if "elementwise" in eqn.prim.traits:
        rank = eqn.outputs[0].aval.ndim
        full = [s for x, s in zip(eqn.inputs, specs) if x.aval.ndim == rank]
        for d in range(rank):
            split = {s[d] for s in full if s[d]}
            if len(split) > 1:
                raise ShardingTypeError(
                    f"{name} got incompatible shardings for broadcasting: "
                    f"{', '.join(_tuple_str(s) for s in full)}.{where}")
        result = tuple(next((s[d] for s in full if s[d]), ()) for d in range(rank))
        axes = [n for names in result for n in names]
        if len(axes) != len(set(axes)):
            ins = ", ".join(spec_str(s, x.aval.shape, x.aval.dtype)
                            for x, s in zip(eqn.inputs, specs) if x.aval.ndim == rank)
            out = eqn.outputs[0].aval
            raise ShardingTypeError(f"{name} operation with inputs: {ins} produces an illegally "
                                    f"sharded result: {spec_str(result, out.shape, out.dtype)}"
                                    f"{where}")
    elif name == "dot_general":
        (lc, rc), _ = eqn.params["dimension_numbers"]
        lhs = tuple(n for d in lc for n in specs[0][d])
        rhs = tuple(n for d in rc for n in specs[1][d])
        if lhs and rhs:
            raise ShardingTypeError(
                "Contracting dimensions are sharded and it is ambiguous how the output should "
                "be sharded. Please specify the output sharding via the `out_sharding` "
                f"parameter. Got lhs_contracting_spec={lhs} and rhs_contracting_spec={rhs}"
                f"{where}")
    elif name == "reshape":
        x = eqn.inputs[0].aval
        if any(s and not n for s, n in zip(specs[0], plan.need[0])):
            raise ShardingTypeError(
                "This reshape is not supported. Please specify the sharding of the output via "
                "the `out_sharding` argument of jax.lax.reshape. Got operand type: "
                f"{spec_str(specs[0], x.shape, x.dtype).replace(short_name(x.dtype), x.dtype.name, 1)}"
                f", new sizes: {tuple(eqn.params['new_sizes'])}{where}")


def explicit_axes(mesh) -> set:
    return {n for n, t in zip(mesh.axis_names, mesh.axis_types) if t is AxisType.Explicit}


def dot_plan(eqn, specs, plan):
    """A dot's plan on Explicit axes, JAX's rule: the result is split as the operands' batch
    and free dimensions are; a contracting dimension split on one side only is gathered."""
    from .rules import Plan
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    ls, rs = specs
    need_l = tuple(() if d in lc else s for d, s in enumerate(ls))
    need_r = tuple(() if d in rc else (ls[lb[rb.index(d)]] or s) if d in rb else s
                   for d, s in enumerate(rs))
    need_l = tuple((need_r[rb[lb.index(d)]] or s) if d in lb else s for d, s in enumerate(need_l))
    lf = [d for d in range(len(ls)) if d not in lc and d not in lb]
    rf = [d for d in range(len(rs)) if d not in rc and d not in rb]
    # An axis splitting a dimension of the left operand's part of the result cannot split
    # one of the right's too (a transposed product meets this): that dimension is gathered.
    taken = {n for d in list(lb) + lf for n in need_l[d]}
    need_r = tuple(tuple(n for n in s if n not in taken) if d in rf else s
                   for d, s in enumerate(need_r))
    out = tuple([need_l[d] for d in lb] + [need_l[d] for d in lf] + [need_r[d] for d in rf])
    return Plan([need_l, need_r], [out])
