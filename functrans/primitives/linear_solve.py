"""``custom_linear_solve``: the solution of a linear system ``A x = b`` found by a user's
``solve``, differentiated implicitly (JAX's ``lax.custom_linear_solve``).

``outs = custom_linear_solve[matvec=... solve=... transpose_solve=... nconsts=(m, s, t)
num_aux=k] *matvec_consts *solve_consts *transpose_solve_consts *b``: ``matvec`` maps x to
``A x``; ``solve`` (and ``transpose_solve``, or None) map b to the solution (followed by ``k``
auxiliary outputs), their consts first. Rules, as in JAX:

- JVP: the tangent is the solution of ``A dx = db - (dA) x`` by the same ``solve`` (the
  derivative never goes through ``solve``'s iterations), where ``(dA) x`` is the JVP of
  ``matvec`` with respect to its consts;
- transpose (linear in ``b``): ``ct_b`` solves ``A^T ct_b = ct_x`` with ``transpose_solve``,
  whose own transpose is ``solve``; ``A^T`` is ``matvec`` transposed;
- batching: every jaxpr is batched, ``b`` and the outputs batched along axis 0;
- jit inlines ``solve``.
"""
from __future__ import annotations

from ..core.eval import eval_jaxpr
from ..core.staging import hoist_tracer_consts, trace_to_jaxpr
from ..core.trace import Primitive, get_aval
from ..transforms.autodiff.jvp import Zero, instantiate, is_zero, jvp_flat, jvp_rules
from ..transforms.autodiff.transpose import is_undefined, transpose_jaxpr, transpose_rules
from ..transforms.batching import batch_jaxpr, batching_rules, bdim_at_front
from ..transforms.inline_lowerings import InlineLowering, lowering_rules
from .elementwise import sub_p


def _split(args, nconsts):
    m, s, t = nconsts
    return (list(args[:m]), list(args[m:m + s]), list(args[m + s:m + s + t]),
            list(args[m + s + t:]))


def _abstract_eval(*avals, matvec, solve, transpose_solve, nconsts, num_aux):
    _, _, _, b = _split(avals, nconsts)
    for what, j in (("matvec", matvec), ("solve", solve), ("transpose_solve", transpose_solve)):
        if j is None:
            continue
        outs = j.out_avals[:len(b)]
        if len(j.out_avals) - (0 if what == "matvec" else num_aux) != len(b) or any(
                o.shape != a.shape or o.dtype != a.dtype for o, a in zip(outs, b)):
            raise TypeError(
                f"custom_linear_solve: {what} must return values of b's types "
                f"({', '.join(a.str_short() for a in b)}), got "
                f"{', '.join(o.str_short() for o in j.out_avals)}")
    return [a.strip_weak_type() for a in solve.out_avals]


def _impl(*args, matvec, solve, transpose_solve, nconsts, num_aux):
    _, sc, _, b = _split(args, nconsts)
    return eval_jaxpr(solve, *sc, *b)


linear_solve_p = Primitive("custom_linear_solve", impl=_impl, abstract_eval=_abstract_eval)
linear_solve_p.multiple_results = True
lowering_rules[linear_solve_p] = {None: InlineLowering(_impl, True)}


def _trace(fun, avals, name):
    jaxpr = trace_to_jaxpr(fun, avals, name=name)
    return hoist_tracer_consts(jaxpr)


def linear_solve_flat(matvec, b, solve, transpose_solve=None) -> list:
    """Bind ``custom_linear_solve`` for flat functions (leaves -> list of leaves):
    ``matvec(*xs)``, ``solve(*bs)`` and ``transpose_solve(*bs)`` (the last two returning the
    solution's leaves then any auxiliary leaves). Returns the solution's leaves then the
    aux."""
    avals = [get_aval(x).strip_weak_type() for x in b]
    mv, mvc = _trace(matvec, avals, "custom_linear_solve_matvec")
    s, sc = _trace(solve, avals, "custom_linear_solve_solve")
    t, tc = (None, []) if transpose_solve is None else \
        _trace(transpose_solve, avals, "custom_linear_solve_transpose_solve")
    return linear_solve_p.bind_all(*mvc, *sc, *tc, *b, matvec=mv, solve=s, transpose_solve=t,
                                   nconsts=(len(mvc), len(sc), len(tc)),
                                   num_aux=len(s.out_avals) - len(b))


