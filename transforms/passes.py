"""IR passes run before lowering, each a small ``Jaxpr -> Jaxpr`` function:

- :func:`inline_calls`: splice the bodies of call-like primitives (jit, custom_jvp_call,
  custom_vjp_call, checkpoint) into the caller, so the lowering sees one flat program;
- :func:`simplify`: exact algebraic identities (``x * 1``, identity reshapes/transposes/
  converts/broadcasts, ``neg(neg(x))``) — only rewrites that give bit-identical results;
- :func:`fold_constants`: evaluate equations whose inputs are all known and small;
- :func:`cse`: merge equations that compute the same thing from the same inputs (not
  broadcasts of literals: fused loops compute those for free);
- :func:`transpose_dots`: fold a transpose of a matrix product into the product;
- :func:`dot_operand_transposes`: a product reads a transposed operand's source directly;
- :func:`dce`: drop equations whose results are unused.

    >>> jaxpr = ft.make_jaxpr(lambda x: x * 1.0 + fnp.sin(x) * fnp.sin(x))(np.ones(3))
    >>> print(optimize(jaxpr))   # all of them, in a sensible order
    { lambda ; a:f64[3]. let
        b:f64[3] = sin a
        c:f64[3] = mul b b
        d:f64[3] = add a c
      in (d,) }
"""
from __future__ import annotations

import numpy as np

from functrans.core.ir import Eqn, Jaxpr, Literal, Var, has_effects, walk_jaxprs
from functrans.core.trace import all_primitives

# Call-like primitives: name of the param holding the body jaxpr, and how many leading
# inputs are not passed to it.
CALL_PARAMS = {"jit": "jaxpr", "custom_jvp_call": "call_jaxpr", "custom_vjp_call": "call_jaxpr",
               "checkpoint": "jaxpr", "custom_vmap_call": "jaxpr"}


def _subst(x, env):
    return env.get(x, x) if isinstance(x, Var) else x


def inline_calls(jaxpr: Jaxpr) -> Jaxpr:
    """Replace call-like equations by their (recursively inlined) bodies."""
    constvars, consts = list(jaxpr.constvars), list(jaxpr.consts)
    eqns: list = []
    env: dict = {}

    def splice(body: Jaxpr, args):
        local = dict(zip(body.invars, args))
        for v, c in zip(body.constvars, body.consts):
            nv = Var(v.aval)
            constvars.append(nv)
            consts.append(c)
            local[v] = nv
        for eqn in body.eqns:
            emit(eqn, local)
        return [_subst(x, local) if isinstance(x, Var) else x for x in body.outvars]

    def emit(eqn, local):
        inputs = [_subst(x, local) for x in eqn.inputs]
        name = eqn.prim.name
        if name in CALL_PARAMS:
            outs = splice(eqn.params[CALL_PARAMS[name]], inputs)
            for o, v in zip(eqn.outputs, outs):
                local[o] = v
            return
        params = {k: (_inline_sub(v) if isinstance(v, (Jaxpr, tuple)) else v)
                  for k, v in eqn.params.items()}
        outs = [Var(o.aval) for o in eqn.outputs]
        for o, n in zip(eqn.outputs, outs):
            local[o] = n
        eqns.append(Eqn(eqn.prim, inputs, outs, params, eqn.source))

    env.update({v: v for v in jaxpr.invars})
    for eqn in jaxpr.eqns:
        emit(eqn, env)
    outvars = [_subst(x, env) for x in jaxpr.outvars]
    return Jaxpr(constvars, consts, jaxpr.invars, outvars, eqns)


def _inline_sub(v):
    if isinstance(v, Jaxpr):
        return inline_calls(v)
    if isinstance(v, tuple) and any(isinstance(x, Jaxpr) for x in v):
        return tuple(inline_calls(x) if isinstance(x, Jaxpr) else x for x in v)
    return v


def dce(jaxpr: Jaxpr) -> Jaxpr:
    """Drop unused equations (and unused constants); inputs are kept."""
    live = {x for x in jaxpr.outvars if isinstance(x, Var)}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if any(o in live for o in eqn.outputs) or has_effects(eqn):
            kept.append(eqn)
            live.update(x for x in eqn.inputs if isinstance(x, Var))
    kept.reverse()
    keep = [v in live for v in jaxpr.constvars]
    return jaxpr.replace(constvars=[v for v, k in zip(jaxpr.constvars, keep) if k],
                         consts=[c for c, k in zip(jaxpr.consts, keep) if k], eqns=kept)


def _key_atom(x):
    if isinstance(x, Literal):
        return ("lit", x.aval.dtype, x.val.tobytes())
    return ("var", id(x))


