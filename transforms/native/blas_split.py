"""Matrix products on Numba's thread pool: jit's ``?gemm`` cut into blocks, each a one-thread
BLAS call.

OpenBLAS runs a product's blocks on threads of its own, which wait for one another in
``sched_yield`` loops. When other processes hold the cores (a notebook on a laptop, a CI
runner, a shared server), that wait is ruinous. Measured on 2 cores with other work running,
a 512x128 @ 128x512 float32 product took 28-32 ms (p50) on two OpenBLAS threads, 0.7 ms on
one, and 0.9 ms as two blocks on Numba's pool.

So once jit compiles a program that may hold such a product (:func:`install_for`: a
product of at least ``SPLIT_MIN`` multiply-adds, counted from the jaxpr's static shapes), its
products run OpenBLAS on one thread. Each dtype's wrapper is compiled when a program first
needs it (on a cold cache, 11 ms each; a warm one loads it): programs of small products
never pay it, and OpenBLAS runs their products on one thread by itself. A product of at least ``SPLIT_MIN`` multiply-adds (OpenBLAS's own threshold for
using threads) is cut into one block of rows of the result (of columns, when it has more
columns) per thread of Numba's pool, the pool jit's parallel loops use: one pool for loops
and products, with the thread count ``numba.set_num_threads`` gives the calling thread (pmap's
shards get their share of the cores). A block's sums run over the whole contracted
dimension, but OpenBLAS may choose another kernel for a block than for the whole product, so
the last bits may depend on the thread count, as with OpenBLAS's own threads. The wrappers are LLVM functions registered as the
symbols kernels call (``functrans_sgemm``, ``functrans_dgemm``); their object code is cached
like kernels'. ``FUNCTRANS_BLAS_SPLIT=0`` keeps OpenBLAS's threads. Complex products are not
cut: they run on one thread once this is installed.

    >>> install() in (True, False)  # idempotent; False without jit's private BLAS copy
    True
"""
from __future__ import annotations

import math
import os
import threading

from llvmlite import binding as llvm

from functrans.core.ir import walk_jaxprs
from functrans.transforms.lowering import blas_library

from . import engine, parallel

__all__ = ["install", "install_for", "may_split", "SPLIT_MIN", "WRAPPER_OPT", "wrapper_ir"]

SPLIT_MIN = 1 << 18  # multiply-adds: smaller products run on the calling thread
# Unoptimized: the wrappers only compute block bounds around BLAS calls, and at -O0 each
# compiles in about half the time (11 ms against 21 on a cold cache).
WRAPPER_OPT = 0
_TILE = {"s": 16, "d": 8}  # rows per register tile of OpenBLAS's kernels: blocks are whole
_lock = threading.Lock()
_installed: dict = {}  # BLAS letter -> whether its products are cut


