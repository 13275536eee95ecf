"""Ahead-of-time stages of a jitted function: ``jit(f).trace(*args)`` is a :class:`Traced`,
its ``.lower()`` a :class:`Lowered`, and that one's ``.compile()`` a :class:`Compiled`, a
function of the dynamic arguments alone for that one argument signature::

    >>> import functrans as ft
    >>> traced = ft.jit(lambda x, n: x * n, static_argnums=1).trace(1.0, 3)
    >>> compiled = traced.lower().compile()
    >>> compiled(2.0)
    Array(6., dtype=float64, weak_type=True)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from functrans.core import compiler
from functrans.core.api_util import ShapeDtypeStruct, abstractify
from functrans.core.config import config
from functrans.core.tree import tree_flatten, tree_unflatten

from .cost import cost_analysis
from .debug_nans import checked_call

__all__ = ["ArgInfo", "Compiled", "CompiledMemoryStats", "Lowered", "Traced"]


class ArgInfo:
    """The type of one argument of a traced, lowered or compiled function and whether it is
    donated.

    >>> from functrans.core.avals import ShapedArray
    >>> ArgInfo(ShapedArray((2,), np.float32), donated=False).shape
    (2,)
    """

    def __init__(self, aval, donated: bool = False):
        self._aval = aval
        self.donated = donated

    @property
    def shape(self):
        return self._aval.shape

    @property
    def dtype(self):
        return self._aval.dtype

    def __repr__(self):
        return f"ArgInfo(_aval={self._aval!r}, donated={self.donated})"


@dataclass(frozen=True)
class CompiledMemoryStats:
    """``Compiled.memory_analysis()``: bytes of the arguments, results and the temporaries the
    compiled program allocates (its intermediate values; functrans reuses no buffer of an
    argument, so nothing is aliased)."""

    generated_code_size_in_bytes: int
    argument_size_in_bytes: int
    output_size_in_bytes: int
    alias_size_in_bytes: int
    temp_size_in_bytes: int
    host_generated_code_size_in_bytes: int = 0
    host_argument_size_in_bytes: int = 0
    host_output_size_in_bytes: int = 0
    host_alias_size_in_bytes: int = 0
    host_temp_size_in_bytes: int = 0


def _nbytes(aval) -> int:
    return int(np.prod(aval.shape)) * np.dtype(aval.dtype).itemsize


class _Stage:
    """What every stage knows: the jitted function, its traced entry, the signature key."""

    def __init__(self, jitted, entry, key):
        self._jitted, self._entry, self._key = jitted, entry, key

    @property
    def fun_name(self) -> str:
        return self._jitted.name

    @property
    def in_tree(self):
        return self._key[0]

    @property
    def out_tree(self):
        return self._entry.out_tree

    @property
    def args_info(self):
        """The dynamic arguments' pytree (``(args, kwargs)``) of :class:`ArgInfo`."""
        donated = set(self._jitted.donate_argnums)
        args, kwargs = tree_unflatten(self.in_tree, list(self._key[1]))
        static = {i for i, _ in self._key[2]}
        positions = [i for i in range(len(args) + len(static)) if i not in static]
        infos = tuple(tree_unflatten(*_infos(a, positions[k] in donated))
                      for k, a in enumerate(args))
        names = set(self._jitted.donate_argnames)
        return infos, {k: tree_unflatten(*_infos(v, k in names)) for k, v in kwargs.items()}

    @property
    def out_info(self):
        """The results' pytree of ``ShapeDtypeStruct``."""
        return tree_unflatten(self.out_tree, [
            ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
            for a in self._entry.jaxpr.out_avals])

    def cost_analysis(self) -> dict[str, float]:
        """The program's flops, transcendentals and bytes accessed (``cost.py``)."""
        return cost_analysis(self._entry.jaxpr)


def _infos(avals, donated):
    leaves, tree = tree_flatten(avals)
    return tree, [ArgInfo(a, donated) for a in leaves]


class Traced(_Stage):
    """A function traced for one argument signature: ``jaxpr`` is the program (with its
    constants), ``lower()`` continues to :class:`Lowered`."""

    _shown = None  # high-level values: the program as JAX shows it (Jitted._hi_jaxpr)

    @property
    def jaxpr(self):
        if self._shown is not None:
            try:
                self._entry_shown = self._shown()
            except Exception:  # noqa: BLE001 - a program it cannot show: its arrays' program
                self._entry_shown = self._entry.jaxpr
            self._shown = None
        return getattr(self, "_entry_shown", self._entry.jaxpr)

    @property
    def out_avals(self):
        return tree_unflatten(self.out_tree, list(self._entry.jaxpr.out_avals))

    def lower(self, *, lowering_platforms=None, _private_parameters=None) -> "Lowered":
        """Lower the traced program (the kernel is generated at ``compile()``)."""
        if self._entry.consts:
            raise TypeError(f"jit({self.fun_name}).lower: the function closes over traced "
                            "values of an enclosing transformation, so it cannot be lowered "
                            "on its own")
        return Lowered(self._jitted, self._entry, self._key)

    def __repr__(self):
        return f"Traced(jit({self.fun_name}))"


