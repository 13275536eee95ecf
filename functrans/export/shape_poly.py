"""Exports with symbolic shapes: the dimension variables' values from the arguments' shapes
(JAX's linear univariate solving, with JAX's shape-assertion errors), and the program
specialized to them (every symbolic size in types and params evaluated), which then compiles
as any concrete program.

    >>> from functrans.core.shape_poly import symbolic_shape
    >>> from functrans.core.avals import ShapedArray
    >>> b, d = symbolic_shape("b, d")
    >>> solve_dim_vars([ShapedArray((b, 2 * d), "float32")], [(3, 8)], ["args[0]"])
    {'b': 3, 'd': 4}
"""
from __future__ import annotations

from functrans.core.avals import ShapedArray
from functrans.core.ir import Jaxpr, Literal, walk_jaxprs
from functrans.core.shape_poly import (DimExpr, UnexpectedDimVar, evaluate_dim,
                                       is_symbolic_shape)

_ASSERT_HELP = (". Please see https://docs.jax.dev/en/latest/export/shape_poly.html"
                "#shape-assertion-errors for more details.")
_SOLVE_HELP = (". Please see https://docs.jax.dev/en/latest/export/shape_poly.html"
               "#dimension-variables-must-be-solvable-from-the-input-shapes for more details.")


def _specs_message(avals, paths) -> str:
    specs = [f"{p}.shape = ({', '.join(map(str, a.shape))}{',' if a.ndim == 1 else ''})"
             for a, p in zip(avals, paths) if is_symbolic_shape(a.shape)]
    return " Using the following polymorphic shapes specifications: " + ",".join(specs) + "."


def _equations(avals, shapes, paths):
    """(expression, where, value) for every symbolic dimension of the arguments."""
    eqns = []
    for a, shape, path in zip(avals, shapes, paths):
        for i, d in enumerate(a.shape):
            if type(d) is DimExpr:
                eqns.append((d, f"{path}.shape[{i}]", None if shape is None else shape[i]))
    return eqns


def _solve_one(expr: DimExpr, env: dict, value):
    """``(var, k, rest)`` when ``expr = k*var + rest`` with ``rest`` known (its value, or None
    without values); ``(None, 0, value_of_expr)`` when all is known; None when not yet
    solvable."""
    var, k, rest = None, 0, 0
    for term, coeff in expr.terms:
        names = set().union(*(f.variables() for f, _ in term)) if term else set()
        if names <= env.keys():
            if value is not None:
                rest += coeff * DimExpr(((term, 1),), expr.scope).evaluate(env) \
                    if term else coeff
            continue
        if var is None and len(term) == 1 and term[0][1] == 1 and term[0][0].var is not None:
            var, k = term[0][0].var, coeff
            continue
        return None
    return var, k, rest


def check_solvable(avals, paths) -> None:
    """Raise JAX's ``ValueError`` when the arguments' shapes do not determine every
    dimension variable (only linear univariate equations are solved)."""
    pending = _equations(avals, [None] * len(avals), paths)
    known: dict = {}
    while pending:
        rest = []
        for eqn in pending:
            r = _solve_one(eqn[0], known, None)
            if r is None:
                rest.append(eqn)
            elif r[0] is not None:
                known[r[0]] = None
        if len(rest) == len(pending):
            unsolved = set().union(*(e[0].variables for e in rest)) - known.keys()
            raise ValueError(
                f"Cannot solve for values of dimension variables {unsolved}. We can only solve "
                "linear uni-variate constraints." + _specs_message(avals, paths) +
                " Unprocessed specifications: " +
                ", ".join(f"'{e[0]}' for dimension size {e[1]}" for e in rest) + _SOLVE_HELP)
        pending = rest