# ---- JVP ----------------------------------------------------------------------------------
def _jvp(primals, tangents, **params):
    nconsts, num_aux = params["nconsts"], params["num_aux"]
    mvc, _, _, b = _split(primals, nconsts)
    mvc_t, _, _, b_t = _split(tangents, nconsts)
    outs = linear_solve_p.bind_all(*primals, **params)
    n = len(b)
    x = outs[:n]
    aux_t = [Zero(get_aval(a).strip_weak_type()) for a in outs[n:]]
    a_moves = any(not is_zero(t) for t in mvc_t)
    if all(is_zero(t) for t in b_t) and not a_moves:
        return outs, [Zero(get_aval(v).strip_weak_type()) for v in x] + aux_t
    rhs = [instantiate(t) if not is_zero(t) else None for t in b_t]
    if a_moves:  # rhs = db - (dA) x
        _, dax = jvp_flat(lambda *c: eval_jaxpr(params["matvec"], *c, *x), mvc, mvc_t)
        rhs = [r if is_zero(d) else (sub_p.bind1(r, d) if r is not None else
                                     sub_p.bind1(instantiate(Zero(get_aval(d))), d))
               for r, d in zip(rhs, dax)]
    rhs = [instantiate(Zero(get_aval(v).strip_weak_type())) if r is None else r
           for r, v in zip(rhs, x)]
    sol = linear_solve_p.bind_all(*primals[:sum(nconsts)], *rhs, **params)
    return outs, list(sol[:n]) + aux_t


jvp_rules[linear_solve_p] = _jvp


# ---- transpose -------------------------------------------------------------------------------
def _transpose(cts, *args, matvec, solve, transpose_solve, nconsts, num_aux):
    mvc, sc, tc, b = _split(args, nconsts)
    if any(is_undefined(c) for c in mvc + sc + tc):
        raise TypeError("custom_linear_solve is linear in b only: its matvec and solve must "
                        "not depend linearly on the differentiated values")
    if transpose_solve is None:
        raise TypeError(
            "custom_linear_solve: reverse-mode differentiation (grad, vjp, linear_transpose) "
            "needs transpose_solve; pass transpose_solve=..., or symmetric=True if the matrix "
            "is symmetric")
    n = len(b)
    x_avals = solve.out_avals[:n]
    ct_x = [instantiate(Zero(a)) if is_zero(c) else c for c, a in zip(cts[:n], x_avals)]
    vecmat = transpose_jaxpr(matvec, [False] * len(mvc) + [True] * n)
    ct_b = linear_solve_p.bind_all(*mvc, *tc, *sc, *ct_x, matvec=vecmat, solve=transpose_solve,
                                   transpose_solve=solve,
                                   nconsts=(len(mvc), len(tc), len(sc)), num_aux=num_aux)
    return [None] * (len(mvc) + len(sc) + len(tc)) + list(ct_b[:n])


transpose_rules[linear_solve_p] = _transpose


# ---- batching --------------------------------------------------------------------------------
def _batch(axis, vals, dims, *, matvec, solve, transpose_solve, nconsts, num_aux):
    mvc, sc, tc, b = _split(vals, nconsts)
    dm, ds, dt, db = _split(dims, nconsts)
    n = len(b)
    b = [bdim_at_front(x, d, axis.size) for x, d in zip(b, db)]
    mv_b, _ = batch_jaxpr(matvec, axis, dm + [0] * n, [0] * n)
    s_b, _ = batch_jaxpr(solve, axis, ds + [0] * n, [0] * (n + num_aux))
    t_b = None if transpose_solve is None else \
        batch_jaxpr(transpose_solve, axis, dt + [0] * n, [0] * (n + num_aux))[0]
    outs = linear_solve_p.bind_all(*mvc, *sc, *tc, *b, matvec=mv_b, solve=s_b, transpose_solve=t_b,
                                   nconsts=nconsts, num_aux=num_aux)
    return outs, [0] * len(outs)


batching_rules[linear_solve_p] = _batch
