"""Time to the first compiled result of model programs (``models.py``), functrans against JAX,
each run in a fresh process.

For every program, a fresh functrans process with an empty kernel cache directory
(``FUNCTRANS_CACHE_DIR`` set to a new temporary directory) builds the program, calls it once
and calls ``block_until_ready`` on every output leaf: functrans's tiered jit returns the first
call from its interpreter while the kernel compiles, and ``block_until_ready`` waits for the
kernel, so the wall time from before the call to after the block is the time to the first
compiled result. Then it times the first K calls of a training loop (each blocked; a stall
shows as a slow call after the first) and the steady-state step (median of blocked calls).
JAX does the same in its own fresh process (``--jax-python``; default: the
``FUNCTRANS_BENCH_JAX_PYTHON`` environment variable, else this interpreter when it has JAX). ``--warm`` adds a second process per framework
on the same cache directory (JAX: its persistent compilation cache, enabled on that directory
for both of its runs).

    python benchmarks/bench_compile.py [--programs transformer,mlp,samplers,vae]
        [--mlp-depths 10,20,40,150] [--blocks 2] [--calls 5] [--timeout 600] [--warm]
        [--json results.json]

A process that runs past ``--timeout`` seconds is killed and shows as "> timeout".
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from models import DEFAULT_JAX_PYTHON, SAMPLERS, agree  # noqa: E402
from timing import cpu_name, fmt, median_time  # noqa: E402

_MARK = "BENCH-COMPILE-RESULT "
GROUPS = ("transformer", "mlp", "samplers", "vae")


# ---- the child process ---------------------------------------------------------------------
def child(framework, program, calls, jax_cache=None):
    """Runs in a fresh process: builds ``program`` in ``framework`` and returns its timings
    (seconds) and the summary of its first output."""
    w = time.perf_counter()
    import models
    m = models.namespace(framework)
    if jax_cache:
        import jax
        jax.config.update("jax_compilation_cache_dir", jax_cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    if framework == "jax":
        import jax
        block, version = jax.block_until_ready, f"jax {jax.__version__}"
    else:
        import functrans
        import numba
        block = functrans.block_until_ready
        version = f"functrans {functrans.__version__}, numba {numba.__version__}"
    res = {"import": time.perf_counter() - w}
    w = time.perf_counter()
    p = models.build(m, program)
    res["build"] = time.perf_counter() - w

    w = time.perf_counter()
    out = p.fn(*p.args)
    res["first_return"] = time.perf_counter() - w
    block(out)
    res["first_ready"] = time.perf_counter() - w
    res["summary"] = p.summary(out)
    res["expected"] = p.expected
    times, args = [res["first_ready"]], p.args
    for _ in range(calls - 1):
        args = p.advance(args, out)
        w = time.perf_counter()
        out = p.fn(*args)
        block(out)
        times.append(time.perf_counter() - w)
    res["calls"] = times
    res["steady"] = median_time(lambda: block(p.fn(*p.args)), repeat=9, warmup=1,
                                min_time=0.3)
    if p.rebatch is not None:  # a new batch size of the program compiled above
        bigger = p.rebatch(p.args)
        w = time.perf_counter()
        block(p.fn(*bigger))
        res["rebatch_ready"] = time.perf_counter() - w
    import numpy
    res["version"] = f"{version}, numpy {numpy.__version__}"
    return res


def child_loop(program, calls):
    """Runs in a fresh process: a cold functrans training loop that never waits for the
    compiler (no ``block_until_ready``; each call's first output is read back, so it is
    computed). Per call: seconds, and whether code was still compiling when it started (it
    then ran on the interpreter)."""
    import numpy
    import models
    from functrans.core import background
    from functrans.tree_util import tree_leaves
    m = models.namespace("functrans")
    p = models.build(m, program)
    times, compiling, args = [], [], p.args
    for _ in range(calls):
        busy = bool(background._running) or not times
        w = time.perf_counter()
        out = p.fn(*args)
        numpy.asarray(tree_leaves(out)[0])
        times.append(time.perf_counter() - w)
        compiling.append(busy)
        args = p.advance(args, out)
    return {"loop": times, "compiling": compiling}


# ---- the parent ----------------------------------------------------------------------------
def run_child(python, framework, program, calls, timeout, cache_dir, jax_cache=False,
              loop=False):
    """One fresh process for ``program``; its results, or ``{"error": ...}`` (``"timeout"``
    when it ran past ``timeout`` seconds; it is killed with its process group). ``loop``: the
    cold training loop of :func:`child_loop` instead."""
    cmd = [python, os.path.abspath(__file__), "--child", program, "--framework", framework,
           "--calls", str(calls)] + (["--child-loop"] if loop else [])
    if jax_cache:
        cmd += ["--jax-cache", cache_dir]
    env = dict(os.environ, FUNCTRANS_CACHE_DIR=cache_dir)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    w = time.perf_counter()
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"error": "timeout", "wall": time.perf_counter() - w}
    lines = [ln for ln in stdout.splitlines() if ln.startswith(_MARK)]
    if proc.returncode or not lines:
        return {"error": (stderr.strip().splitlines() or ["exit %d" % proc.returncode])[-1],
                "stderr": stderr[-4000:]}
    return json.loads(lines[-1][len(_MARK):])


def expand(programs, depths, blocks):
    """Program names (``models.build``'s) for the ``--programs`` groups or names."""
    names = []
    for g in programs:
        if g == "transformer":
            names.append(f"transformer-{blocks}")
        elif g == "mlp":
            names += [f"mlp-{d}" for d in depths]
        elif g == "samplers":
            names += list(SAMPLERS)
        else:
            names.append(g)
    return names


def measure(names, opts, jax_python):
    """{program: {"functrans": res, "jax": res, "functrans warm": ..., "jax warm": ...}}."""
    results = {}
    for name in names:
        r = results[name] = {}
        runs = [("functrans", sys.executable)] + ([("jax", jax_python)] if jax_python else [])
        for fw, python in runs:
            with tempfile.TemporaryDirectory(prefix="bench_compile_") as cache:
                r[fw] = run_child(python, fw, name, opts.calls, opts.timeout, cache,
                                  jax_cache=opts.warm and fw == "jax")
                _progress(name, fw, r[fw])
                if opts.warm:
                    r[fw + " warm"] = run_child(python, fw, name, opts.calls, opts.timeout,
                                                cache, jax_cache=fw == "jax")
                    _progress(name, fw + " warm", r[fw + " warm"])
        if opts.loop:
            with tempfile.TemporaryDirectory(prefix="bench_compile_") as cache:
                r["loop"] = run_child(sys.executable, "functrans", name, opts.loop,
                                      opts.timeout, cache, loop=True)
    return results


def _progress(name, label, res):
    if "loop" in res:
        return
    if "error" in res:
        print(f"  {name} {label}: {res['error']}", file=sys.stderr, flush=True)
    else:
        print(f"  {name} {label}: first compiled result {fmt(res['first_ready'])}, "
              f"steady {fmt(res['steady'])}", file=sys.stderr, flush=True)


def _cell(res, key):
    if res is None:
        return "-"
    if "error" in res:
        return "> timeout" if res["error"] == "timeout" else "error"
    return fmt(res[key])


def _ratio(a, b, key):
    if not a or not b or "error" in a or "error" in b or not b[key]:
        return "-"
    return f"{a[key] / b[key]:.2f}x"


def _agreement(a, b):
    if not a or not b or "error" in a or "error" in b:
        return "-"
    return agree(a["summary"], b["summary"], a.get("expected"))[1]


def _table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    fmt_row = " | ".join(f"{{:{w}}}" for w in widths)
    out = [fmt_row.format(*header), "-+-".join("-" * w for w in widths)]
    out += [fmt_row.format(*r) for r in rows]
    return "\n".join(out)


def _loop_table(results, calls):
    """The cold training loops: the first call (trace and interpreter), the interpreted step
    (median of the later calls that started while code was compiling), the slowest later
    call and its ratio to the interpreted step, the compiled step, and how many calls were
    interpreted."""
    header = ["program", "first call", "interpreted step", "slowest later call", "ratio",
              "compiled step", "calls interpreted"]
    rows = []
    for name, r in results.items():
        res = r.get("loop")
        if not res or "error" in res:
            rows.append([name] + [(res or {}).get("error", "-")] + ["-"] * 5)
            continue
        times, busy = res["loop"], res["compiling"]
        interp = [t for t, b in zip(times[1:], busy[1:]) if b]
        compiled = [t for t, b in zip(times[1:], busy[1:]) if not b]
        step = sorted(interp)[len(interp) // 2] if interp else None
        later = max(times[1:]) if len(times) > 1 else None
        rows.append([name, fmt(times[0]), fmt(step) if step else "-", fmt(later),
                     f"{later / step:.2f}x" if step else "-",
                     fmt(sorted(compiled)[len(compiled) // 2]) if compiled else "-",
                     f"{sum(busy)} of {len(busy)}"])
    return (f"Cold training loop that never waits for the compiler ({calls} calls, each output "
            "read back; functrans):\n" + _table(header, rows))


def report(results, opts):
    """The tables: first compiled result and steady step against JAX (and the warm-cache runs
    with ``--warm``), then the first calls of each training loop."""
    versions = sorted({res["version"] for r in results.values() for res in r.values()
                       if "version" in res})
    lines = [f"CPU: {cpu_name()} ({os.cpu_count()} logical cores); Python "
             f"{platform.python_version()}; " + "; ".join(versions),
             f"fresh process per program and framework, empty cache directory; "
             f"timeout {opts.timeout:g} s", ""]
    header = ["program", "functrans first compiled result", "JAX", "ratio",
              "functrans steady", "JAX steady", "ratio", "loss agreement (functrans / JAX)"]
    rows = []
    for name, r in results.items():
        ft, jx = r.get("functrans"), r.get("jax")
        rows.append([name, _cell(ft, "first_ready"), _cell(jx, "first_ready"),
                     _ratio(ft, jx, "first_ready"), _cell(ft, "steady"), _cell(jx, "steady"),
                     _ratio(ft, jx, "steady"), _agreement(ft, jx)])
    lines.append(_table(header, rows))
    if opts.warm:
        header = ["program", "functrans warm cache", "JAX warm cache", "ratio"]
        rows = [[name, _cell(r.get("functrans warm"), "first_ready"),
                 _cell(r.get("jax warm"), "first_ready"),
                 _ratio(r.get("functrans warm"), r.get("jax warm"), "first_ready")]
                for name, r in results.items()]
        lines += ["", "Second process on the same cache directory:", _table(header, rows)]
    header = ["program", "framework", "import", "first call returned"] + [
        f"call {i + 1}" for i in range(opts.calls)]
    rows = []
    for name, r in results.items():
        for fw, res in r.items():
            if fw == "loop":
                continue
            if "error" in res:
                rows.append([name, fw, _cell(res, "import"), _cell(res, "first_return")]
                            + [_cell(res, "calls")] * opts.calls)
            else:
                rows.append([name, fw, fmt(res["import"]), fmt(res["first_return"])]
                            + [fmt(t) for t in res["calls"]])
    lines += ["", f"First {opts.calls} calls of a training loop, each blocked (call 1 = first "
              "compiled result; functrans's first call returns from the interpreter):",
              _table(header, rows)]
    rows = [[name, _cell(r.get("functrans"), "rebatch_ready"), _cell(r.get("jax"), "rebatch_ready"),
             _ratio(r.get("functrans"), r.get("jax"), "rebatch_ready")]
            for name, r in results.items() if "rebatch_ready" in r.get("functrans", {})]
    if rows:
        lines += ["", "Twice the batch, in the same process after the first size ran (first "
                  "compiled result):", _table(["program", "functrans", "JAX", "ratio"], rows)]
    if opts.loop:
        lines += ["", _loop_table(results, opts.loop)]
    errors = [(n, fw, res) for n, r in results.items() for fw, res in r.items()
              if "error" in res and res["error"] != "timeout"]
    for n, fw, res in errors:
        lines.append(f"\n{n} ({fw}) failed: {res.get('stderr', res['error'])[-1500:]}")
    return "\n".join(lines)


def main(argv=None):
    """Command line: see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", default=",".join(GROUPS),
                        help="groups (transformer, mlp, samplers, vae) or names "
                             "(transformer-1, mlp-40, gamma, poisson, beta)")
    parser.add_argument("--mlp-depths", default="10,20,40,150")
    parser.add_argument("--blocks", type=int, default=2, help="transformer blocks")
    parser.add_argument("--calls", type=int, default=5, help="training-loop calls timed")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds per process")
    parser.add_argument("--warm", action="store_true",
                        help="also a second process on the same cache directory")
    parser.add_argument("--loop", type=int, default=0, metavar="N",
                        help="also a cold functrans training loop of N calls that never waits "
                             "for the compiler (stalls: slowest call / interpreted step)")
    parser.add_argument("--child-loop", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--jax-python", default=None,
                        help="Python with JAX (default: $FUNCTRANS_BENCH_JAX_PYTHON, else this "
                             "one if it has JAX); 'none' skips JAX")
    parser.add_argument("--json", metavar="PATH", help="dump the raw results here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--framework", default="functrans", help=argparse.SUPPRESS)
    parser.add_argument("--jax-cache", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.child:
        res = (child_loop(opts.child, opts.calls) if opts.child_loop else
               child(opts.framework, opts.child, opts.calls, opts.jax_cache))
        print(_MARK + json.dumps(res), flush=True)
        return
    jax_python = opts.jax_python
    if jax_python is None:
        import importlib.util
        jax_python = (os.environ["FUNCTRANS_BENCH_JAX_PYTHON"]
                      if os.environ.get("FUNCTRANS_BENCH_JAX_PYTHON") else
                      sys.executable if importlib.util.find_spec("jax") else None)
    elif jax_python == "none":
        jax_python = None
    names = expand(opts.programs.split(","),
                   [int(d) for d in opts.mlp_depths.split(",") if d], opts.blocks)
    t0 = time.perf_counter()
    results = measure(names, opts, jax_python)
    print(report(results, opts))
    print(f"\n(total {time.perf_counter() - t0:.0f} s)")
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump({"cpu": cpu_name(), "cores": os.cpu_count(), "timeout": opts.timeout,
                       "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
