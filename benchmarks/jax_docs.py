"""JAX's own documentation, run cell by cell on JAX and on functrans.

Not part of CI: it needs JAX's documentation sources (a checkout of github.com/jax-ml/jax; its
``docs/`` folder) and a Python with JAX (the reference)::

    python benchmarks/jax_docs.py --jax-src /path/to/jax --jax-python /path/to/python \\
        --out ~/jax-docs-results [--only functrans] [--docs new_docs/301] [--extra-path DIR]

Documents: under ``docs/``, the tutorials (``docs/*.md``: jit, autodiff, vmap, pytrees,
control flow, random numbers, callbacks, checkpointing, primitives, refs, hijax, sharding in
``parallel.md``, AOT in ``aot.md``, ...), ``debugging/``, the notebooks (``notebooks/``), the
101/201/301 guides (``new_docs/101``, ``201``, ``301``: arrays, pytrees, jit, sharding,
shard_map, AOT, callbacks, custom derivatives, refs, remat, ...) and the export guides
(``export/``); less the documents JAX's own build does not execute (``nb_execution_
excludepatterns`` in ``docs/conf.py``: accelerators, TensorFlow datasets, ...). The 401/501
guides (Pallas, CuTe, FFI; copies of the export guides) are left out. The 101/201/301 guides
are newer than JAX 0.10.2's release tag: use a checkout of JAX's main branch; the cells JAX
0.10.2 cannot run are not counted.

Cells: the ``{code-cell}`` cells of MyST documents (a notebook ``.ipynb`` only where it has no
MyST twin); in a document with no code cells, the ``>>>`` examples of its ``python`` blocks
(JAX's doctests: an example expecting a traceback passes when it raises that exception
type). Cells tagged ``raises-exception`` are skipped; IPython magics run their code once
(``%timeit f(x)`` runs ``f(x)``). Each document's cells run in order, in one namespace, in one
child process per document and framework: JAX's Python, and this checkout's Python under
``python -m functrans.as_jax``. A cell passes when it runs (its last expression is shown, as a
notebook would: ``repr``) without an exception within ``--timeout`` seconds. Cells failing on
JAX are not counted ("cells that JAX runs"); those failing there for a missing module are
"needs what isn't installed". Results (per cell: status, seconds, first error line) are saved
as JSON in ``--out``; ``--only functrans`` reruns one side and reuses the other's results.
"""
from __future__ import annotations

import argparse
import ast
import collections
import contextlib
import doctest
import fnmatch
import glob
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback

SETS = ("*.md", "debugging/*.md", "notebooks/*.md", "notebooks/*.ipynb", "new_docs/101/*.md",
        "new_docs/201/*.md", "new_docs/301/*.md", "export/*.md")
"""The documents, as globs under ``docs/``."""

FRAMEWORKS = ("jax", "functrans")


# ---------------------------------------------------------------------------------------------
# Extracting cells


def excluded_by_jax(docs: str) -> list[str]:
    """The patterns of documents JAX's own build does not execute (``docs/conf.py``)."""
    src = open(os.path.join(docs, "conf.py")).read()
    for node in ast.parse(src).body:
        if (isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None)
                == "nb_execution_excludepatterns"):
            return list(ast.literal_eval(node.value))
    return []


_FENCE = re.compile(r"^(`{3,})\{code-cell\}")