def wrapper_ir(dtype: str, ilp64: bool) -> str:
    """The LLVM IR of ``functrans_<dtype>gemm_split`` (``dtype``: "s" or "d"), which has
    ?gemm's CBLAS signature and calls ``functrans_<dtype>gemm_blas`` once or per block."""
    it = "i64" if ilp64 else "i32"
    ft = "float" if dtype == "s" else "double"
    size = 4 if dtype == "s" else 8
    tile = _TILE[dtype]
    blas = f"@functrans_{dtype}gemm_blas"
    sig = (f"i32, i32, i32, {it}, {it}, {it}, {ft}, ptr, {it}, ptr, {it}, {ft}, ptr, {it}")

    lines = [f"declare void {blas}({sig})",
             "declare i32 @get_num_threads()",
             "declare void @functrans_parallel_for(ptr, ptr, ptr, ptr, ptr, i64, i64, i32)", ""]
    # data slots (8 bytes each): 0 ta, 1 tb, 2 m, 3 n, 4 k, 5 alpha, 6 a, 7 lda, 8 b, 9 ldb,
    # 10 beta, 11 c, 12 ldc, 13 rows per block, 14 1 when cut by rows
    names = ["ta", "tb", "m", "n", "k", "alpha", "a", "lda", "b", "ldb", "beta", "c", "ldc",
             "per", "byrows"]
    types_ = ["i32", "i32", "i64", "i64", "i64", ft, "ptr", "i64", "ptr", "i64", ft, "ptr",
              "i64", "i64", "i64"]
    chunk = ["define internal void @chunk(ptr %args, ptr %dims, ptr %steps, ptr %data) "
             "nounwind {", "entry:",
             "  %first = load ptr, ptr %args",
             "  %start = ptrtoint ptr %first to i64",
             "  %count = load i64, ptr %dims",
             "  %stop = add i64 %start, %count"]
    chunk += parallel.read_slots_ir([(ty, f"%{name}") for name, ty in zip(names, types_)])
    narrow = [] if it == "i64" else [
        f"  %{v}.c = trunc i64 %{v} to i32" for v in ("m", "n", "k", "lda", "ldb", "ldc")]
    chunk += narrow
    nm = (lambda v: f"%{v}") if it == "i64" else (lambda v: f"%{v}.c")
    chunk += [
        "  %rows = icmp ne i64 %byrows, 0",
        "  %size = select i1 %rows, i64 %m, i64 %n",
        "  br label %loop",
        "loop:",
        "  %u = phi i64 [ %start, %entry ], [ %next, %done ]",
        "  %more = icmp slt i64 %u, %stop",
        "  br i1 %more, label %body, label %exit",
        "body:",
        "  %lo = mul i64 %u, %per",
        "  %end = add i64 %lo, %per",
        "  %short = icmp slt i64 %end, %size",
        "  %hi = select i1 %short, i64 %end, i64 %size",
        "  %len = sub i64 %hi, %lo",
        f"  %len.c = {'add i64 %len, 0' if it == 'i64' else 'trunc i64 %len to i32'}",
        "  %some = icmp sgt i64 %len, 0",
        "  br i1 %some, label %call, label %done",
        "call:",
        "  br i1 %rows, label %byrow, label %bycol",
        "byrow:",  # rows lo..hi of op(a) and of c
        "  %ta.t = icmp eq i32 %ta, 112",
        "  %arow = mul i64 %lo, %lda",
        "  %aoff = select i1 %ta.t, i64 %lo, i64 %arow",
        f"  %pa = getelementptr inbounds {ft}, ptr %a, i64 %aoff",
        "  %coff.r = mul i64 %lo, %ldc",
        f"  %pc.r = getelementptr inbounds {ft}, ptr %c, i64 %coff.r",
        f"  call void {blas}(i32 101, i32 %ta, i32 %tb, {it} %len.c, {it} {nm('n')}, "
        f"{it} {nm('k')}, {ft} %alpha, ptr %pa, {it} {nm('lda')}, ptr %b, {it} {nm('ldb')}, "
        f"{ft} %beta, ptr %pc.r, {it} {nm('ldc')})",
        "  br label %done",
        "bycol:",  # columns lo..hi of op(b) and of c
        "  %tb.t = icmp eq i32 %tb, 112",
        "  %brow = mul i64 %lo, %ldb",
        "  %boff = select i1 %tb.t, i64 %brow, i64 %lo",
        f"  %pb = getelementptr inbounds {ft}, ptr %b, i64 %boff",
        f"  %pc.c = getelementptr inbounds {ft}, ptr %c, i64 %lo",
        f"  call void {blas}(i32 101, i32 %ta, i32 %tb, {it} {nm('m')}, {it} %len.c, "
        f"{it} {nm('k')}, {ft} %alpha, ptr %a, {it} {nm('lda')}, ptr %pb, {it} {nm('ldb')}, "
        f"{ft} %beta, ptr %pc.c, {it} {nm('ldc')})",
        "  br label %done",
        "done:",
        "  %next = add i64 %u, 1",
        "  br label %loop",
        "exit:",
        "  ret void",
        "}", ""]
    lines += chunk

    ext = (lambda v: f"%{v}") if it == "i64" else (lambda v: f"%{v}.w")
    main = [f"define void @functrans_{dtype}gemm_split(i32 %order, i32 %ta, i32 %tb, "
            f"{it} %m, {it} %n, {it} %k, {ft} %alpha, ptr %a, {it} %lda, ptr %b, {it} %ldb, "
            f"{ft} %beta, ptr %c, {it} %ldc) nounwind {{", "entry:"]
    if it != "i64":
        main += [f"  %{v}.w = sext i32 %{v} to i64" for v in ("m", "n", "k", "lda", "ldb",
                                                               "ldc")]
    main += [
        "  %nt = call i32 @get_num_threads()",
        f"  %mn = mul i64 {ext('m')}, {ext('n')}",
        f"  %mnk = mul i64 %mn, {ext('k')}",
        f"  %big = icmp sge i64 %mnk, {SPLIT_MIN}",
        "  %multi = icmp sgt i32 %nt, 1",
        "  %rowmajor = icmp eq i32 %order, 101",
        f"  %rows = icmp sge i64 {ext('m')}, {ext('n')}",
        f"  %size = select i1 %rows, i64 {ext('m')}, i64 {ext('n')}",
        f"  %wide = icmp sge i64 %size, {2 * tile}",
        "  %ok1 = and i1 %big, %multi",
        "  %ok2 = and i1 %ok1, %rowmajor",
        "  %ok = and i1 %ok2, %wide",
        "  br i1 %ok, label %split, label %direct",
        "direct:",
        f"  call void {blas}(i32 %order, i32 %ta, i32 %tb, {it} %m, {it} %n, {it} %k, "
        f"{ft} %alpha, ptr %a, {it} %lda, ptr %b, {it} %ldb, {ft} %beta, ptr %c, {it} %ldc)",
        "  ret void",
        "split:",
        "  %data = alloca [16 x i64], align 16",
        "  %nt64 = sext i32 %nt to i64",
        "  %per0 = add i64 %size, %nt64",
        "  %per1 = sub i64 %per0, 1",
        "  %per2 = sdiv i64 %per1, %nt64",
        f"  %per3 = add i64 %per2, {tile - 1}",
        f"  %per4 = sdiv i64 %per3, {tile}",
        f"  %per = mul i64 %per4, {tile}",
        "  %u0 = add i64 %size, %per",
        "  %u1 = sub i64 %u0, 1",
        "  %units = sdiv i64 %u1, %per",
        "  %byrows = zext i1 %rows to i64"]
    values = {"ta": "%ta", "tb": "%tb", "m": ext("m"), "n": ext("n"), "k": ext("k"),
              "alpha": "%alpha", "a": "%a", "lda": ext("lda"), "b": "%b", "ldb": ext("ldb"),
              "beta": "%beta", "c": "%c", "ldc": ext("ldc"), "per": "%per",
              "byrows": "%byrows"}
    main += parallel.write_slots_ir([(ty, values[name]) for name, ty in zip(names, types_)])
    main += [
        *parallel.launch_ir("%units", "%nt"),
        "  ret void",
        "}", ""]
    return "\n".join(lines + main)


