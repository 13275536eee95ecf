"""Lowering of control flow into the kernel: ``cond`` becomes if/elif, ``while`` a while
loop, ``scan`` a for loop writing its stacked outputs in place. Branch and body jaxprs are
emitted inline (their own fusion plans), so a whole training loop is one compiled function.
Loop carries and branch results that are scalars or small arrays live in one variable per
element: no allocation per iteration, values in registers. Larger arrays computed in a loop
live in buffers allocated once, before the outermost loop (:class:`LoopBuffers`).
"""
from __future__ import annotations

import numpy as np

from functrans.core.ir import Literal

from .emit import LoweringError
from .ops import UPDATES, _shape_tuple, op_rules, small_product
from .scalar import dtype_ctor
from .unrolled import is_small, wants_unrolled


class LoopBuffers:
    """Where the arrays computed inside loops live (``em.buffers`` while a loop is emitted).

    Every array a loop body computes gets a buffer allocated once, before the outermost loop,
    and reused by each iteration. That is safe because nothing computed in an iteration
    outlives it: a large carry lives in two buffers of its own (double buffering: the body
    writes the new value into the spare one while it may still read the old, then the two
    swap), and stacked outputs are rows of their own arrays. A value with a ``dest`` is
    computed straight into the loop's buffer: a carry's spare, the carry itself when an update
    (dynamic_update_slice, scatter) is its only reader, or a row of a stacked output. The
    loop copies the value there when its producer did not use it.
    """

    def __init__(self, em):
        self.dest: dict = {}  # var -> the buffer expression its producer should write into
        self.used: set = set()  # vars whose producer did write into their dest
        self.allocs: list = []  # allocation lines for before the outermost loop
        self.marker = f"# buffers {em.fresh('')}"  # where they go
        self.level = em.level

    def place(self, em, var) -> str:
        """The buffer for ``var`` (called by the emitters that allocate their result)."""
        where = self.dest.get(var)
        if where is not None:
            self.used.add(var)
            return where
        return self.alloc(em.fresh("buf"), var.aval.shape, var.aval.dtype)

    def alloc(self, name, shape, dtype) -> str:
        self.allocs.append(f"{name} = np.empty({_shape_tuple(shape)}, dtype={dtype_ctor(dtype)})")
        return name


def _open_loop(em):
    """The buffers of the loops being emitted; the outermost loop creates them."""
    if em.buffers is not None:
        return False
    em.buffers = LoopBuffers(em)
    em.line(em.buffers.marker)
    return True


def _close_loop(em, outermost):
    if not outermost:
        return
    b, em.buffers = em.buffers, None
    at = em.lines.index("    " * b.level + b.marker)
    em.lines[at:at + 1] = ["    " * b.level + line for line in b.allocs]
    em.line_eqns[at:at + 1] = [None] * len(b.allocs)


def _fuse_accumulations(jaxpr):
    """``c + a . b`` in one pass: a small float dot_general whose only reader adds it to an
    array of its shape and dtype becomes one dot_general with ``c`` as a third input,
    accumulated into the product's buffer. (Gradients summed over the steps of a backward
    scan then read and write their accumulators once per step instead of three times.)"""
    producer = {o: e for e in jaxpr.eqns for o in e.outputs}
    uses = _uses(jaxpr)
    fused, dropped = {}, set()
    for e in jaxpr.eqns:
        if e.prim.name not in ("add", "add_any") or wants_unrolled(e):
            continue
        out = e.outputs[0]
        for d, c in (e.inputs, e.inputs[::-1]):
            dot = producer.get(d)
            if (dot is not None and dot.prim.name == "dot_general" and uses.get(d) == 1
                    and dot not in dropped and not wants_unrolled(dot) and small_product(dot)
                    and not isinstance(c, Literal) and c.aval.shape == d.aval.shape
                    and c.aval.dtype == d.aval.dtype == out.aval.dtype):
                fused[e] = dot.replace(inputs=dot.inputs[:2] + [c], outputs=[out])
                dropped.add(dot)
                break
    if not fused:
        return jaxpr
    return jaxpr.replace(eqns=[fused.get(e, e) for e in jaxpr.eqns if e not in dropped])