class Lowered(_Stage):
    """A traced and lowered jit function for one argument signature.

    ``jaxpr`` is the traced program, ``optimized_jaxpr`` what jit's passes made of it (the
    program the kernel is generated from), ``as_text()`` the generated kernel source::

        >>> low = ft.jit(lambda x: x * 1.0 + 0.0 * 2).lower(1.0)
        >>> print(low.as_text("jaxpr"))
        { lambda ; a:f64[]. let
            b:f64[] = mul a 1.0:f64[]
            c:f64[] = add b 0.0:f64[]
          in (c,) }
        >>> print(low.as_text("optimized"))
        { lambda ; a:f64[]. let b:f64[] = add a 0.0:f64[] in (b,) }
    """

    DIALECTS = ("source", "jaxpr", "optimized")

    @property
    def jaxpr(self):
        return self._entry.jaxpr

    @property
    def optimized_jaxpr(self):
        """The jaxpr after jit's IR passes (inlining, simplification, constant folding, CSE,
        DCE): what the kernel is generated from."""
        return self._executable().jaxpr

    def _executable(self):
        if self._entry.executable is None:
            self._entry.executable = compiler.backend_compile_and_load(
                self._jitted.backend, self._entry.jaxpr, self._jitted.name)
        return self._entry.executable

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        """The program as text. ``"source"`` (the default) is the generated kernel module
        (Python source compiled by Numba; programs that run on the reference interpreter, with
        float16 values, show their optimized jaxpr instead), ``"jaxpr"`` the traced jaxpr and
        ``"optimized"`` the jaxpr after jit's passes."""
        if dialect is None or dialect == "source":
            ex = self._executable()
            return ex.text if ex.text is not None else str(ex.jaxpr)
        if dialect == "jaxpr":
            return str(self.jaxpr)
        if dialect == "optimized":
            return str(self.optimized_jaxpr)
        raise ValueError(f"Lowered.as_text: unknown dialect {dialect!r}; choose one of "
                         f"{', '.join(map(repr, self.DIALECTS))}")

    def compiler_ir(self, dialect: str | None = None):
        """JAX's XLA module (StableHLO or HLO) of the program: XLA-only. functrans compiles
        through no XLA IR; its program texts are :meth:`as_text`'s.

            >>> ft.jit(lambda x: x).lower(1.0).compiler_ir("hlo")
            Traceback (most recent call last):
            ...
            NotImplementedError: Lowered.compiler_ir('hlo') is XLA's IR (XLA-only): ...
        """
        raise NotImplementedError(
            f"Lowered.compiler_ir({dialect!r}) is XLA's IR (XLA-only): functrans generates no "
            "XLA module; use as_text('jaxpr'), as_text('optimized') or as_text('source')")

    def compile(self, compiler_options=None) -> "Compiled":
        """Compile now: the kernel's machine code is built here (loaded from the disk cache
        when it is there), not at the first call; compile errors are raised here. (Programs
        with host steps compile their segments at the first call.)"""
        executable = self._executable()
        ahead = getattr(executable, "compile_ahead", None)
        if ahead is not None:
            ahead()
        return Compiled(self._jitted, self._entry, self._key, executable)


class Compiled(_Stage):
    """A compiled jit function for one argument signature, called with the dynamic arguments
    alone (static ones were fixed when it was traced); arguments of another structure or type
    raise TypeError."""

    def __init__(self, jitted, entry, key, executable):
        super().__init__(jitted, entry, key)
        self._exe = executable

    def __call__(self, *args, **kwargs):
        leaves, in_tree = tree_flatten((args, kwargs))
        if in_tree != self.in_tree:
            raise TypeError(f"jit({self.fun_name}) was compiled for arguments of structure "
                            f"{self.in_tree}, called with {in_tree}")
        expected = self._key[1]
        leaves = [_python_scalar(x, e) for x, e in zip(leaves, expected)]
        avals = tuple(abstractify(x, f"jit({self.fun_name}) argument") for x in leaves)
        if any(a.shape != e.shape or a.dtype != e.dtype for a, e in zip(avals, expected)):
            raise TypeError(
                f"jit({self.fun_name}): argument types differ from the types for which this "
                f"computation was compiled: compiled for {_types(expected)}, called with "
                f"{_types(avals)}")
        if config.debug_nans:
            outs = checked_call(self._exe, self._entry.jaxpr, leaves, self.fun_name)
        else:
            outs = self._exe(*leaves)
        return tree_unflatten(self.out_tree, outs)

    def as_text(self) -> str:
        return self._exe.text if self._exe.text is not None else str(self._exe.jaxpr)

    def memory_analysis(self) -> CompiledMemoryStats:
        """Bytes of the arguments, results and intermediate values of the compiled program."""
        jaxpr = self._exe.jaxpr if getattr(self._exe, "jaxpr", None) is not None \
            else self._entry.jaxpr
        ins = sum(_nbytes(v.aval) for v in jaxpr.invars)
        outs = sum(_nbytes(v.aval) for v in jaxpr.outvars)
        results = {id(v) for v in jaxpr.outvars}
        temps = sum(_nbytes(o.aval) for e in jaxpr.eqns for o in e.outputs
                    if id(o) not in results)
        code = len(self._exe.text.encode()) if getattr(self._exe, "text", None) else 0
        return CompiledMemoryStats(code, ins, outs, 0, temps)

    def __repr__(self):
        return f"Compiled(jit({self.fun_name}))"


_KINDS = {bool: "b", int: "iu", float: "f", complex: "c"}


def _python_scalar(x, expected):
    # A Python scalar is weakly typed: it takes the compiled argument's dtype when that is of
    # its kind (a Python int for an int32 argument), as JAX's compiled functions accept it.
    kinds = _KINDS.get(type(x))
    if kinds and expected.shape == () and np.dtype(expected.dtype).kind in kinds:
        return np.asarray(x, expected.dtype)
    return x


def _types(avals) -> str:
    return "(" + ", ".join(a.str_short() if hasattr(a, "str_short") else str(a)
                           for a in avals) + ")"