def solve_dim_vars(avals, shapes, paths) -> dict:
    """The dimension variables' values for arguments of these concrete shapes, after
    checking every dimension, ``var >= 1`` and the scope's constraints (JAX's shape
    assertions and their messages)."""
    pending = _equations(avals, shapes, paths)
    env: dict = {}
    solution: list = []   # "'b' = 3 from specification 'b' for dimension args[0].shape[0] (= 3)"
    checks: list = []     # (ok, message builder), checked once every variable is known
    specs = _specs_message(avals, paths)
    head = "Input shapes do not match the polymorphic shapes specification. "

    def obtained():
        return " Obtained dimension variables: " + "".join(s + ", " for s in solution)

    while pending:
        rest = []
        for expr, where, value in pending:
            r = _solve_one(expr, env, value)
            if r is None:
                rest.append((expr, where, value))
                continue
            var, k, known = r
            if var is None:
                checks.append((known == value, lambda where=where, value=value, expr=expr,
                               known=known, sol=obtained(): head + "Found inconsistency "
                               f"between dimension size {where} (= {value}) and the "
                               f"specification '{expr}' (= {known})." + specs + sol
                               + _ASSERT_HELP))
                continue
            q, rem = divmod(value - known, k)
            env[var] = q
            # (each message tells what was solved before it, as JAX's)
            checks.append((rem == 0, lambda rem=rem, var=var, sol=obtained(): head +
                           f"Division had remainder {rem} when computing the value of "
                           f"'{var}'." + specs + sol + _ASSERT_HELP))
            solution.append(f"'{var}' = {q} from specification '{expr}' for dimension "
                            f"{where} (= {value})")
            checks.append((q >= 1, lambda var=var, sol=obtained(): head + "Expected value >= 1 "
                           f"for dimension variable '{var}'." + specs + sol + _ASSERT_HELP))
        if len(rest) == len(pending):
            check_solvable(avals, paths)  # raises the solver's error
        pending = rest
    scope = next((d.scope for a in avals for d in a.shape if type(d) is DimExpr), None)
    if scope is not None:
        for text, diff, is_eq in scope._checked_constraints():
            v = evaluate_dim(diff, env)
            checks.append(((v == 0) if is_eq else (v >= 0), lambda text=text, diff=diff, v=v,
                           is_eq=is_eq, sol=obtained(): "Input shapes do not match the "
                           f"symbolic shape constraint {text}. Expected '{diff}' to be "
                           f"{'equal' if is_eq else 'greater or equal'} to 0, but found {v}. "
                           + specs + sol + _ASSERT_HELP))
    for ok, message in checks:
        if not ok:
            raise ValueError(message())
    return env


# --------------------------------------------------------------------------------------------
# The program's dimension variables, and the program specialized to values of them

def _param_dims(v, out: set):
    if type(v) is DimExpr:
        out |= v.variables
    elif isinstance(v, (tuple, list)):
        for x in v:
            _param_dims(x, out)
    elif isinstance(v, ShapedArray):
        _shape_vars(v.shape, out)


def _shape_vars(shape, out: set):
    for d in shape:
        if type(d) is DimExpr:
            out |= d.variables


def program_dim_vars(jaxpr: Jaxpr, out=None) -> set:
    """Every dimension variable in the program's types and params (nested programs too)."""
    out = set() if out is None else out
    for v in list(jaxpr.constvars) + list(jaxpr.invars) + list(jaxpr.outvars):
        _shape_vars(v.aval.shape, out)
    for e in jaxpr.eqns:
        for v in e.outputs:
            _shape_vars(v.aval.shape, out)
        for k, p in e.params.items():
            if not isinstance(p, Jaxpr):
                _param_dims(p, out)
        for sub in walk_jaxprs(e.params):
            program_dim_vars(sub, out)
    return out


def check_dim_vars_known(jaxpr: Jaxpr, in_avals) -> None:
    """Raise :class:`UnexpectedDimVar` for a variable the program uses that no argument's
    shape mentions (it could not be bound when called)."""
    known: set = set()
    for a in in_avals:
        _shape_vars(a.shape, known)
    unknown = sorted(program_dim_vars(jaxpr) - known)
    if unknown:
        raise UnexpectedDimVar(
            f"Encountered dimension variable '{unknown[0]}' that is not appearing in the "
            "shapes of the function arguments.\nThe following dimension variables are "
            f"appearing in the shapes of the function arguments: {sorted(known)}.\nPlease see "
            "https://docs.jax.dev/en/latest/export/shape_poly.html#dimension-variables-must-"
            "be-solvable-from-the-input-shapes for more details.")