def params_key(params):
    """A hashable form of an equation's params (a nested jaxpr by identity), or None when
    one of them is not hashable.

        >>> params_key({"axes": (0,), "new_dtype": None})
        (('axes', (0,)), ('new_dtype', None))
    """
    items = []
    for k in sorted(params):
        v = params[k]
        try:
            hash(v)
        except TypeError:
            return None
        items.append((k, id(v) if isinstance(v, Jaxpr) else v))
    return tuple(items)


def cse(jaxpr: Jaxpr) -> Jaxpr:
    """Common-subexpression elimination (equations are pure)."""
    seen: dict = {}
    env: dict = {}
    eqns = []
    for eqn in jaxpr.eqns:
        inputs = [_subst(x, env) for x in eqn.inputs]
        pkey = params_key(eqn.params)
        key = None if pkey is None or has_effects(eqn) or _constant_fill(eqn, inputs) else (
            eqn.prim, tuple(_key_atom(x) for x in inputs), pkey)
        if key is not None and key in seen:
            for o, prev in zip(eqn.outputs, seen[key]):
                env[o] = prev
            continue
        if key is not None:
            seen[key] = eqn.outputs
        eqns.append(eqn.replace(inputs=inputs))
    outvars = [_subst(x, env) for x in jaxpr.outvars]
    return jaxpr.replace(eqns=eqns, outvars=outvars)


def _constant_fill(eqn, inputs) -> bool:
    """A broadcast of a literal: each loop that reads it computes it for free, while one
    merged copy would be stored by the first loop and read back from memory by the others
    (a ReLU's zeros and its gradient's, 256 KB each at a 128x512 layer)."""
    return eqn.prim.name == "broadcast_in_dim" and isinstance(inputs[0], Literal)


def _is_literal(x, value) -> bool:
    return isinstance(x, Literal) and x.val.shape == () and x.val.item() == value and not (
        isinstance(value, (int, float)) and value == 0 and np.signbit(x.val))


def simplify(jaxpr: Jaxpr) -> Jaxpr:
    """Bit-exact algebraic simplifications."""
    env: dict = {}
    producer: dict = {}
    eqns = []
    for eqn in jaxpr.eqns:
        eqn = eqn.replace(inputs=[_subst(x, env) for x in eqn.inputs])
        if len(eqn.outputs) == 1:
            result = _simplify_one(eqn, producer)
            if isinstance(result, (Var, Literal)):
                env[eqn.outputs[0]] = result
                continue
            if isinstance(result, Eqn):
                eqn = result
            producer[eqn.outputs[0]] = eqn
        eqns.append(eqn)
    outvars = [_subst(x, env) for x in jaxpr.outvars]
    return jaxpr.replace(eqns=eqns, outvars=outvars)


def _same_type_as_out(x, out) -> bool:
    a = x.aval
    return a.shape == out.aval.shape and a.dtype == out.aval.dtype


def _is_one(x, producer) -> bool:
    """A literal 1, or a broadcast of one."""
    if _is_literal(x, 1):
        return True
    p = producer.get(x) if isinstance(x, Var) else None
    return p is not None and p.prim.name == "broadcast_in_dim" and _is_literal(p.inputs[0], 1)


_REDUCERS = frozenset({"reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and",
                       "reduce_or"})


def _simplify_one(eqn, producer):
    """A replacement atom, a rewritten equation, or None."""
    name, out, p, inputs = eqn.prim.name, eqn.outputs[0], eqn.params, eqn.inputs
    if name == "mul":
        x, y = inputs
        if _is_one(y, producer) and _same_type_as_out(x, out):
            return x
        if _is_one(x, producer) and _same_type_as_out(y, out):
            return y
        return None
    if name == "neg":
        prev = producer.get(inputs[0]) if isinstance(inputs[0], Var) else None
        if prev is not None and prev.prim.name == "neg":
            return prev.inputs[0]
        return None
    if name == "transpose":
        perm = tuple(p["permutation"])
        prev = producer.get(inputs[0]) if isinstance(inputs[0], Var) else None
        if prev is not None and prev.prim.name == "transpose":
            inner = tuple(prev.params["permutation"])
            perm = tuple(inner[i] for i in perm)
            src = prev.inputs[0]
            if perm == tuple(range(out.aval.ndim)):
                return src
            return eqn.replace(inputs=[src], params=dict(p, permutation=perm))
        return inputs[0] if perm == tuple(range(out.aval.ndim)) else None
    if name in ("reshape", "squeeze"):
        prev = producer.get(inputs[0]) if isinstance(inputs[0], Var) else None
        if prev is not None and prev.prim.name in ("reshape", "squeeze"):
            src = prev.inputs[0]
            if _same_type_as_out(src, out):
                return src
            reshape = eqn.prim if name == "reshape" else (
                prev.prim if prev.prim.name == "reshape" else None)
            if reshape is not None:
                return eqn.replace(prim=reshape, inputs=[src],
                                   params={"new_sizes": out.aval.shape})
    if name == "dot_general":
        return _scalar_dot(eqn)
    if name in _REDUCERS and not p["axes"] and _same_type_as_out(inputs[0], out):
        return inputs[0]  # a reduction over no axes is its operand (jnp.sum(x, axis=()))
    if name in ("reshape", "broadcast_in_dim", "convert_element_type", "squeeze", "rev") \
            and _same_type_as_out(inputs[0], out):
        if name == "rev" and p["dimensions"]:
            return None
        return inputs[0]
    return None


