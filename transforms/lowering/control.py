"""Lowering of control flow into the kernel: ``cond`` becomes if/elif, ``while`` a while
loop, ``scan`` a for loop writing its stacked outputs in place. Branch and body jaxprs are
emitted inline (their own fusion plans), so a whole training loop is one compiled function.
Loop carries and branch results that are scalars or small arrays live in one variable per
element: no allocation per iteration, values in registers.
"""
from __future__ import annotations

import numpy as np

from .emit import LoweringError
from .ops import _shape_tuple, op_rules
from .scalar import dtype_ctor
from .unrolled import is_small


def _slots(em, var):
    """The variable(s) holding ``var`` where values meet: one per element when small."""
    if is_small(var.aval):
        base = em.fresh(em.name(var) + "_")
        return [f"{base}{k}" for k in range(var.aval.size)]
    return em.name(var)


def _as_value(em, v, aval):
    """A block result in the slot form: element lists for small arrays, else a name."""
    if not is_small(aval) or isinstance(v, list):
        return v
    return [f"{v}[{', '.join(map(str, idx))}]" for idx in np.ndindex(*aval.shape)]


def _flatten(values):
    out = []
    for v in values:
        out.extend(v if isinstance(v, list) else [v])
    return out


def _assign(em, slots, values):
    """Simultaneous assignment: new values may read the old ones (a body returning its carry
    swapped, or passing a carry through to the stacked outputs)."""
    pairs = [(n, v) for n, v in zip(_flatten(slots), _flatten(values)) if n != v]
    if pairs:
        em.line(f"{', '.join(n for n, _ in pairs)} = {', '.join(v for _, v in pairs)}")


def _bind_outputs(em, outvars, slots):
    for var, s in zip(outvars, slots):
        if isinstance(s, list):
            em.set_elements(var, s)


def _cond(em, eqn):
    index, *operands = eqn.inputs
    branches = eqn.params["branches"]
    ops = [em.value(x) for x in operands]
    slots = [_slots(em, v) for v in eqn.outputs]
    avals = [v.aval for v in eqn.outputs]
    i = em.tmp(f"min(max(np.int64({em.atom(index)}), 0), {len(branches) - 1})")
    for k, branch in enumerate(branches):
        head = "if" if k == 0 else "elif" if k < len(branches) - 1 else "else"
        em.line(f"{head} {i} == {k}:" if head != "else" else "else:")
        em.level += 1
        before = len(em.lines)
        results = em.block(branch, ops)
        _assign(em, slots, [_as_value(em, r, a) for r, a in zip(results, avals)])
        if len(em.lines) == before:
            em.line("pass")
        em.level -= 1
    _bind_outputs(em, eqn.outputs, slots)


def _while(em, eqn):
    p = eqn.params
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    args = [em.value(x) for x in eqn.inputs]
    cconsts, bconsts, init = args[:cn], args[cn:cn + bn], args[cn + bn:]
    carry = [_slots(em, v) for v in eqn.outputs]
    avals = [v.aval for v in eqn.outputs]
    _assign(em, carry, init)
    em.line("while True:")
    em.level += 1
    (pred,) = em.block(p["cond_jaxpr"], cconsts + carry)
    em.line(f"if not {pred}:")
    em.line("    break")
    new = em.block(p["body_jaxpr"], bconsts + carry)
    _assign(em, carry, [_as_value(em, r, a) for r, a in zip(new, avals)])
    em.level -= 1
    _bind_outputs(em, eqn.outputs, carry)


def _scan(em, eqn):
    p = eqn.params
    nc, nk, length = p["num_consts"], p["num_carry"], p["length"]
    body = p["jaxpr"]
    args = [em.value(x) for x in eqn.inputs]
    consts, init = args[:nc], args[nc:nc + nk]
    xs_vars = eqn.inputs[nc + nk:]
    carry = [_slots(em, v) for v in eqn.outputs[:nk]]
    carry_avals = [v.aval for v in eqn.outputs[:nk]]
    ys = [em.name(v) for v in eqn.outputs[nk:]]
    _assign(em, carry, init)
    for name, v in zip(ys, eqn.outputs[nk:]):
        em.line(f"{name} = np.empty({_shape_tuple(v.aval.shape)}, dtype="
                f"{dtype_ctor(v.aval.dtype)})")
    xs = [em.atom(x) for x in xs_vars]
    step = em.fresh("s")
    em.line(f"for {step} in range({length}):")
    em.level += 1
    i = em.tmp(f"{length - 1} - {step}") if p["reverse"] else step
    x_in = []
    for name, var in zip(xs, xs_vars):
        row = var.aval.shape[1:]
        if is_small(var.aval.update(shape=row)):
            x_in.append([f"{name}[{', '.join([i] + list(map(str, idx)))}]"
                         for idx in np.ndindex(*row)])
        else:
            x_in.append(em.tmp(f"{name}[{i}]"))
    outs = em.block(body, consts + carry + x_in)
    new_carry, y_out = outs[:nk], outs[nk:]
    for name, y, var in zip(ys, y_out, eqn.outputs[nk:]):  # before the carry moves on
        row = var.aval.shape[1:]
        if isinstance(y, list):
            for idx, e in zip(np.ndindex(*row), y):
                em.line(f"{name}[{', '.join([i] + list(map(str, idx)))}] = {e}")
        else:
            em.line(f"{name}[{i}] = {y}")
    _assign(em, carry, [_as_value(em, r, a) for r, a in zip(new_carry, carry_avals)])
    em.level -= 1
    _bind_outputs(em, eqn.outputs[:nk], carry)


def _no_collectives(em, eqn):
    raise LoweringError(f"'{eqn.prim.name}' needs a named axis: use it inside vmap/pmap with "
                        "axis_name")


op_rules.update({"cond": _cond, "while": _while, "scan": _scan})
for _name in ("psum", "pmax", "pmin", "all_gather", "psum_scatter", "axis_index", "ppermute",
              "all_to_all"):
    op_rules[_name] = _no_collectives
