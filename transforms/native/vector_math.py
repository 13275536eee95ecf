"""Users' Numba code in SIMD loops: its math calls given libmvec's vector variants.

Numba compiles ``math.exp(x)`` in a user's kernel as a call of ``llvm.exp.f64`` (or of
libm's scalar ``log1p`` and the like). In a loop, LLVM vectorizes a call only when the
callee names vector versions of itself, so a user's scalar kernel fused into a loop ran
one libm call per element (a softplus chain over a million floats: 12-21x the same math
written with ``functrans.numpy``, whose rules declare glibc's libmvec variants). Here the
harvested IR of users' code gets the same declarations as the native backend's own math
rules (``native/scalar.py``, through :func:`libmvec_declarations`): where the fast-math route uses libmvec for a function and
dtype, its calls go to the libm symbol declared with ``vector-function-abi-variant``.

    >>> ir = "declare double @llvm.exp.f64(double)\\n  %r = call double @llvm.exp.f64(double %x)\\n"
    >>> "llvm.exp" in with_vector_variants(ir) or not libmvec.AVAILABLE
    False
"""
from __future__ import annotations

import re
import zlib

from numba import types

from functrans.transforms.lowering import fastmath
from functrans.transforms.lowering import fastmath_libmvec as libmvec


__all__ = ["with_vector_variants", "libmvec_declarations"]

_DTYPES = (("f32", "float", types.float32, "f"), ("f64", "double", types.float64, ""))


def libmvec_declarations(sym, ty, nargs, nd) -> list:
    """``[(key, text)]``: the declarations that make calls of libm's ``sym`` (LLVM type
    ``ty``, ``nargs`` arguments, Numba dtype ``nd``) vectorizable with libmvec's variants:
    the variants, ``sym`` with the ``vector-function-abi-variant`` attribute naming them, and
    a global keeping them alive through linking."""
    variants = libmvec._variants(sym, nargs, nd)
    params = "v" * nargs
    mangled = ",".join(f"_ZGV_LLVM_N{n}{params}_{sym}({vs})" for n, vs in variants)
    decls, refs = [], []
    for n, vs in variants:
        vty = f"<{n} x {ty}>"
        decls.append((vs, f"declare {vty} @{vs}({', '.join([vty] * nargs)})"))
        refs.append(f"ptr @{vs}")
    attr = f"#{zlib.crc32(sym.encode()) % 1000000 + 10}"  # stable across processes
    decls.append((sym, f"declare {ty} @{sym}({', '.join([ty] * nargs)}) {attr}"))
    decls.append((attr, f"attributes {attr} = {{ nounwind willreturn memory(none) "
                        f'"vector-function-abi-variant"="{mangled}" }}'))
    keep = f"__functrans_keep.{sym}"
    decls.append((keep, f"@{keep} = weak global [{len(refs)} x ptr] [{', '.join(refs)}]"))
    return decls


def with_vector_variants(text: str) -> str:
    """``text`` (a harvested module) with its calls of libm functions that libmvec covers
    (as LLVM intrinsics or libm symbols) made vectorizable."""
    if not libmvec.AVAILABLE:
        return text
    extra = []
    for name, (base, nargs) in libmvec.FUNCTIONS.items():
        for suffix, ty, nd, f in _DTYPES:
            sym, intrinsic = base + f, f"llvm.{name}.{suffix}"
            if f"@{sym}(" not in text and f"@{intrinsic}(" not in text:
                continue
            if f'_{sym}(' in text and "vector-function-abi-variant" in text and \
                    re.search(rf'"vector-function-abi-variant"="[^"]*_{re.escape(sym)}\(', text):
                continue  # declared already (a module that went through here before)
            if not libmvec.supported(name, nd) or \
                    fastmath.implementation(name, "float32" if f else "float64") != "libmvec":
                continue
            text = text.replace(f"@{intrinsic}(", f"@{sym}(")
            text = re.sub(rf"^declare [^\n]*@{re.escape(sym)}\([^\n]*\n", "", text,
                          flags=re.M)
            for key, decl in libmvec_declarations(sym, ty, nargs, nd):
                # A variant or keep-alive global the module has already stays as it is.
                if key.startswith(("#", sym)) or f"@{key}" not in text:
                    extra.append(decl)
    return text + "\n".join(extra) + ("\n" if extra else "")