def _scalar_dot(eqn):
    """``dot_general`` of a rank-0 operand (no contracting or batch dimensions are possible)
    is an elementwise product: ``mul``, which fuses with its neighbours. Gradients of
    ``0.5 * dot(p, p)`` (the kinetic energy of HMC samplers) produce it, with the scalar a
    literal. Only when both operands already have the result's dtype, so nothing converts."""
    lhs, rhs = eqn.inputs[:2]
    out = eqn.outputs[0]
    if len(eqn.inputs) != 2 or (lhs.aval.ndim and rhs.aval.ndim):
        return None
    if lhs.aval.dtype != out.aval.dtype or rhs.aval.dtype != out.aval.dtype:
        return None
    if lhs.aval.weak_type and rhs.aval.weak_type and not out.aval.weak_type:
        return None  # mul would give a weakly typed result
    return eqn.replace(prim=all_primitives()["mul"], params={})


def fold_constants(jaxpr: Jaxpr) -> Jaxpr:
    """Evaluate scalar equations whose inputs are all literals (results become literals)."""
    from functrans.core.trace import EVAL_TRACE, set_current_trace
    env: dict = {}
    eqns = []
    for eqn in jaxpr.eqns:
        inputs = [_subst(x, env) for x in eqn.inputs]
        if (inputs and all(isinstance(x, Literal) for x in inputs)
                and all(o.aval.shape == () for o in eqn.outputs)
                and eqn.prim.name not in CALL_PARAMS and not any(walk_jaxprs(eqn.params))
                and not getattr(eqn.prim, "named_axis_rule", False) and eqn.outputs
                and not has_effects(eqn)):
            try:
                with set_current_trace(EVAL_TRACE):
                    outs = eqn.prim.bind_all(*[x.bound for x in inputs], **eqn.params)
            except Exception:
                outs = None
            if outs is not None:
                for o, v in zip(eqn.outputs, outs):
                    env[o] = Literal(np.asarray(v).reshape(()), o.aval)
                continue
        eqns.append(eqn.replace(inputs=inputs))
    outvars = [_subst(x, env) for x in jaxpr.outvars]
    return jaxpr.replace(eqns=eqns, outvars=outvars)


def _use_counts(jaxpr) -> dict:
    counts: dict = {}
    for eqn in jaxpr.eqns:
        for x in eqn.inputs:
            if isinstance(x, Var):
                counts[x] = counts.get(x, 0) + 1
    for x in jaxpr.outvars:
        if isinstance(x, Var):
            counts[x] = counts.get(x, 0) + 1
    return counts