def _uses(jaxpr) -> dict:
    count: dict = {}
    for x in [x for e in jaxpr.eqns for x in e.inputs] + list(jaxpr.outvars):
        count[x] = count.get(x, 0) + 1
    return count


def _update_chain(o, c, producer, uses, dest):
    """The updates (dynamic_update_slice, scatter) leading from carry ``c`` to its new value
    ``o``, when each is the only reader of the one before (and of ``c``): they can all be
    ``c``'s buffer."""
    chain, v = [], o
    while v in producer and producer[v].prim.name in UPDATES and v not in dest:
        chain.append(v)
        x = producer[v].inputs[0]
        if uses.get(x) != 1:
            return None
        if x is c:
            return chain
        v = x
    return None


class _Carries:
    """The large (not per-element) carries of a loop and how each one is updated:

    - ``same``: the body returns it unchanged (no buffer, no copy);
    - ``inplace``: the body only reads it to update it (dynamic_update_slice, scatter):
      updated in place;
    - ``swap``: the new value is written into the spare buffer, then the two swap (its
      producer writes there directly when it can, else the value is copied there).
    """

    def __init__(self, em, body, invars, outvars, results, inits):
        b = em.buffers
        producer = {o: e for e in body.eqns for o in e.outputs}
        uses = _uses(body)
        self.em, self.items, self.claimed = em, [], []
        for c, o, res, init in zip(invars, outvars, results, inits):
            if not _in_buffers(res.aval):
                continue
            cur = em.name(res)
            if o is c:
                em.line(f"{cur} = {init}")
                self.items.append(("same", cur, None, o))
                continue
            b.alloc(cur, res.aval.shape, res.aval.dtype)
            em.line(f"{cur}[:] = {init}")
            chain = _update_chain(o, c, producer, uses, b.dest)
            if chain:
                for v in chain:
                    b.dest[v] = cur
                self.claimed += chain
                self.items.append(("inplace", cur, None, o))
                continue
            spare = b.alloc(em.fresh("spare"), res.aval.shape, res.aval.dtype)
            if o in producer and o not in b.dest:
                b.dest[o] = spare
                self.claimed.append(o)
            self.items.append(("swap", cur, spare, o))

    def names(self) -> dict:
        return {o: cur for _, cur, _, o in self.items}

    def update(self, new_values: dict):
        """End of the body: move the new values in; ``new_values`` maps outvar -> name."""
        em, b = self.em, self.em.buffers
        swaps = []
        for mode, cur, spare, o in self.items:
            if mode == "same":
                continue
            target = spare if mode == "swap" else cur
            if b.dest.get(o) != target or o not in b.used:
                em.line(f"{target}[:] = {new_values[o]}")
            if mode == "swap":
                swaps.append((cur, spare))
        if swaps:
            em.line(f"{', '.join(f'{c}, {s}' for c, s in swaps)} = "
                    f"{', '.join(f'{s}, {c}' for c, s in swaps)}")

    def release(self):
        for v in self.claimed:
            self.em.buffers.dest.pop(v, None)
            self.em.buffers.used.discard(v)


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


def _in_buffers(aval) -> bool:
    """Carries in buffers: arrays too large for one variable per element."""
    return aval.ndim >= 1 and not is_small(aval)


def _small_slots(em, outputs):
    """The variables of the scalar and small carries (None for the others)."""
    return [None if _in_buffers(v.aval) else _slots(em, v) for v in outputs]


