"""Build the tutorial notebooks from their sources and execute them.

Each ``src/NN_name.py`` is a notebook in the "percent" format: ``# %% [markdown]`` starts a
markdown cell (its lines are ``# ``-prefixed comments), ``# %%`` starts a code cell. Plain
Python files review and diff well; the executed ``NN_name.ipynb`` (outputs and plots
included) is what readers open on GitHub.

    python notebooks/build.py              # every notebook
    python notebooks/build.py 03_vmap      # just the ones named

Needs the ``notebooks`` extra (nbformat, nbclient, ipykernel, matplotlib).
"""
from __future__ import annotations

import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
SOURCES = sorted((HERE / "src").glob("[0-9][0-9]_*.py"))
TIMEOUT_S = 300  # per cell


def cells_of(source: str):
    """``[(kind, text), ...]`` of a percent-format source (kind: "markdown" or "code")."""
    cells, kind, lines = [], None, []

    def flush():
        text = "\n".join(lines).strip("\n")
        if kind is not None and text.strip():
            cells.append((kind, text))

    for line in source.splitlines():
        if line.startswith("# %%"):
            flush()
            kind, lines = ("markdown" if "[markdown]" in line else "code"), []
        elif kind == "markdown":
            lines.append(line[2:] if line.startswith("# ") else line.lstrip("#"))
        elif kind == "code":
            lines.append(line)
    flush()
    return cells


def notebook_of(source_path: pathlib.Path):
    """An unexecuted nbformat notebook for one source file."""
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for kind, text in cells_of(source_path.read_text()):
        new = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
        nb.cells.append(new(text))
    for i, cell in enumerate(nb.cells):  # stable ids: rebuilding gives a minimal diff
        cell["id"] = f"{source_path.stem}-{i}"
    return nb


def execute(nb, cwd: pathlib.Path, timeout=TIMEOUT_S):
    """Run every cell on a python3 Jupyter kernel (raises on the first cell error)."""
    from nbclient import NotebookClient
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def main(names):
    import nbformat
    for src in SOURCES:
        if names and not any(n in src.stem for n in names):
            continue
        t0 = time.perf_counter()
        nb = execute(notebook_of(src), HERE)
        nb.metadata.pop("widgets", None)
        nbformat.write(nb, HERE / f"{src.stem}.ipynb")
        print(f"{src.stem}.ipynb: executed in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
