"""LLVM-level plumbing for the fast-math layer: bit casts, vector-variant declarations,
the vector-width hint and the rare-slow-path mechanism.

Everything here is a Numba ``@intrinsic``: intrinsics emit IR straight into the caller, so
they cost no Numba compilation pipeline of their own and keep kernels quick to compile.

How LLVM is made to vectorize a call: a scalar function carries the function attribute
``"vector-function-abi-variant"`` naming SIMD versions of itself
(``_ZGV_LLVM_N16v_tanhf(_ZGVeN16v_tanhf)``); the loop vectorizer then calls the SIMD
version, provided the call is marked free of side effects and the SIMD functions still exist
in the module when the vectorizer runs. Unused declarations are deleted before that point,
so each set is referenced from a weak global (:func:`declare_vector_variants`).
"""
from __future__ import annotations

import functools
import llvmlite.binding as llb
from llvmlite import ir
from numba.core import cgutils, config, types
from numba.extending import intrinsic

__all__ = ["f32_bits", "bits_f32", "f64_bits", "bits_f64", "prefer_wide_vectors",
           "host_isa", "preferred_vector_width", "tag_wide_vectors", "declare_vector_variants",
           "make_wide_fixup"]


class _OpenAttributes(ir.values.FunctionAttributes):
    """Function attributes that also accept string attributes (``"key"="value"``) and
    keywords llvmlite does not list (``willreturn``); they are printed verbatim."""

    def add(self, name):
        if name in self._known:
            super().add(name)
        else:
            set.add(self, name)


def open_attributes(fn: ir.Function) -> _OpenAttributes:
    """The attribute set of ``fn``, switched in place to one that takes string attributes.

    >>> fn = ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), []), "f")
    >>> open_attributes(fn).add('"prefer-vector-width"="512"')
    >>> '"prefer-vector-width"="512"' in fn.attributes
    True
    """
    if not isinstance(fn.attributes, _OpenAttributes):
        fn.attributes.__class__ = _OpenAttributes
    return fn.attributes


# -- host ISA ---------------------------------------------------------------------------------

def _target_features() -> str:
    # Numba compiles for CPU_FEATURES when set (portable caches), else for the host.
    if config.CPU_FEATURES is not None:
        return config.CPU_FEATURES
    return _host_features()


@functools.cache
def _host_features() -> str:
    return llb.get_host_cpu_features().flatten()  # half a millisecond: asked once


def host_isa() -> frozenset:
    """The vector instruction sets Numba's target has: a subset of
    ``{'sse2', 'avx', 'avx2', 'avx512f', 'neon'}``.

    >>> 'avx2' in host_isa() or 'avx2' not in host_isa()
    True
    """
    return _isa(_target_features(), llb.get_process_triple())


@functools.cache
def _isa(features: str, triple: str) -> frozenset:
    feats = {f[1:] for f in features.split(",") if f.startswith("+")}
    isa = {name for name in ("sse2", "avx", "avx2", "avx512f") if name in feats}
    if triple.startswith(("x86_64", "amd64")):
        isa.add("sse2")  # part of the x86-64 baseline, not always listed
    if triple.startswith(("aarch64", "arm64")):
        isa.add("neon")
    return frozenset(isa)


def preferred_vector_width() -> int | None:
    """512 where the target has AVX-512 (LLVM then needs the ``"prefer-vector-width"="512"``
    hint, since it defaults to 256-bit vectors there), else None (LLVM's default is right).

    >>> preferred_vector_width() in (None, 512)
    True
    """
    return 512 if "avx512f" in host_isa() else None


_WIDE = preferred_vector_width()


def tag_wide_vectors(fn: ir.Function) -> None:
    """Add ``"prefer-vector-width"`` to ``fn`` when the target benefits from it, and a frame
    aligned to 64 bytes: ``fn`` calls vector functions, and LLVM spills the vectors live
    across those calls at offsets of a stack pointer the ABI aligns to 16 bytes only (each
    spill split a cache line on a stack at 16 mod 32: see ``native/scalar.FRAME_ATTRS``).

    >>> fn = ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), []), "f")
    >>> tag_wide_vectors(fn)
    >>> len(fn.attributes) == 1 + (preferred_vector_width() is not None)
    True
    """
    attributes = open_attributes(fn)
    attributes.add("alignstack(64)")
    if _WIDE is not None:
        attributes.add(f'"prefer-vector-width"="{_WIDE}"')