def _while(em, eqn):
    p = eqn.params
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    body = _fuse_accumulations(p["body_jaxpr"])
    args = [em.value(x) for x in eqn.inputs]
    cconsts, bconsts, init = args[:cn], args[cn:cn + bn], args[cn + bn:]
    outermost = _open_loop(em)
    small = _small_slots(em, eqn.outputs)
    _assign(em, [s for s in small if s is not None],
            [v for s, v in zip(small, init) if s is not None])
    carries = _Carries(em, body, body.invars[bn:], body.outvars, eqn.outputs, init)
    carry = [s if s is not None else em.name(v) for s, v in zip(small, eqn.outputs)]
    em.line("while True:")
    em.level += 1
    (pred,) = em.block(p["cond_jaxpr"], cconsts + carry)
    em.line(f"if not {pred}:")
    em.line("    break")
    new = em.block(body, bconsts + carry)
    _next_iteration(em, carries, small, body.outvars, new, eqn.outputs)
    em.level -= 1
    carries.release()
    _close_loop(em, outermost)
    _bind_outputs(em, eqn.outputs, carry)


def _next_iteration(em, carries, small, outvars, new, outputs):
    """Move the body's results into the carries (small ones all at once: they may be
    permuted)."""
    carries.update(dict(zip(outvars, new)))
    _assign(em, [s for s in small if s is not None],
            [_as_value(em, r, v.aval) for s, r, v in zip(small, new, outputs) if s is not None])


def _scan(em, eqn):
    p = eqn.params
    nc, nk, length = p["num_consts"], p["num_carry"], p["length"]
    body = _fuse_accumulations(p["jaxpr"])
    args = [em.value(x) for x in eqn.inputs]
    consts, init = args[:nc], args[nc:nc + nk]
    xs_vars = eqn.inputs[nc + nk:]
    outermost = _open_loop(em)
    small = _small_slots(em, eqn.outputs[:nk])
    _assign(em, [s for s in small if s is not None],
            [v for s, v in zip(small, init) if s is not None])
    carries = _Carries(em, body, body.invars[nc:nc + nk], body.outvars[:nk], eqn.outputs[:nk],
                       init)
    carry = [s if s is not None else em.name(v) for s, v in zip(small, eqn.outputs[:nk])]
    ys = [em.buffers.alloc(em.name(v), v.aval.shape, v.aval.dtype) for v in eqn.outputs[nk:]]
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
    rows = _row_destinations(em, body, nk, ys, i)
    outs = em.block(body, consts + carry + x_in)
    for name, y, yv, var in zip(ys, outs[nk:], body.outvars[nk:], eqn.outputs[nk:]):
        # stacked before the carries move on
        if yv in rows and yv in em.buffers.used:
            continue  # computed in place
        row = var.aval.shape[1:]
        if isinstance(y, list):
            for idx, e in zip(np.ndindex(*row), y):
                em.line(f"{name}[{', '.join([i] + list(map(str, idx)))}] = {e}")
        else:
            em.line(f"{name}[{i}] = {y}")
    _next_iteration(em, carries, small, body.outvars[:nk], outs[:nk], eqn.outputs[:nk])
    em.level -= 1
    for v in rows:
        em.buffers.dest.pop(v, None)
        em.buffers.used.discard(v)
    carries.release()
    _close_loop(em, outermost)
    _bind_outputs(em, eqn.outputs[:nk], carry)


def _row_destinations(em, body, nk, ys, i):
    """Stacked outputs computed in the body get their row of the stacked array as their
    buffer (each value once: a carry's new value or a repeated one is copied)."""
    b = em.buffers
    produced = {o for e in body.eqns for o in e.outputs}
    outs = body.outvars[nk:]
    rows = []
    for name, v in zip(ys, outs):
        if v in produced and v not in b.dest and outs.count(v) == 1 and _in_buffers(v.aval):
            b.dest[v] = f"{name}[{i}]"
            rows.append(v)
    return rows


def _no_collectives(em, eqn):
    raise LoweringError(f"'{eqn.prim.name}' needs a named axis: use it inside vmap/pmap with "
                        "axis_name")


op_rules.update({"cond": _cond, "while": _while, "scan": _scan})
for _name in ("psum", "pmax", "pmin", "all_gather", "psum_scatter", "axis_index", "ppermute",
              "all_to_all"):
    op_rules[_name] = _no_collectives
