"""Sharding propagation: for each primitive family, how the layouts of an equation's inputs
decide the layouts it needs them in and the layouts of its outputs.

A rule is ``rule(eqn, specs, sizes) -> Plan``: ``specs`` are the inputs' current specs (one
tuple of mesh axes per dimension), ``sizes`` the mesh's axis sizes. The plan says what spec
each input must be resharded to, the outputs' specs, which mesh axes an output still holds
partial sums over (a dot contracting a split dimension, a sum over one), a collective to
apply to each output (``pmax``/``pmin`` after a max/min over a split dimension), and how to
rewrite params that hold global sizes (the shard's program sees blocks).

Families:

* elementwise: operands of the output's rank take one spec (per dimension the first operand
  splitting it, each mesh axis used once); scalars stay replicated
* dot_general: the operands' splits are kept in order of their operand's size (the larger
  operand's layout wins, the other is resharded), a split contracting dimension leaves
  partial sums, a batch or contracting dimension split on one side is sliced on the other
* broadcast_in_dim, reshape, transpose, squeeze: splits follow the dimensions they move
* reductions: kept dimensions keep their splits; a sum over split ones leaves partial sums,
  max/min reduce locally then across shards; others need the reduced dimensions whole
* dimension-wise ops (cumulative ops, sort, rev, slice, pad, concatenate, dynamic slices):
  the dimensions they work along are gathered, the others keep their splits
* users' kernels (numba_call): replicated, or split as their ``sharding_rule`` declares
* everything else (gather, scatter, convolutions, control flow, callbacks, ...): replicated
  inputs and outputs, the global program run on every shard: always right, never fast

    >>> rule_for("sin")  # doctest: +ELLIPSIS
    <function elementwise at ...>
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from .layouts import divides, factor, local_shape

class Plan(NamedTuple):
    need: list  # per input: the spec it must have
    out: list  # per output: its spec
    partial: list = None  # per output: mesh axes of pending partial sums (None: none)
    post: list = None  # per output: None or ("pmax" | "pmin", axes) applied after
    localize: Callable = None  # localize(params, in_local_shapes, out_local_shapes) -> params


def _ndims(eqn):
    return [x.aval.ndim for x in eqn.inputs]


def replicated(eqn, specs, sizes) -> Plan:
    """Every input whole, the equation run as it is on every shard."""
    return Plan([((),) * n for n in _ndims(eqn)], [((),) * o.aval.ndim for o in eqn.outputs])


def elementwise(eqn, specs, sizes) -> Plan:
    rank = eqn.outputs[0].aval.ndim
    shape = eqn.outputs[0].aval.shape
    out, taken = [], set()
    for d in range(rank):
        names = ()
        for x, spec in zip(eqn.inputs, specs):
            if x.aval.ndim == rank and spec[d] and not (set(spec[d]) & taken) \
                    and shape[d] % factor(spec[d], sizes) == 0:
                names = spec[d]
                break
        taken |= set(names)
        out.append(names)
    out = tuple(out)
    need = [out if x.aval.ndim == rank else ((),) * x.aval.ndim for x in eqn.inputs]
    return Plan(need, [out] * len(eqn.outputs))


def dot_general(eqn, specs, sizes) -> Plan:
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs, rhs = eqn.inputs
    ls, rs = specs
    lf = [d for d in range(lhs.aval.ndim) if d not in lc and d not in lb]
    rf = [d for d in range(rhs.aval.ndim) if d not in rc and d not in rb]
    pair_of = {("l", a): ("r", b) for a, b in zip(lc + lb, rc + rb)}
    pair_of.update({("r", b): ("l", a) for a, b in zip(lc + lb, rc + rb)})
    # Claims in order of their operand's size: the larger operand keeps its layout.
    operands = [("l", lhs, ls), ("r", rhs, rs)]
    operands.sort(key=lambda t: -t[1].aval.size)
    taken, assign = set(), {}
    for side, x, spec in operands:
        for d, names in enumerate(spec):
            if not names or (side, d) in assign or set(names) & taken:
                continue
            dims = [(side, d)]
            if (side, d) in pair_of:
                other = pair_of[(side, d)]
                other_x = rhs if other[0] == "r" else lhs
                if other in assign or other_x.aval.shape[other[1]] % factor(names, sizes):
                    continue
                dims.append(other)
            for k in dims:
                assign[k] = names
            taken |= set(names)
    need_l = tuple(assign.get(("l", d), ()) for d in range(lhs.aval.ndim))
    need_r = tuple(assign.get(("r", d), ()) for d in range(rhs.aval.ndim))
    out = tuple([need_l[d] for d in lb] + [need_l[d] for d in lf] + [need_r[d] for d in rf])
    partial = tuple(n for d in lc for n in need_l[d])
    return Plan([need_l, need_r], [out], [partial or None])


def transpose(eqn, specs, sizes) -> Plan:
    (spec,) = specs
    return Plan([spec], [tuple(spec[p] for p in eqn.params["permutation"])])


def broadcast_in_dim(eqn, specs, sizes) -> Plan:
    (x,) = eqn.inputs[:1]
    spec = specs[0]
    shape = eqn.params["shape"]
    out = [()] * len(shape)
    need = list(spec)
    for d, o in enumerate(eqn.params["broadcast_dimensions"]):
        if x.aval.shape[d] == shape[o]:
            out[o] = spec[d]
        else:
            need[d] = ()
    need = [tuple(need)] + [((),) * n for n in _ndims(eqn)[1:]]

    def localize(params, ins, outs):
        return dict(params, shape=outs[0])
    return Plan(need, [tuple(out)], localize=localize)


def _reshape_groups(a, b):
    """Pairs (input dims, output dims) of a reshape from ``a`` to ``b`` whose sizes match."""
    groups, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        gi, gj, pa, pb = [], [], 1, 1
        if i < len(a):
            gi.append(i)
            pa = a[i]
            i += 1
        if j < len(b):
            gj.append(j)
            pb = b[j]
            j += 1
        while pa != pb:
            if pa < pb and i < len(a):
                pa *= a[i]
                gi.append(i)
                i += 1
            elif j < len(b):
                pb *= b[j]
                gj.append(j)
                j += 1
            else:
                return None
        groups.append((gi, gj))
    return groups


def reshape(eqn, specs, sizes) -> Plan:
    """A split survives when it is on the major dimension of its group (the dimensions a
    reshape merges or splits) and divides the group's major output dimension."""
    (x,) = eqn.inputs[:1]
    spec = specs[0]
    a, b = x.aval.shape, eqn.outputs[0].aval.shape
    need, out = [()] * len(a), [()] * len(b)
    for gi, gj in _reshape_groups(a, b) or []:
        splits = [d for d in gi if spec[d]]
        # Dimensions of size 1 do not move elements: the group's major dimension is its
        # first of another size ((1, 8@y) -> (8@y,) keeps the split).
        lead = [d for d in gi if a[d] != 1] or gi[:1]
        if gi and gj and splits == lead[:1]:
            names = spec[lead[0]]
            major = next((o for o in gj if b[o] != 1), gj[0])
            if b[major] % factor(names, sizes) == 0 \
                    and all(b[o] == 1 for o in gj[:gj.index(major)]):
                need[lead[0]], out[major] = names, names
    need = [tuple(need)] + [((),) * n for n in _ndims(eqn)[1:]]

    def localize(params, ins, outs):
        return dict(params, new_sizes=outs[0])
    return Plan(need, [tuple(out)], localize=localize)