def myst_cells(text: str) -> list[dict]:
    """The ``{code-cell}`` cells of a MyST document: ``{"source", "tags"}``."""
    lines, cells, i = text.splitlines(), [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, body, i = m.group(1), [], i + 1
        while i < len(lines) and lines[i].rstrip() != fence:
            body.append(lines[i])
            i += 1
        i += 1
        tags, options = [], []
        if body and body[0].strip() == "---":  # a YAML block of options
            end = body.index("---", 1) if "---" in body[1:] else 0
            options, body = body[1:end], body[end + 1:]
        else:
            while body and body[0].startswith(":"):
                options.append(body.pop(0)[1:])
        for opt in options:
            if opt.strip().startswith("tags:"):
                tags += re.findall(r"[\w-]+", opt.split(":", 1)[1])
            elif opt.strip().startswith("- ") and tags is not None:
                tags.append(opt.strip()[2:].strip())
        cells.append({"source": "\n".join(body), "tags": tags})
    return cells


def notebook_cells(path: str) -> list[dict]:
    """The code cells of a ``.ipynb`` notebook."""
    nb = json.load(open(path))
    return [{"source": "".join(c["source"]) if isinstance(c["source"], list) else c["source"],
             "tags": c.get("metadata", {}).get("tags", [])}
            for c in nb["cells"] if c["cell_type"] == "code"]


_EXC_TYPE = re.compile(r"^([\w.]+)(?::|$)")


def doctest_cells(text: str) -> list[dict]:
    """The ``>>>`` examples of a Markdown document's ``python`` blocks, one cell each."""
    cells = []
    for block in re.findall(r"^```python\n(.*?)^```", text, re.S | re.M):
        for ex in doctest.DocTestParser().get_examples(block):
            if ex.options.get(doctest.SKIP):
                continue
            expect = None
            if ex.exc_msg is not None:
                m = _EXC_TYPE.match(ex.exc_msg.strip())
                expect = m.group(1).rsplit(".", 1)[-1] if m else "Exception"
            cells.append({"source": ex.source, "tags": [], "expect": expect})
    return cells


def documents(docs: str, selected: list[str] | None = None) -> dict[str, dict]:
    """``{relative path: {"cells", "doctest"}}`` for the documents of :data:`SETS`."""
    excluded = excluded_by_jax(docs)
    out = {}
    for pattern in SETS:
        for path in sorted(glob.glob(os.path.join(docs, pattern))):
            rel = os.path.relpath(path, docs)
            if any(fnmatch.fnmatch(rel, p) for p in excluded):
                continue
            if selected and not any(rel.startswith(s) for s in selected):
                continue
            if rel.endswith(".ipynb"):
                if os.path.exists(path[:-6] + ".md"):
                    continue  # the MyST twin (jupytext pair) is the same notebook
                cells, is_doctest = notebook_cells(path), False
            else:
                text = open(path).read()
                cells, is_doctest = myst_cells(text), False
                if not cells:
                    cells, is_doctest = doctest_cells(text), True
            if cells:
                out[rel] = {"cells": cells, "doctest": is_doctest}
    return out


# ---------------------------------------------------------------------------------------------
# Running one document's cells (the child process)


_LINE_MAGIC = re.compile(r"^(\s*)%(\w+)(.*)$")


def strip_magics(source: str) -> str:
    """IPython's magics as plain Python: timing magics run their code once, others drop."""
    lines = source.splitlines()
    if lines and lines[0].startswith("%%"):
        magic = lines[0][2:].split()
        if magic and magic[0] in ("time", "timeit", "capture"):
            lines = lines[1:]
        elif magic and magic[0] == "writefile":
            body = "\n".join(lines[1:]) + "\n"
            return f"open({magic[-1]!r}, 'w').write({body!r})"
        else:
            return ""
    out = []
    for line in lines:
        m = _LINE_MAGIC.match(line)
        if line.lstrip().startswith("!"):  # a shell command (pip install ...)
            out.append(line[:len(line) - len(line.lstrip())] + "pass")
        elif m and m.group(2) in ("time", "timeit"):
            code = m.group(3).strip()
            while code.startswith("-"):  # -n 10 -r 3 -o ...
                flag, _, code = code.partition(" ")
                if flag in ("-n", "-r", "-p"):
                    _, _, code = code.strip().partition(" ")
                code = code.strip()
            out.append(m.group(1) + code)
        elif m:
            out.append(m.group(1) + "pass")
        else:
            out.append(line)
    return "\n".join(out)


class CellTimeout(BaseException):
    """A cell ran past its time."""


def first_error_line(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0] if msg else ''}"[:300]


def innermost_frame(exc: BaseException, package: str) -> str:
    """Where in ``package`` the exception was raised (for sorting causes)."""
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if f"/{package}/" in frame.filename:
            where = f"{frame.filename.split(f'/{package}/')[-1]}:{frame.lineno}"
    return where


DOCTEST_PREAMBLE = "import jax, numpy as np\nlax, jnp = jax.lax, jax.numpy"
"""The names JAX's doctests have (``doctest_namespace`` in JAX's conftest.py)."""


