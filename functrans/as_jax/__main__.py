"""``python -m functrans.as_jax script.py [args]``, ``python -m functrans.as_jax -m module
[args]`` or ``python -m functrans.as_jax -c code [args]``: run a JAX program (or a module such
as ``pytest``) with ``import jax`` resolving to functrans."""
from __future__ import annotations

import runpy
import sys

from functrans import as_jax


def main(argv: list[str]) -> None:
    """Run ``argv`` (``[script, *args]``, ``["-m", module, *args]`` or ``["-c", code, *args]``)
    under :func:`install`."""
    if not argv or argv[0] in ("-h", "--help") or argv[0] in ("-m", "-c") and len(argv) < 2:
        print(__doc__.strip())
        raise SystemExit(0 if argv and argv[0] in ("-h", "--help") else 2)
    as_jax.install()
    if argv[0] == "-m":
        sys.argv = [argv[1]] + argv[2:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[0] == "-c":
        sys.argv = ["-c"] + argv[2:]
        sys.path.insert(0, "")
        exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
    else:
        sys.argv = list(argv)
        sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(argv[0])))
        runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
