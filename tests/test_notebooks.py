"""The notebooks run top to bottom: their code cells are executed in order in one namespace,
as a kernel would (no Jupyter needed; plots go to matplotlib's non-interactive backend)."""
import json
import pathlib

import pytest

NOTEBOOKS = sorted((pathlib.Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace = {"__name__": "__main__"}
    for i, cell in enumerate(json.loads(path.read_text())["cells"]):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        assert not any(line.lstrip().startswith(("%", "!")) for line in source.splitlines()), \
            f"cell {i} uses IPython syntax, which this test cannot run"
        exec(compile(source, f"{path.name}[cell {i}]", "exec"), namespace)