def squeeze(eqn, specs, sizes) -> Plan:
    spec = specs[0]
    dims = {d % len(spec) for d in eqn.params["dimensions"]}
    return Plan([spec], [tuple(s for d, s in enumerate(spec) if d not in dims)])


def reduction(eqn, specs, sizes) -> Plan:
    spec = specs[0]
    axes = set(eqn.params["axes"])
    out = tuple(s for d, s in enumerate(spec) if d not in axes)
    reduced = tuple(n for d in sorted(axes) for n in spec[d])
    name = eqn.prim.name
    if not reduced:
        return Plan([spec], [out])
    if name == "reduce_sum":
        return Plan([spec], [out], [reduced])
    if name in ("reduce_max", "reduce_min"):
        return Plan([spec], [out], post=[("pmax" if name == "reduce_max" else "pmin", reduced)])
    need = tuple(() if d in axes else s for d, s in enumerate(spec))  # argmax, prod, and/or
    return Plan([need], [tuple(s for d, s in enumerate(need) if d not in axes)])


def _dimwise(touched_of, localize=None):
    """A rule for ops working along some dimensions (``touched_of(eqn)``) and mapping the
    others one to one: those keep their splits, shared by every operand of the same rank."""
    def rule(eqn, specs, sizes):
        rank = eqn.outputs[0].aval.ndim
        touched = touched_of(eqn)
        spec = [()] * rank
        taken = set()
        for x, s in zip(eqn.inputs, specs):
            if x.aval.ndim != rank:
                continue
            for d in range(rank):
                if d not in touched and s[d] and not spec[d] and not set(s[d]) & taken \
                        and divides(x.aval.shape, (((),) * d) + (s[d],), sizes) \
                        and all(o.aval.shape[d] % factor(s[d], sizes) == 0
                                for o in eqn.outputs):
                    spec[d] = s[d]
                    taken |= set(s[d])
        spec = tuple(spec)
        need = [spec if x.aval.ndim == rank else ((),) * x.aval.ndim for x in eqn.inputs]
        return Plan(need, [spec] * len(eqn.outputs), localize=localize)
    return rule