@intrinsic
def prefer_wide_vectors(typingctx):
    """Mark the function being compiled for the widest useful vectors; emits no code.

    The fast-math functions already do this for the function that calls them. A kernel
    that uses none of them calls this inside its loop body (inside the ``prange`` body for
    parallel kernels, whose body becomes a function of its own)::

        @numba.njit(**kernel_options())
        def scale(x, out):
            for i in range(x.size):
                prefer_wide_vectors()
                out[i] = x[i] * np.float32(2)
    """
    def codegen(context, builder, sig, args):
        tag_wide_vectors(builder.function)
        return context.get_dummy_value()
    return types.none(), codegen


# -- bit casts (vectorize to plain register moves) ---------------------------------------------

def _bitcast_intrinsic(src, dst_type, lty_name):
    def typer(typingctx, x):
        if src == "float" and isinstance(x, types.Float):
            return dst_type(x), _cast_float
        if src == "int" and isinstance(x, types.Integer):
            return dst_type(x), _cast_int
        return None

    def _cast_float(context, builder, sig, args):
        return builder.bitcast(args[0], context.get_value_type(sig.return_type))

    def _cast_int(context, builder, sig, args):
        target = context.get_value_type(sig.return_type)
        width = target.intrinsic_name == "f32" and 32 or 64
        v = args[0]
        if v.type.width > width:  # Numba widens integer arithmetic to 64 bits
            v = builder.trunc(v, ir.IntType(width))
        elif v.type.width < width:
            v = builder.sext(v, ir.IntType(width))
        return builder.bitcast(v, target)

    typer.__name__ = lty_name
    return intrinsic(typer)


f32_bits = _bitcast_intrinsic("float", types.int32, "f32_bits")
bits_f32 = _bitcast_intrinsic("int", types.float32, "bits_f32")
f64_bits = _bitcast_intrinsic("float", types.int64, "f64_bits")
bits_f64 = _bitcast_intrinsic("int", types.float64, "bits_f64")
_EXAMPLE = """

    Inside njit code only::

        one = bits_f32(f32_bits(np.float32(1.0)))   # 0x3f800000 and back
"""
f32_bits.__doc__ = "The IEEE bits of a float32 as int32." + _EXAMPLE
bits_f32.__doc__ = "The float32 whose IEEE bits are the low 32 bits of an integer." + _EXAMPLE
f64_bits.__doc__ = "The IEEE bits of a float64 as int64." + _EXAMPLE
bits_f64.__doc__ = "The float64 whose IEEE bits are the given 64-bit integer." + _EXAMPLE


# -- vector variants -------------------------------------------------------------------------

def _ptr():
    return ir.IntType(8).as_pointer()


def _keep_alive(module: ir.Module, tag: str, fns) -> None:
    name = f"__functrans_keep.{tag}"
    if name in module.globals:
        return
    arr = ir.ArrayType(_ptr(), len(fns))
    g = ir.GlobalVariable(module, arr, name)
    g.linkage = "weak"
    g.initializer = ir.Constant(arr, [f.bitcast(_ptr()) for f in fns])


def declare_vector_variants(module: ir.Module, scalar: ir.Function, variants) -> None:
    """Give ``scalar`` the vector variants ``[(lanes, symbol), ...]``, declaring each as a
    function of ``lanes``-wide vectors, and mark the scalar free of side effects.

    >>> m = ir.Module()
    >>> f = ir.Function(m, ir.FunctionType(ir.FloatType(), [ir.FloatType()]), "tanhf")
    >>> declare_vector_variants(m, f, [(16, "_ZGVeN16v_tanhf")])
    >>> "_ZGVeN16v_tanhf" in m.globals
    True
    """
    attrs = open_attributes(scalar)
    if any(a.startswith('"vector-function-abi-variant"') for a in attrs):
        return
    nargs = len(scalar.function_type.args)
    params = "v" * nargs
    mangled = ",".join(f"_ZGV_LLVM_N{n}{params}_{scalar.name}({sym})" for n, sym in variants)
    for a in ("nounwind", "readnone", "willreturn"):
        attrs.add(a)
    attrs.add(f'"vector-function-abi-variant"="{mangled}"')
    decls = []
    for n, sym in variants:
        vty = ir.VectorType(scalar.function_type.return_type, n)
        decls.append(cgutils.get_or_insert_function(module, ir.FunctionType(vty, [vty] * nargs),
                                                    sym))
    _keep_alive(module, scalar.name, decls)


# -- rare slow path --------------------------------------------------------------------------

