"""LLVM IR text to object code, in this process or in a worker process.

This module imports nothing but llvmlite and the standard library, so that it can also run
as a script: a compile worker reading jobs from its standard input and writing object code
to its standard output (:mod:`.workers` starts it). llvmlite serializes every LLVM call in a
process behind one lock, so a second process is the only way to compile on two cores.

    >>> Compiler().compile("define i32 @ft_answer() {\\n  ret i32 42\\n}\\n", {}, 2, True)[:4]
    b'\\x7fELF'
"""
from __future__ import annotations

import pickle
import re
import struct
import sys

import llvmlite.binding as llb

__all__ = ["Compiler", "serve", "PIPELINE"]

PIPELINE = ("kernels -O2 unrolled; drivers and regions -O2 rolled but forced; vectorized; "
            "loop-free drivers fast instruction selection (3)")
"""Describes how modules are compiled; part of every cache key (change it when the pipeline
changes, so that code compiled otherwise is not reused)."""


class Compiler:
    """Compiles modules for one target machine (``cpu``, ``features``; default: the host)."""

    def __init__(self, cpu: str | None = None, features: str | None = None):
        llb.initialize_native_target()
        llb.initialize_native_asmprinter()
        self.cpu = cpu or llb.get_host_cpu_name()
        self.features = llb.get_host_cpu_features().flatten() if features is None else features
        target = llb.Target.from_default_triple()
        self.tm = target.create_target_machine(cpu=self.cpu, features=self.features, opt=3,
                                               codemodel="jitdefault")
        # Code generation without optimization (fast instruction selection and register
        # allocation): 3-4x quicker on a driver that only calls kernels in sequence, whose
        # own instructions take no measurable time when it runs.
        self.tm_quick = target.create_target_machine(cpu=self.cpu, features=self.features,
                                                     opt=0, codemodel="jitdefault")
        self.triple, self.layout = self.tm.triple, str(self.tm.target_data)

    def compile(self, text: str, links: dict, opt: int, unroll: bool) -> bytes:
        """Object code for IR ``text`` with ``links`` (symbol -> IR text defining it) linked
        in and made internal, optimized at ``opt`` (``unroll=False``: loops kept rolled, and
        a module left without loops gets quick code generation). Raises ``RuntimeError``
        naming LLVM's complaint about IR that does not parse or verify (a generator bug)."""
        module = self.optimized(text, links, opt, unroll)
        if not unroll and not has_loops(str(module)):
            return self.tm_quick.emit_object(module)
        return self.tm.emit_object(module)

    def optimized(self, text: str, links: dict, opt: int, unroll: bool):
        """The optimized module of :meth:`compile`."""
        try:
            module = llb.parse_assembly(text)
            for extra in links.values():
                module.link_in(llb.parse_assembly(extra), preserve=False)
            for symbol in links:
                module.get_function(symbol).linkage = "internal"
            module.triple = self.triple
            module.data_layout = self.layout
            module.verify()
        except RuntimeError as e:
            raise RuntimeError(f"native code generation produced invalid LLVM IR: {e}") \
                from None
        pto = llb.create_pipeline_tuning_options(speed_level=opt)
        pto.loop_vectorization = opt >= 2
        pto.slp_vectorization = opt >= 2
        if not unroll:  # loops marked for full unrolling still are
            pto.loop_unrolling = pto.loop_interleaving = False
        pb = llb.create_pass_builder(self.tm, pto)
        pb.getModulePassManager().run(module, pb)
        return module


def has_loops(text: str) -> bool:
    """Whether IR ``text`` has a branch back to its function's current or an earlier block
    (LLVM lays a loop's header out before its body).

        >>> has_loops("define void @f() {\\nentry:\\n  br label %b\\nb:\\n  br label %b\\n}")
        True
    """
    seen: set = set()
    for line in text.splitlines():
        if line.startswith("define "):
            seen = set()
        elif line[:1].isspace():
            if any(t in seen for t in _TARGET.findall(line)):
                return True
        else:
            m = _LABEL.match(line)
            if m:
                seen.add(m.group(1))
    return False


_LABEL = re.compile(r'^("[^"]*"|[-\w$.]+):(\s|$)')  # a block's label line
_TARGET = re.compile(r'label %("[^"]*"|[-\w$.]+)')   # a branch target


# -- the worker process: length-prefixed pickles over its standard streams ---------------------

def _read(stream):
    head = stream.read(8)
    if len(head) < 8:
        return None
    (n,) = struct.unpack("<Q", head)
    return pickle.loads(stream.read(n))


def _write(stream, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def serve(inp=None, out=None) -> None:
    """The worker loop: the first message is ``(cpu, features)``, then each is ``(text, links,
    opt, unroll)`` answered with ``("ok", object code)`` or ``("error", message)``; it ends
    when its input closes."""
    inp = inp or sys.stdin.buffer
    out = out or sys.stdout.buffer
    cpu, features = _read(inp)
    compiler = Compiler(cpu, features)
    while True:
        job = _read(inp)
        if job is None:
            return
        try:
            _write(out, ("ok", compiler.compile(*job)))
        except Exception as e:  # reported to the parent, which raises it there
            _write(out, ("error", f"{type(e).__name__}: {e}"))


if __name__ == "__main__":
    serve()