def _slice_touched(eqn):
    x = eqn.inputs[0].aval
    p = eqn.params
    strides = p["strides"] or (1,) * x.ndim
    return {d for d in range(x.ndim)
            if (p["start_indices"][d], p["limit_indices"][d], strides[d]) != (0, x.shape[d], 1)}


def _slice_localize(params, ins, outs):
    starts = params["start_indices"]
    limits = tuple(s + n * (st or 1) for s, n, st in
                   zip(starts, outs[0], params["strides"] or (1,) * len(starts)))
    return dict(params, limit_indices=limits)


def _dynamic_slice_touched(eqn):
    x = eqn.inputs[0].aval
    return {d for d, n in enumerate(eqn.params["slice_sizes"]) if n != x.shape[d]}


def _dynamic_slice_localize(params, ins, outs):
    return dict(params, slice_sizes=outs[0])


def parse_sharding_rule(rule: str, n_in: int, n_out: int, ranks) -> tuple:
    """``(operand factors, result factors)`` of an einsum-like rule such as ``"i j, j -> i"``
    (as JAX's ``custom_partitioning`` writes them): one name per dimension of each operand,
    then of each result. Raises ValueError naming what does not match ``ranks``."""
    if rule.count("->") != 1:
        raise ValueError(f"sharding_rule {rule!r} must have the form 'operands -> results' "
                         "(e.g. 'i j, j -> i')")
    lhs, rhs = rule.split("->")
    ins = [tuple(p.split()) for p in lhs.split(",")] if lhs.strip() else []
    outs = [tuple(p.split()) for p in rhs.split(",")]
    if len(ins) != n_in or len(outs) != n_out:
        raise ValueError(f"sharding_rule {rule!r} names {len(ins)} operands and {len(outs)} "
                         f"results; the call has {n_in} and {n_out}")
    for k, (f, r) in enumerate(zip(ins + outs, ranks)):
        if len(f) != r:
            what = f"operand {k}" if k < n_in else f"result {k - n_in}"
            raise ValueError(f"sharding_rule {rule!r}: {what} has rank {r} but the rule "
                             f"names {len(f)} dimensions ({' '.join(f) or 'none'})")
    return ins, outs