def may_split(jaxpr) -> set:
    """The BLAS letters ("s": float32, "d": float64) of the products ``jaxpr`` (or a program
    nested in it) may cut: a ``dot_general`` of at least ``SPLIT_MIN`` multiply-adds in
    all, or a convolution whose bound (the kernel's size times the larger of input and
    output) reaches it. Bounds, not exact counts: a program that cuts nothing may install a
    wrapper, never the reverse.

        >>> from functrans.core.tracing import make_jaxpr
        >>> import numpy as np
        >>> may_split(make_jaxpr(lambda x: x @ x)(np.ones((4, 4))).jaxpr)
        set()
        >>> may_split(make_jaxpr(lambda x: x @ x)(np.ones((64, 64), np.float32)).jaxpr)
        {'s'}
    """
    found: set = set()
    _collect(jaxpr, found)
    return found


def _collect(jaxpr, found):
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "dot_general":
            (contracting, _), _ = eqn.params["dimension_numbers"]
            lhs = eqn.inputs[0].aval.shape
            macs = math.prod(eqn.outputs[0].aval.shape) * math.prod(lhs[d] for d in contracting)
        elif name == "conv_general_dilated":
            lhs, rhs = (v.aval.shape for v in eqn.inputs[:2])
            macs = math.prod(rhs) * max(math.prod(lhs), math.prod(eqn.outputs[0].aval.shape))
        else:
            for j in walk_jaxprs(eqn.params):
                _collect(j, found)
            continue
        letter = _LETTERS.get(str(eqn.outputs[0].aval.dtype))
        if letter is not None and macs >= SPLIT_MIN:
            found.add(letter)


_LETTERS = {"float32": "s", "float64": "d"}


def install_for(jaxpr) -> bool:
    """:func:`install` for the products ``jaxpr`` may cut (:func:`may_split`); whether
    products are cut. Until a program needs one, a ``?gemm`` symbol stays OpenBLAS's own."""
    missing = "".join(sorted(may_split(jaxpr) - _installed.keys()))
    return install(missing) if missing else blas_library.split_products


def install(letters: str = "sd") -> bool:
    """Make jit's real products of the BLAS ``letters`` ("s", "d") run cut on Numba's pool
    (each once); whether products are cut. Not without jit's private OpenBLAS copy (whose
    thread count jit may set without touching NumPy's), with Numba's workqueue layer (it
    cannot run two regions at once: pmap's shards would collide), or with
    ``FUNCTRANS_BLAS_SPLIT=0``."""
    with _lock:
        for letter in letters:
            if letter not in _installed:
                _installed[letter] = _install(letter)
    return blas_library.split_products


def _install(letter: str) -> bool:
    lib = blas_library.SINGLE if letter == "s" else blas_library.JIT
    if lib is None or not lib.private or lib.threads() is None \
            or os.environ.get("FUNCTRANS_BLAS_SPLIT", "1") == "0":
        return False
    parallel.ensure_threads()
    import numba
    if numba.threading_layer() == "workqueue":
        return False
    text = wrapper_ir(letter, lib.ilp64)
    symbol = engine.symbol_for(f"ft_{letter}gemm_split_O{WRAPPER_OPT}", text)
    obj = engine.cached_object(symbol)
    if obj is None:
        # (The defined name is fixed; the symbol only names the cache entry.)
        obj = engine.compile_ir(text, opt=WRAPPER_OPT)
        engine.store_object(symbol, obj)
    llvm.add_symbol(f"functrans_{letter}gemm", engine.load(f"functrans_{letter}gemm_split", obj))
    for each in {id(x): x for x in (blas_library.JIT, blas_library.SINGLE)}.values():
        each.set_threads(1)  # (jit's copies: float32's may be a second one)
    blas_library.split_products = True
    return True