def run_cells(cells: list[dict], timeout: float, package: str, preamble: str = "") -> None:
    """Run ``cells`` in order in one namespace, one JSON line per cell on stdout."""
    import signal
    os.environ.setdefault("MPLBACKEND", "Agg")
    namespace = {"__name__": "__main__"}
    exec(preamble, namespace)
    real_stdout = sys.stdout

    def on_alarm(*_):
        raise CellTimeout(f"cell ran past {timeout} s")
    signal.signal(signal.SIGALRM, on_alarm)
    for i, cell in enumerate(cells):
        record = {"i": i, "status": "pass", "error": "", "where": ""}
        if "raises-exception" in cell["tags"]:
            record["status"] = "skip"
        else:
            start = time.perf_counter()
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                with contextlib.redirect_stdout(io.StringIO()), \
                        contextlib.redirect_stderr(io.StringIO()):
                    raised = execute(strip_magics(cell["source"]), namespace)
            except (Exception, CellTimeout) as e:  # noqa: BLE001 - a cell's failure is data
                raised = e
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            expect = cell.get("expect")
            if expect and (raised is None or type(raised).__name__ != expect
                           and expect not in [t.__name__ for t in type(raised).__mro__]):
                record.update(status="fail", error=f"expected {expect}, got " + (
                    first_error_line(raised) if raised else "no exception"))
            elif raised is not None and not expect:
                record.update(status="fail", error=first_error_line(raised),
                              where=innermost_frame(raised, package))
            record["seconds"] = round(time.perf_counter() - start, 3)
        print(json.dumps(record), file=real_stdout, flush=True)