def user_kernel(eqn, specs, sizes) -> Plan:
    """A user's kernel (``numba_call``): replicated, unless it declares a ``sharding_rule``.
    Then a dimension factor that a result carries may be split (each shard runs the kernel
    on its blocks: the user's declaration that blocks are independent along it), taking the
    first operand split along it; factors no result carries (the kernel reduces over them)
    are gathered."""
    code = eqn.params["kernel"]
    rule = getattr(code, "sharding_rule", None)
    if rule is None or eqn.params["loops"]:
        return replicated(eqn, specs, sizes)
    ins, outs = parse_sharding_rule(rule, len(eqn.inputs), len(eqn.outputs),
                                    [x.aval.ndim for x in eqn.inputs + eqn.outputs])
    in_result = {f for o in outs for f in o}
    extent = {}
    for fs, v in zip(ins + outs, list(eqn.inputs) + list(eqn.outputs)):
        for f, n in zip(fs, v.aval.shape):
            extent.setdefault(f, set()).add(n)
    chosen, taken = {}, set()
    for fs, spec in zip(ins, specs):
        for f, names in zip(fs, spec):
            if f in chosen or not names or f not in in_result or set(names) & taken:
                continue
            if all(n % factor(names, sizes) == 0 for n in extent[f]):
                chosen[f] = names
                taken |= set(names)

    def spec_of(fs):
        return tuple(chosen.get(f, ()) for f in fs)
    return Plan([spec_of(f) for f in ins], [spec_of(f) for f in outs],
                localize=_user_kernel_localize)


def _user_kernel_localize(params, ins, outs):
    from functrans.core.avals import ShapedArray
    return dict(params, out_avals=tuple(ShapedArray(s, a.dtype)
                                        for s, a in zip(outs, params["out_avals"])))


RULES = {
    "numba_call": user_kernel,
    "dot_general": dot_general,
    "transpose": transpose,
    "broadcast_in_dim": broadcast_in_dim,
    "reshape": reshape,
    "squeeze": squeeze,
    "cumsum": _dimwise(lambda e: {e.params["axis"]}),
    "sort": _dimwise(lambda e: {e.params["dimension"]}),
    "rev": _dimwise(lambda e: set(e.params["dimensions"])),
    "concatenate": _dimwise(lambda e: {e.params["dimension"]}),
    "pad": _dimwise(lambda e: {d for d, c in enumerate(e.params["padding_config"])
                               if tuple(c) != (0, 0, 0)}),
    "slice": _dimwise(_slice_touched, _slice_localize),
    "dynamic_slice": _dimwise(_dynamic_slice_touched, _dynamic_slice_localize),
    "dynamic_update_slice": _dimwise(
        lambda e: {d for d, (n, m) in enumerate(zip(e.inputs[0].aval.shape,
                                                    e.inputs[1].aval.shape)) if n != m}),
    "sharding_constraint": None,  # handled by the partitioner (it names its spec)
}
for _name in ("cumprod", "cummax", "cummin", "cumlogsumexp"):
    RULES[_name] = RULES["cumsum"]


def rule_for(name_or_prim) -> Callable:
    """The propagation rule of a primitive (``replicated`` when none is known)."""
    prim = name_or_prim
    name = getattr(prim, "name", prim)
    traits = getattr(prim, "traits", ())
    if name in RULES and RULES[name] is not None:
        return RULES[name]
    if "reduction" in traits:
        return reduction
    if "elementwise" in traits:
        return elementwise
    if not hasattr(prim, "traits"):  # a name: look the primitive up
        from functrans.core.trace import all_primitives
        p = all_primitives().get(name)
        if p is not None:
            return rule_for(p)
    return replicated


# Primitives through which pending partial sums pass unchanged: input positions that may be
# partial (all of them, for add-like ones, with equal axes).
LINEAR_UNARY = {"neg", "convert_element_type", "reduce_sum", "transpose", "reshape",
                "broadcast_in_dim", "squeeze", "copy", "sharding_constraint"}
LINEAR_SUMS = {"add", "sub", "add_any"}
LINEAR_ONE_OF = {"mul": (0, 1), "div": (0,), "dot_general": (0, 1)}

__all__ = ["Plan", "rule_for", "RULES", "local_shape"]
