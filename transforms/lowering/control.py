"""Lowering of control flow into the kernel: ``cond`` becomes if/elif, ``while`` a while
loop, ``scan`` a for loop writing its stacked outputs in place. Branch and body jaxprs are
emitted inline (their own fusion plans), so a whole training loop is one compiled function
and scalar carries stay in registers (no allocation per iteration).
"""
from __future__ import annotations

from .emit import LoweringError
from .ops import _shape_tuple, op_rules
from .scalar import dtype_ctor


def _assign(em, names, values):
    """Simultaneous assignment: new values may read the old ones (a body returning its carry
    swapped, or passing a carry through to the stacked outputs)."""
    pairs = [(n, v) for n, v in zip(names, values) if n != v]
    if pairs:
        em.line(f"{', '.join(n for n, _ in pairs)} = {', '.join(v for _, v in pairs)}")


def _cond(em, eqn):
    index, *operands = eqn.inputs
    branches = eqn.params["branches"]
    ops = [em.atom(x) for x in operands]
    outs = [em.name(v) for v in eqn.outputs]
    i = em.tmp(f"min(max(np.int64({em.atom(index)}), 0), {len(branches) - 1})")
    for k, branch in enumerate(branches):
        head = "if" if k == 0 else "elif" if k < len(branches) - 1 else "else"
        em.line(f"{head} {i} == {k}:" if head != "else" else "else:")
        em.level += 1
        before = len(em.lines)
        _assign(em, outs, em.block(branch, ops))
        if len(em.lines) == before:
            em.line("pass")
        em.level -= 1


def _while(em, eqn):
    p = eqn.params
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    args = [em.atom(x) for x in eqn.inputs]
    cconsts, bconsts, init = args[:cn], args[cn:cn + bn], args[cn + bn:]
    carry = [em.name(v) for v in eqn.outputs]
    _assign(em, carry, init)
    em.line("while True:")
    em.level += 1
    (pred,) = em.block(p["cond_jaxpr"], cconsts + carry)
    em.line(f"if not {pred}:")
    em.line("    break")
    new = em.block(p["body_jaxpr"], bconsts + carry)
    _assign(em, carry, new)
    em.level -= 1


def _scan(em, eqn):
    p = eqn.params
    nc, nk, length = p["num_consts"], p["num_carry"], p["length"]
    body = p["jaxpr"]
    args = [em.atom(x) for x in eqn.inputs]
    consts, init, xs = args[:nc], args[nc:nc + nk], args[nc + nk:]
    carry = [em.name(v) for v in eqn.outputs[:nk]]
    ys = [em.name(v) for v in eqn.outputs[nk:]]
    _assign(em, carry, init)
    for name, v in zip(ys, eqn.outputs[nk:]):
        em.line(f"{name} = np.empty({_shape_tuple(v.aval.shape)}, dtype="
                f"{dtype_ctor(v.aval.dtype)})")
    step = em.fresh("s")
    em.line(f"for {step} in range({length}):")
    em.level += 1
    i = em.tmp(f"{length - 1} - {step}") if p["reverse"] else step
    x_in = [em.tmp(f"{x}[{i}]") for x in xs]
    outs = em.block(body, consts + carry + x_in)
    new_carry, y_out = outs[:nk], outs[nk:]
    for name, y in zip(ys, y_out):  # before the carry moves on: y may be the old carry
        em.line(f"{name}[{i}] = {y}")
    _assign(em, carry, new_carry)
    em.level -= 1


def _no_collectives(em, eqn):
    raise LoweringError(f"'{eqn.prim.name}' needs a named axis: use it inside vmap/pmap with "
                        "axis_name")


op_rules.update({"cond": _cond, "while": _while, "scan": _scan})
for _name in ("psum", "pmax", "pmin", "all_gather", "psum_scatter", "axis_index", "ppermute",
              "all_to_all"):
    op_rules[_name] = _no_collectives
