"""``jax.interpreters.mlir``: how ``jit`` compiles a primitive defined by a library.

functrans compiles jaxprs itself and has no MLIR. The lowering it can use is the usual one of
libraries: ``register_lowering(p, lower_fun(fun, multiple_results=...))`` with ``fun`` written
with ``jax.numpy``/``lax`` operations (often the primitive's impl). Under ``jit`` each
equation of ``p`` is then replaced by ``fun``'s traced program, which compiles natively. A
primitive with no lowering runs its Python impl on the host between compiled parts of the
program. A rule that only calls ``emit_python_callback`` runs its callbacks on the host
(``functrans.interpreters._callback_lowering``). Any other lowering rule (one that builds
MLIR) raises ``NotImplementedError`` when a program using the primitive is compiled::

    >>> from functrans.extend.core import Primitive
    >>> clip_p = Primitive("clip01")
    >>> def clip_impl(x):
    ...     return fnp.clip(x, 0.0, 1.0)
    >>> _ = clip_p.def_impl(clip_impl)
    >>> _ = clip_p.def_abstract_eval(lambda a: a)
    >>> register_lowering(clip_p, lower_fun(clip_impl, multiple_results=False))
    >>> ft.jit(clip_p.bind)(fnp.array([-1.0, 0.5, 3.0]))
    Array([0. , 0.5, 1. ], dtype=float64)
"""
from __future__ import annotations

from functrans.extend.core._primitive import core_primitive
from functrans.interpreters._callback_lowering import CallbackLowering, emit_python_callback
from functrans.transforms.jit.lowerings import InlineLowering, lowering_rules

__all__ = ["emit_python_callback", "lower_fun", "register_lowering"]

_PLATFORMS = ("cpu", "cuda", "rocm", "tpu", "gpu")


def lower_fun(fun, multiple_results=True) -> InlineLowering:
    """A lowering rule computing the primitive as ``fun(*operands, **params)``, a traceable
    function of array operations; ``multiple_results`` says whether ``fun`` returns a list of
    outputs. Under ``jit`` functrans inlines ``fun``'s program.

        >>> lower_fun(fnp.sin, multiple_results=False)
        lower_fun('sin')
    """
    return InlineLowering(fun, multiple_results)


def register_lowering(prim, rule, platform=None, inline=True, cacheable=True) -> None:
    """Register ``rule`` as the lowering of ``prim`` on ``platform`` (None: every platform;
    a platform's own rule takes precedence). ``inline`` and ``cacheable`` are accepted for
    JAX's signature: functrans always inlines a :func:`lower_fun` rule.

        >>> from functrans.extend.core import Primitive
        >>> register_lowering(Primitive("p"), lower_fun(fnp.sin), platform="metal")
        Traceback (most recent call last):
        ...
        NotImplementedError: Registering a lowering rule for primitive p for an unknown
        platform metal. Known platforms are: cpu, cuda, gpu, rocm, tpu.
    """
    if platform is not None and platform not in _PLATFORMS:
        raise NotImplementedError(
            f"Registering a lowering rule for primitive {prim} for an unknown platform "
            f"{platform}. Known platforms are: {', '.join(sorted(_PLATFORMS))}.")
    if not callable(rule):
        raise TypeError(f"register_lowering: the rule for '{prim}' must be callable, got "
                        f"{type(rule).__name__}")
    if not isinstance(rule, InlineLowering):  # an MLIR rule: run when a program compiles
        rule = CallbackLowering(rule)
    platforms = ("cuda", "rocm") if platform == "gpu" else (platform,)
    table = lowering_rules.setdefault(core_primitive(prim), {})
    for p in platforms:
        table[p] = rule


def __getattr__(name):
    raise AttributeError(f"module 'jax.interpreters.mlir' has no attribute {name!r}: functrans "
                         "has no MLIR; it provides register_lowering, lower_fun (lowerings "
                         "written as functions of array operations) and emit_python_callback")
