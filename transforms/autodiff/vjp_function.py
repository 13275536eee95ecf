"""The function ``vjp`` returns: a pytree whose leaves are the residuals the backward pass
reads (as JAX's ``VJP``), so it can cross ``jit``'s boundary and ``make_jaxpr`` of a function
returning it lists what the forward pass saves::

    >>> import functrans as ft, functrans.numpy as fnp
    >>> _, f_vjp = ft.jit(lambda x: ft.vjp(fnp.sin, x))(0.5)
    >>> [float(r) for r in ft.tree_util.tree_leaves(f_vjp)] == [float(fnp.cos(0.5))]
    True
    >>> f_vjp(2.0)
    (Array(1.75516512, dtype=float64, weak_type=True),)

An eager ``vjp``'s residuals are those of its tape, which its backward pass reads unless
the ``VJP``'s leaves are replaced.
"""
from __future__ import annotations

from functrans.core.tree import flatten_one_level, register_pytree_node, tree_flatten

__all__ = ["DidntWant", "DontWant", "GradRef", "GradValue", "NotNeeded", "NotSaveable", "VJP"]


class GradValue:
    """``with_refs`` marker: return this argument's cotangent as a value."""

    def __repr__(self):
        return "GradValue()"


class DontWant:
    """``with_refs`` marker: this argument's cotangent is not wanted (it comes back as
    :class:`DidntWant`)."""

    def __repr__(self):
        return "DontWant()"


class DidntWant:
    """What ``with_refs`` returns for an argument marked :class:`DontWant`."""

    def __repr__(self):
        return "DidntWant()"


class GradRef:
    """What ``with_refs`` returns for an argument whose cotangent went into a Ref."""

    def __repr__(self):
        return "GradRef()"


class NotNeeded:
    """In :attr:`VJP.args_res`, an argument leaf the backward pass does not read."""

    def __repr__(self):
        return "NotNeeded()"


class NotSaveable:
    """In :attr:`VJP.args_res`, an argument leaf the backward pass reads but that
    ``vjp(..., saveable_args=...)`` kept out of the saved state: put it back before calling."""

    def __repr__(self):
        return "NotSaveable()"


def saveable_mask(saveable_args, primals) -> list:
    """One bool per flat leaf of ``primals``: ``saveable_args`` is a tree of bools, a prefix
    of the arguments matched by numbers of children (a tuple may line up with a dict), a
    bool covering a whole subtree, as JAX's."""
    mask = []

    def walk(s, x, where):
        if isinstance(s, bool):
            mask.extend([s] * len(tree_flatten(x)[0]))
            return
        if not isinstance(s, (tuple, list)):
            raise TypeError(f"vjp: saveable_args must be a tree of bools (tuples of them), "
                            f"got {type(s).__name__} at {where}")
        try:
            children, _ = flatten_one_level(x)
        except ValueError:
            children = None
        if children is None or len(children) != len(s):
            n = "a leaf" if children is None else f"{len(children)} children"
            raise ValueError(f"vjp: saveable_args at {where} has {len(s)} entries, but the "
                             f"argument there has {n}")
        for i, (si, xi) in enumerate(zip(s, children)):
            walk(si, xi, f"{where}[{i}]")

    if isinstance(saveable_args, bool):
        walk(saveable_args, tuple(primals), "saveable_args")
    else:
        walk(tuple(saveable_args), tuple(primals), "saveable_args")
    return mask