def transpose_dots(jaxpr: Jaxpr) -> Jaxpr:
    """``transpose(dot_general(a, b))`` that swaps the two free-dimension blocks is
    ``dot_general(b, a)``: compute it directly (no transposed copy), when the product has no
    other use. Reverse mode produces this pattern for every weight gradient."""
    counts = _use_counts(jaxpr)
    producer = {e.outputs[0]: e for e in jaxpr.eqns if len(e.outputs) == 1}
    replace: dict = {}  # transpose eqn -> swapped dot eqn
    for eqn in jaxpr.eqns:
        if eqn.prim.name != "transpose" or not isinstance(eqn.inputs[0], Var):
            continue
        dot = producer.get(eqn.inputs[0])
        if dot is None or dot.prim.name != "dot_general" or counts.get(dot.outputs[0]) != 1:
            continue
        (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
        nb = len(lb)
        nl = dot.inputs[0].aval.ndim - len(lc) - nb
        nr = dot.inputs[1].aval.ndim - len(rc) - nb
        swap = list(range(nb)) + [nb + nl + j for j in range(nr)] + [nb + i for i in range(nl)]
        if tuple(eqn.params["permutation"]) != tuple(swap):
            continue
        params = dict(dot.params, dimension_numbers=((rc, lc), (rb, lb)))
        replace[eqn] = dot.replace(inputs=[dot.inputs[1], dot.inputs[0]],
                                   outputs=eqn.outputs, params=params)
    if not replace:
        return jaxpr
    return jaxpr.replace(eqns=[replace.get(e, e) for e in jaxpr.eqns])


def dot_operand_transposes(jaxpr: Jaxpr) -> Jaxpr:
    """``dot_general(transpose(x), y)`` as a ``dot_general`` of ``x`` itself, its dimension
    numbers renamed (BLAS reads a matrix either way round), when the transpose keeps the
    order of the operand's free dimensions (which fixes the result's). vmap of matrix-vector
    products and their gradients (equinox's ``Linear`` under ``vmap``) make these
    transposed copies; the transpose stays only if something else reads it.

        >>> f = lambda w, x: lax.dot_general(w.T, x, (((0,), (0,)), ((), ())))
        >>> j = ft.make_jaxpr(f)(np.ones((3, 4)), np.ones((4, 2))).jaxpr
        >>> [e.prim.name for e in dce(dot_operand_transposes(j)).eqns]
        ['dot_general']
    """
    producer = {e.outputs[0]: e for e in jaxpr.eqns
                if e.prim.name == "transpose" and len(e.outputs) == 1}
    if not producer:
        return jaxpr
    eqns, changed = [], False
    for eqn in jaxpr.eqns:
        if eqn.prim.name == "dot_general":
            new = _read_through_transposes(eqn, producer)
            changed = changed or new is not eqn
            eqn = new
        eqns.append(eqn)
    return jaxpr.replace(eqns=eqns) if changed else jaxpr


def _read_through_transposes(dot, producer):
    (lc, rc), (lb, rb) = dot.params["dimension_numbers"]
    inputs, dims = list(dot.inputs), [[lc, lb], [rc, rb]]
    for side in (0, 1):
        t = producer.get(inputs[side]) if isinstance(inputs[side], Var) else None
        if t is None:
            continue
        perm = tuple(t.params["permutation"])
        contract, batch = dims[side]
        free = [d for d in range(len(perm)) if d not in contract and d not in batch]
        mapped = [perm[d] for d in free]
        if mapped != sorted(mapped):  # the result's free dimensions would change order
            continue
        inputs[side] = t.inputs[0]
        dims[side] = [tuple(perm[d] for d in contract), tuple(perm[d] for d in batch)]
    if inputs == list(dot.inputs):
        return dot
    (lc, lb), (rc, rb) = dims
    return dot.replace(inputs=inputs,
                       params=dict(dot.params, dimension_numbers=((lc, rc), (lb, rb))))


def _optimize_nested(jaxpr: Jaxpr) -> Jaxpr:
    j = simplify(jaxpr)
    j = fold_constants(j)
    j = cse(j)
    j = transpose_dots(j)
    j = dot_operand_transposes(j)
    j = dce(j)
    return _keep_weak_outputs(jaxpr, _map_subjaxprs(j, _optimize_nested))


def _keep_weak_outputs(original: Jaxpr, jaxpr: Jaxpr) -> Jaxpr:
    """Simplification may forward a value in place of a weak-type-only conversion of it; the
    outputs keep the original types, weak types included (they decide later promotions)."""
    outvars, eqns = list(jaxpr.outvars), list(jaxpr.eqns)
    for k, (old, new) in enumerate(zip(original.outvars, jaxpr.outvars)):
        if old.aval.weak_type != new.aval.weak_type:
            out = Var(old.aval)
            eqns.append(Eqn(all_primitives()["convert_element_type"], [new], [out],
                            {"new_dtype": old.aval.dtype, "weak_type": old.aval.weak_type},
                            None))
            outvars[k] = out
    if len(eqns) == len(jaxpr.eqns):
        return jaxpr
    return jaxpr.replace(eqns=eqns, outvars=outvars)


def _map_subjaxprs(jaxpr: Jaxpr, fn) -> Jaxpr:
    """Apply ``fn`` to the jaxprs held by equations (branches, loop bodies)."""
    eqns = []
    for eqn in jaxpr.eqns:
        params = eqn.params
        if any(True for _ in walk_jaxprs(params)):
            params = {k: (fn(v) if isinstance(v, Jaxpr) else
                          tuple(fn(x) if isinstance(x, Jaxpr) else x for x in v)
                          if isinstance(v, tuple) else v) for k, v in params.items()}
            eqn = eqn.replace(params=params)
        eqns.append(eqn)
    return jaxpr.replace(eqns=eqns)


def optimize(jaxpr: Jaxpr) -> Jaxpr:
    """inline -> simplify -> fold -> cse -> transpose_dots -> dot_operand_transposes -> dce,
    also inside branches and loop bodies. (Nested jaxprs keep their inputs and outputs: only
    their insides change.)"""
    return _optimize_nested(inline_calls(jaxpr))


__all__ = ["inline_calls", "simplify", "fold_constants", "cse", "transpose_dots",
           "dot_operand_transposes", "dce", "optimize"]
