"""JAX's rule tables (``ad.primitive_jvps``, ``batching.primitive_batchers``, ...) as views of
functrans's own: setting a rule stores it in functrans's table, adapted to functrans's
conventions, so every transformation uses it; reading gives the rule as it was set (or, for
functrans's own primitives, its rule in JAX's conventions).

    >>> from functrans.transforms.autodiff.jvp import jvp_rules
    >>> from functrans.primitives import sin_p
    >>> table = RuleTable("jvp", jvp_rules, adapt=None, view=None)
    >>> sin_p in table, "sin" in table
    (True, False)
"""
from __future__ import annotations

from collections.abc import MutableMapping

from functrans.extend.core._primitive import core_primitive, jax_primitive


class RuleTable(MutableMapping):
    """``table`` (functrans's, keyed by its primitives) seen with JAX's rule conventions.

    ``adapt(p, rule)`` makes functrans's rule for the JAX-facing primitive ``p`` from a rule
    in JAX's conventions; ``view(p, rule)`` does the reverse, for rules functrans defines;
    ``default(prim)`` is the rule functrans applies to a primitive without an entry, if any.
    """

    def __init__(self, what, table, adapt, view, default=None):
        self._what = what
        self._table = table
        self._adapt = adapt
        self._view = view
        self._default = default  # core primitive -> the rule functrans uses without an entry
        self._given: dict = {}  # core primitive -> (rule as given, functrans's rule from it)

    def _rule(self, core):
        rule = self._table.get(core)
        if rule is None and self._default is not None:
            rule = self._default(core)
        return rule

    def __setitem__(self, p, rule):
        if not callable(rule):
            raise TypeError(f"the {self._what} rule for '{p}' must be callable, got "
                            f"{type(rule).__name__}")
        core = core_primitive(p)
        adapted = self._adapt(jax_primitive(core), rule)
        self._table[core] = adapted
        self._given[core] = (rule, adapted)

    def __getitem__(self, p):
        try:
            core = core_primitive(p)
        except TypeError:
            raise KeyError(p) from None
        rule = self._rule(core)
        if rule is None:
            raise KeyError(p)
        given = self._given.get(core)
        if given is not None and given[1] is rule:
            return given[0]
        return self._view(jax_primitive(core), rule)

    def __delitem__(self, p):
        try:
            core = core_primitive(p)
        except TypeError:
            raise KeyError(p) from None
        del self._table[core]
        self._given.pop(core, None)

    def __contains__(self, p):
        try:
            return self._rule(core_primitive(p)) is not None
        except TypeError:
            return False

    def __iter__(self):
        return iter([jax_primitive(core) for core in self._table])

    def __len__(self):
        return len(self._table)

    def __repr__(self):
        return f"<{self._what} rules of {len(self)} primitives>"