class VJP:
    """``f_vjp(cotangent)``: the inputs' cotangents, computed by the backward pass (its
    structure's static data) from its residuals, the pytree's leaves. As JAX's, residuals
    that are arguments of the function differentiated are in ``args_res`` (one entry per
    argument: the argument's pytree with :class:`NotNeeded` at leaves the backward pass
    does not read), so a caller can drop them and put them back later
    (``f_vjp.args_res[0] = W``); the others are ``opaque_residuals``.

        >>> import functrans as ft, functrans.numpy as fnp
        >>> _, f_vjp = ft.vjp(fnp.sin, fnp.zeros(2))  # it reads cos(x), not x
        >>> f_vjp.args_res
        [NotNeeded()]
        >>> _, f_vjp = ft.vjp(lambda W, x: W @ x, fnp.ones((2, 2)), fnp.ones(2))
        >>> f_vjp.args_res
        [Array([[1., 1.],
               [1., 1.]], dtype=float64), Array([1., 1.], dtype=float64)]
    """

    __slots__ = ("_args_res", "_opaque", "_apply", "_layout_", "_arg_trees_", "_ref_args",
                 "_build")

    def __init__(self, args_res, opaque_residuals, apply, layout, arg_trees, ref_args=()):
        self._args_res = list(args_res)
        self._opaque = list(opaque_residuals)
        self._apply = apply
        # One entry per residual the backward pass reads: ("arg", flat argument leaf) or
        # ("opaque", index into opaque_residuals).
        self._layout_ = layout
        self._arg_trees_ = arg_trees
        self._ref_args = ref_args  # the arguments that are Refs: gradients via with_refs
        self._build = None

    @classmethod
    def lazy(cls, build, apply) -> "VJP":
        """A VJP whose residuals ``build()`` lists (``(args_res, opaque_residuals, layout,
        arg_trees)``) when first asked for: an eager vjp called once never lists them (its
        backward pass reads its tape's own), as ``apply(None, ct)``."""
        f = cls((), (), apply, (), ())
        f._build = build
        return f

    def _listed(self) -> "VJP":
        if self._build is not None:
            build, self._build = self._build, None
            args_res, opaque, self._layout_, self._arg_trees_ = build()
            self._args_res, self._opaque = list(args_res), list(opaque)
        return self

    args_res = property(lambda self: self._listed()._args_res,
                        lambda self, v: setattr(self._listed(), "_args_res", list(v)),
                        doc="The arguments the backward pass reads (NotNeeded elsewhere).")
    opaque_residuals = property(lambda self: self._listed()._opaque,
                                lambda self, v: setattr(self._listed(), "_opaque", list(v)),
                                doc="The other residuals the backward pass reads.")
    _layout = property(lambda self: self._listed()._layout_)
    _arg_trees = property(lambda self: self._listed()._arg_trees_)

    def _arg_leaves(self) -> list:
        if len(self.args_res) != len(self._arg_trees):
            raise ValueError(f"VJP.args_res must hold one entry per argument "
                             f"({len(self._arg_trees)}), got {len(self.args_res)}")
        leaves = []
        for i, (a, tree) in enumerate(zip(self.args_res, self._arg_trees)):
            flat, t = tree_flatten(a, is_leaf=lambda v: isinstance(v, (NotNeeded, NotSaveable)))
            if len(flat) != tree.num_leaves:
                raise ValueError(f"VJP.args_res[{i}] must have the structure of argument {i} "
                                 f"({tree}), got {t}")
            leaves += flat
        return leaves

    @property
    def structured_residuals(self) -> list:
        """Residuals kept with a structure of their own (JAX's third channel, filled by
        hijax rules there): none here."""
        return []

    def replace(self, **changes) -> "VJP":
        """A copy with ``args_res`` and/or ``opaque_residuals`` replaced.

            >>> import functrans as ft, functrans.numpy as fnp
            >>> W = fnp.ones((2, 2))
            >>> _, f = ft.vjp(lambda W, x: W @ x, W, fnp.ones(2), saveable_args=(False, True))
            >>> f.replace(args_res=[W, f.args_res[1]])(fnp.ones(2))[0].shape
            (2, 2)
        """
        unknown = set(changes) - {"args_res", "opaque_residuals"}
        if unknown:
            raise TypeError(f"VJP.replace: unknown fields {sorted(unknown)}; it replaces "
                            "args_res and opaque_residuals")
        return VJP(changes.get("args_res", self.args_res),
                   changes.get("opaque_residuals", self.opaque_residuals), self._apply,
                   self._layout, self._arg_trees, self._ref_args)

    def __call__(self, ct):
        if self._ref_args:
            k = self._ref_args[0]
            raise ValueError(f"argument {k} of the function differentiated is a Ref: its "
                             "gradient must be accumulated into a ref; bind one with "
                             "f_vjp.with_refs(...) and call that")
        return self._cotangents(ct)

    def _cotangents(self, ct):
        if self._build is not None:  # never listed: the tape's own residuals
            return self._apply(None, ct)
        args = self._arg_leaves()
        missing = sorted({self._argument_of(k) for kind, k in self._layout
                          if kind == "arg" and isinstance(args[k], (NotNeeded, NotSaveable))})
        if missing:
            raise ValueError(
                f"the backward pass needs argument(s) {missing} verbatim, and VJP.args_res "
                "does not hold them (not saveable, or taken out): put the argument back into "
                "args_res before calling the VJP, e.g. f_vjp.args_res[" + str(missing[0]) +
                "] = the argument")
        residuals = [self.opaque_residuals[k] if kind == "opaque" else args[k]
                     for kind, k in self._layout]
        return self._apply(residuals, ct)

    def _argument_of(self, leaf: int) -> int:
        for i, tree in enumerate(self._arg_trees):
            if leaf < tree.num_leaves:
                return i
            leaf -= tree.num_leaves
        raise IndexError(leaf)

    def with_refs(self, *targets):
        """``f_vjp`` sending each argument's cotangent where its target says: a Ref (added
        into it; :class:`GradRef` is returned in its place), :class:`GradValue` (returned) or
        :class:`DontWant` (:class:`DidntWant` returned). One target per argument of the
        function differentiated.

            >>> import functrans as ft, functrans.numpy as fnp
            >>> _, f_vjp = ft.vjp(lambda a, b: a * b, 2.0, 3.0)
            >>> acc = ft.new_ref(10.0)
            >>> f_vjp.with_refs(acc, DontWant())(1.0), float(acc[...])
            ((GradRef(), DidntWant()), 13.0)
        """
        for t in targets:
            if not isinstance(t, (GradValue, DontWant)) and not hasattr(t, "__setitem__"):
                raise TypeError(f"with_refs: each target must be a Ref, GradValue() or "
                                f"DontWant(), got {type(t).__name__}")

        def f_vjp(ct):
            grads = self._cotangents(ct)
            if len(grads) != len(targets):
                raise TypeError(f"with_refs: got {len(targets)} targets for a function of "
                                f"{len(grads)} arguments")
            out = []
            for k, (t, g) in enumerate(zip(targets, grads)):
                if k in self._ref_args and not hasattr(t, "__setitem__"):
                    raise TypeError(f"with_refs: argument {k} is a Ref, so its gradient must "
                                    f"be accumulated into a ref; got {t!r} for it")
                if isinstance(t, GradValue):
                    out.append(g)
                elif isinstance(t, DontWant):
                    out.append(DidntWant())
                else:
                    t[...] = t[...] + g
                    out.append(GradRef())
            return tuple(out)
        return f_vjp

    def __repr__(self):
        return (f"VJP(args_res={self.args_res!r}, "
                f"opaque_residuals=<{len(self.opaque_residuals)} arrays>)")


register_pytree_node(
    VJP, lambda f: ((f.args_res, f.opaque_residuals),
                    (f._apply, f._layout, f._arg_trees, f._ref_args)),
    lambda aux, children: VJP(children[0], children[1], *aux))
# What with_refs returns in place of a cotangent holds no value, and neither does NotNeeded:
# empty nodes, as in JAX (so a function returning them can be traced or jitted).
for _marker in (DidntWant, GradRef, NotNeeded, NotSaveable):
    register_pytree_node(_marker, lambda m: ((), None), lambda _, __, cls=_marker: cls())