def execute(source: str, namespace: dict):
    """Run a cell; its last expression is shown (``repr``) as a notebook would. Returns
    the exception raised, if any, else None."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        return e
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    try:
        exec(compile(tree, "<cell>", "exec"), namespace)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)
            if value is not None:
                repr(value)
    except (Exception, CellTimeout) as e:  # noqa: BLE001 - a cell's failure is data
        return e
    return None


# ---------------------------------------------------------------------------------------------
# The parent: one child per document and framework


def run_document(name: str, doc: dict, framework: str, args) -> list[dict]:
    """The per-cell records of one document on one framework."""
    here = os.path.abspath(__file__)
    repo = os.path.dirname(os.path.dirname(here))
    env = dict(os.environ, MPLBACKEND="Agg", JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1")
    if doc["doctest"]:
        env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"  # as JAX's doctest CI
    if framework == "jax":
        cmd = [args.jax_python, here]
        env.pop("PYTHONPATH", None)
    else:
        cmd = [args.functrans_python, "-m", "functrans.as_jax", here]
        env["PYTHONPATH"] = os.pathsep.join([repo] + args.extra_path)
    with tempfile.TemporaryDirectory() as tmp:
        cells_file = os.path.join(tmp, "cells.json")
        json.dump(doc["cells"], open(cells_file, "w"))
        cmd += ["--child", cells_file, "--timeout", str(args.timeout), "--package",
                "jax" if framework == "jax" else "functrans"]
        if doc["doctest"]:
            cmd.append("--doctest")
        work = os.path.join(tmp, "work")
        os.mkdir(work)
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            out, err = proc.communicate(timeout=args.timeout * 3 + 60 * 2
                                        + len(doc["cells"]) * 10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            err = "the document ran past its time"
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    reason = (err.strip().splitlines() or ["child exited"])[-1][:300]
    for i in range(len(records), len(doc["cells"])):
        records.append({"i": i, "status": "fail", "where": "",
                        "error": f"not reached (the process ended: {reason})"})
    return records


_MISSING = re.compile(r"No module named '([\w.]+)'|Please install '([\w.]+)'")


def missing_module(record: dict) -> str | None:
    m = _MISSING.search(record.get("error", ""))
    name = m and (m.group(1) or m.group(2))
    if name and name.split(".")[0] != "jax":
        return name
    return None


def normalize(error: str) -> str:
    """An error line with its particulars (numbers, long quoted values) blurred; a name
    left undefined by an earlier failing cell is one cause, whatever the name."""
    if error.startswith("NameError"):
        return "NameError: a name an earlier failing cell would have defined"
    error = re.sub(r"'[^']{40,}'|\"[^\"]{40,}\"", "'…'", error)
    error = re.sub(r"0x[0-9a-f]+|\d+", "N", error)
    return error[:120]


def report(docs: dict, results: dict) -> dict:
    """Print per-document and total counts and the commonest causes; return the summary."""
    total_runs = total_pass = 0
    causes = collections.Counter()
    examples = {}
    missing = collections.Counter()
    print(f"{'document':58} {'cells':>5} {'JAX runs':>8} {'functrans':>9}")
    for name in docs:
        jax, ft = results["jax"].get(name), results["functrans"].get(name)
        if jax is None or ft is None:
            continue
        runs = passes = 0
        for cell, j, f in zip(docs[name]["cells"], jax, ft):
            if j["status"] == "skip":
                continue
            if j["status"] != "pass":
                mod = missing_module(j)
                if mod:
                    missing[mod] += 1
                continue
            runs += 1
            if f["status"] == "pass":
                passes += 1
            else:
                key = normalize(f["error"])
                causes[key] += 1
                examples.setdefault(key, []).append(f"{name}:{j['i']} {f.get('where', '')}")
        total_runs += runs
        total_pass += passes
        print(f"{name:58} {len(docs[name]['cells']):5} {runs:8} {passes:9}")
    pct = 100 * total_pass / max(total_runs, 1)
    print(f"\n{len(docs)} documents; {total_pass} of {total_runs} cells that JAX runs pass on "
          f"functrans ({pct:.1f}%)")
    if missing:
        print("cells needing what isn't installed (failing on JAX): "
              + ", ".join(f"{m} ({n})" for m, n in missing.most_common()))
    print("\ncommonest causes (functrans's first error line):")
    for key, n in causes.most_common(40):
        print(f"{n:4}  {key}\n      e.g. {'; '.join(examples[key][:3])}")
    return {"documents": len(docs), "runs": total_runs, "pass": total_pass}


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--jax-src", help="a JAX source checkout (its docs/ folder is read)")
    p.add_argument("--jax-python", help="a Python with JAX installed")
    p.add_argument("--functrans-python", default=sys.executable)
    p.add_argument("--extra-path", action="append", default=[],
                   help="a folder put on functrans's PYTHONPATH (libraries the docs use)")
    p.add_argument("--out", default=os.path.expanduser("~/.cache/functrans/jax_docs"),
                   help="the folder for the JSON results (outside the repository)")
    p.add_argument("--only", choices=FRAMEWORKS, help="run one side; reuse the other's results")
    p.add_argument("--report", action="store_true", help="only print the saved results")
    p.add_argument("--docs", nargs="*", help="only documents whose path starts with these")
    p.add_argument("--timeout", type=float, default=100, help="seconds per cell")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--package", default="functrans", help=argparse.SUPPRESS)
    p.add_argument("--doctest", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        run_cells(json.load(open(args.child)), args.timeout, args.package,
                  DOCTEST_PREAMBLE if args.doctest else "")
        return
    if not args.jax_src:
        p.error("--jax-src is required")
    docs = documents(os.path.join(args.jax_src, "docs"), args.docs)
    os.makedirs(args.out, exist_ok=True)
    results = {}
    for framework in FRAMEWORKS:
        path = os.path.join(args.out, f"{framework}.json")
        results[framework] = json.load(open(path)) if os.path.exists(path) else {}
        if args.report or args.only and args.only != framework:
            continue
        if framework == "jax" and not args.jax_python:
            p.error("--jax-python is required to run JAX's side")
        for name, doc in docs.items():
            start = time.perf_counter()
            results[framework][name] = run_document(name, doc, framework, args)
            ok = sum(r["status"] == "pass" for r in results[framework][name])
            print(f"[{framework}] {name}: {ok}/{len(doc['cells'])} pass "
                  f"({time.perf_counter() - start:.0f} s)", file=sys.stderr, flush=True)
            json.dump(results[framework], open(path, "w"), indent=0)
    report(docs, results)


if __name__ == "__main__":
    main(sys.argv[1:])