_FIXUP_LANES = (2, 4, 8, 16)


def _define_fixup(module: ir.Module, name: str, fty: ir.Type, limit: float,
                  slow_symbol: str) -> ir.Function:
    """``name(x, fast)``: ``fast`` unless ``limit < |x| < inf``, then ``slow_symbol(x)`` computed
    in double precision; with vector variants that test all lanes at once and only go lane by
    lane when some lane needs the slow path."""
    if name in module.globals:
        return module.globals[name]
    dbl = ir.DoubleType()
    scalar = ir.Function(module, ir.FunctionType(fty, [fty, fty]), name)
    scalar.linkage = "linkonce_odr"
    attrs = open_attributes(scalar)
    attrs.add("noinline")  # inlined, its libm call would stop the loop vectorizer
    slow_fn = cgutils.get_or_insert_function(module, ir.FunctionType(dbl, [dbl]), slow_symbol)
    fabs = module.declare_intrinsic("llvm.fabs", [fty])

    x, fast = scalar.args
    b = ir.IRBuilder(scalar.append_basic_block("entry"))
    ax = b.call(fabs, [x])
    big = b.and_(b.fcmp_ordered(">", ax, ir.Constant(fty, limit)),
                 b.fcmp_ordered("<", ax, ir.Constant(fty, float("inf"))))
    with b.if_then(big, likely=False):
        xd = x if fty == dbl else b.fpext(x, dbl)
        r = b.call(slow_fn, [xd])
        b.ret(r if fty == dbl else b.fptrunc(r, fty))
    b.ret(fast)

    variants = []
    for n in _FIXUP_LANES:
        vty = ir.VectorType(fty, n)
        vname = f"{name}.v{n}"
        vfn = ir.Function(module, ir.FunctionType(vty, [vty, vty]), vname)
        vfn.linkage = "linkonce_odr"
        vx, vfast = vfn.args
        b = ir.IRBuilder(vfn.append_basic_block("entry"))
        vfabs = cgutils.get_or_insert_function(
            module, ir.FunctionType(vty, [vty]), f"llvm.fabs.v{n}{fty.intrinsic_name}")
        vax = b.call(vfabs, [vx])
        lim = ir.Constant(vty, [ir.Constant(fty, limit)] * n)
        inf = ir.Constant(vty, [ir.Constant(fty, float("inf"))] * n)
        vbig = b.and_(b.fcmp_ordered(">", vax, lim), b.fcmp_ordered("<", vax, inf))
        anyb = b.icmp_unsigned("!=", b.bitcast(vbig, ir.IntType(n)), ir.Constant(ir.IntType(n), 0))
        with b.if_then(anyb, likely=False):
            acc = vfast
            for i in range(n):
                idx = ir.Constant(ir.IntType(32), i)
                lane = b.call(scalar, [b.extract_element(vx, idx), b.extract_element(vfast, idx)])
                acc = b.insert_element(acc, lane, idx)
            b.ret(acc)
        b.ret(vfast)
        variants.append(vfn)
    mangled = ",".join(f"_ZGV_LLVM_N{n}vv_{name}({name}.v{n})" for n in _FIXUP_LANES)
    for a in ("nounwind", "readnone", "willreturn"):
        attrs.add(a)
    attrs.add(f'"vector-function-abi-variant"="{mangled}"')
    _keep_alive(module, name, variants)
    return scalar


def make_wide_fixup(slow_symbol: str, limits: dict):
    """An intrinsic ``fix(x, fast)`` returning ``fast`` except where ``limits[dtype] < |x| < inf``,
    where it returns the double-precision libm ``slow_symbol(x)`` rounded to x's type.

    The fast path stays vectorized: the slow lanes go through a vector variant that only
    leaves SIMD code when some lane of the vector is out of range. Inside njit code::

        fix_sin = make_wide_fixup("sin", {numba.float32: 4e8})
        ...
        return fix_sin(x, fast_sin_of_x)
    """
    def fix(typingctx, x, fast):
        if not isinstance(x, types.Float) or x != fast or x not in limits:
            return None
        limit = float(limits[x])

        def codegen(context, builder, sig, args):
            fty = context.get_value_type(x)
            fn = _define_fixup(builder.module, f"__functrans_{slow_symbol}_{x}_wide", fty, limit,
                               slow_symbol)
            return builder.call(fn, args)
        return x(x, x), codegen
    fix.__name__ = f"fix_{slow_symbol}"
    return intrinsic(fix)