def _spec_aval(a, env):
    if not is_symbolic_shape(a.shape):
        return a
    return a.update(shape=tuple(evaluate_dim(d, env) for d in a.shape))


def _spec_param(v, env, memo):
    if type(v) is DimExpr:
        return v.evaluate(env)
    if type(v) is tuple:
        return tuple(_spec_param(x, env, memo) for x in v)
    if type(v) is list:
        return [_spec_param(x, env, memo) for x in v]
    if isinstance(v, Jaxpr):
        return specialize(v, env, memo)
    if isinstance(v, ShapedArray):
        return _spec_aval(v, env)
    return v


def specialize(jaxpr: Jaxpr, env: dict, memo=None) -> Jaxpr:
    """``jaxpr`` with every symbolic size evaluated for the variables' values ``env``.

        >>> import functrans as ft, functrans.numpy as fnp
        >>> from functrans.core.shape_poly import symbolic_shape
        >>> n, = symbolic_shape("n")
        >>> j = ft.make_jaxpr(lambda x: fnp.concatenate([x, x]))(ft.ShapeDtypeStruct((n,), "f4"))
        >>> print(specialize(j, {"n": 2}))
        { lambda ; a:f32[2]. let b:f32[4] = concatenate[dimension=0] a a in (b,) }
    """
    memo = {} if memo is None else memo
    if id(jaxpr) in memo:
        return memo[id(jaxpr)]
    vars_: dict = {}

    def var(v):
        if type(v) is Literal:
            return v
        new = vars_.get(v)
        if new is None:
            new = vars_[v] = type(v)(_spec_aval(v.aval, env))
        return new

    eqns = []
    for e in jaxpr.eqns:
        if e.prim.name == "dimension_as_value":
            # a constant once the sizes are known: no backend needs to compile the primitive
            aval = e.outputs[0].aval
            vars_[e.outputs[0]] = Literal(evaluate_dim(e.params["dim"], env), aval)
            continue
        eqns.append(e.replace(inputs=[var(x) for x in e.inputs],
                              outputs=[var(x) for x in e.outputs],
                              params={k: _spec_param(p, env, memo) for k, p in e.params.items()}))
    out = Jaxpr([var(v) for v in jaxpr.constvars], jaxpr.consts,
                [var(v) for v in jaxpr.invars], [var(v) for v in jaxpr.outvars], eqns)
    memo[id(jaxpr)] = out
    return out


def symbolic_args_specs(args, shapes_specs, constraints=(), scope=None):
    """A pytree of ``ShapeDtypeStruct`` like ``args`` with symbolic shapes (JAX's
    ``export.symbolic_args_specs``): ``shapes_specs`` is one spec for all arguments or a
    pytree prefix of ``args`` (None: the argument's own shape); placeholders ``_`` and
    ``...`` take the arguments' sizes; every spec shares one scope.

        >>> import numpy as np
        >>> x, y = symbolic_args_specs((np.ones((3, 1)), np.ones((3, 4))), "a, ...")
        >>> x.shape, y.shape
        ((a, 1), (a, 4))
    """
    from functrans.core.api_util import ShapeDtypeStruct, abstractify
    from functrans.core.shape_poly import SymbolicScope, symbolic_shape
    from functrans.core.tree import broadcast_prefix, tree_flatten, tree_unflatten
    leaves, tree = tree_flatten(args)
    if isinstance(args, tuple) and isinstance(shapes_specs, list):
        shapes_specs = tuple(shapes_specs)  # (JAX accepts a list for a tuple of arguments)
    specs = broadcast_prefix(shapes_specs, args, what="export.symbolic_args_specs shapes_specs")
    if scope is None:
        scope = SymbolicScope(constraints)
    elif constraints:
        raise ValueError("Cannot use both `scope` and `constraints`")
    out = []
    for x, spec in zip(leaves, specs):
        if isinstance(x, ShapeDtypeStruct):
            shape, dtype = x.shape, x.dtype
        else:
            aval = abstractify(x, "export.symbolic_args_specs")
            shape, dtype = aval.shape, aval.dtype
        out.append(ShapeDtypeStruct(symbolic_shape(spec, like=shape, scope=scope), dtype))
    return tree_unflatten(tree, out)
