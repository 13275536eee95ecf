"""Every tutorial notebook runs top to bottom on a real Jupyter kernel (nbclient + ipykernel),
so what readers execute is what CI executes. A notebook states its results with ``assert``
in its own cells (an accuracy, an agreement with NumPy), so a cell error fails the test.

The committed notebooks are the built ones: their cells match ``notebooks/src`` and every code
cell carries its outputs."""
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT_S = 240

_spec = importlib.util.spec_from_file_location("notebook_build", ROOT / "notebooks" / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)


@pytest.fixture(scope="module")
def python3_kernel(tmp_path_factory):
    """Make the ``python3`` kernel this interpreter. A fresh ``pip install -e .[dev]`` has
    ipykernel but may have no kernel spec, or find another Python's ``python3`` spec first
    (a user-wide one): install one into the environment, and if another one still wins, put
    a private spec first on JUPYTER_PATH for the duration of these tests."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    def resolves_here():
        try:
            argv = KernelSpecManager().get_kernel_spec("python3").argv
        except NoSuchKernel:
            return False
        return argv[0] in ("python", sys.executable) or \
            os.path.realpath(argv[0]) == os.path.realpath(sys.executable)

    old = os.environ.get("JUPYTER_PATH")
    if not resolves_here():
        subprocess.run([sys.executable, "-m", "ipykernel", "install", "--sys-prefix"],
                       check=True, capture_output=True)
    if not resolves_here():
        share = tmp_path_factory.mktemp("jupyter")
        subprocess.run([sys.executable, "-m", "ipykernel", "install", "--prefix", str(share)],
                       check=True, capture_output=True)
        os.environ["JUPYTER_PATH"] = os.pathsep.join(
            [str(share / "share" / "jupyter")] + ([old] if old else []))
    assert resolves_here()
    yield
    if old is None:
        os.environ.pop("JUPYTER_PATH", None)
    else:
        os.environ["JUPYTER_PATH"] = old


def test_there_are_tutorials():
    assert len(NOTEBOOKS) >= 7
    assert [p.stem for p in NOTEBOOKS] == [p.stem for p in build.SOURCES]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_is_built_and_executed(path):
    nb = nbformat.read(path, as_version=4)
    want = build.cells_of((ROOT / "notebooks" / "src" / f"{path.stem}.py").read_text())
    assert [(c.cell_type, c.source) for c in nb.cells] == want, \
        f"{path.name} is out of date: run python notebooks/build.py {path.stem}"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), f"{path.name} has unexecuted cells"
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    assert sum(c.cell_type == "markdown" for c in nb.cells) >= 5  # tutorials explain


@pytest.mark.timeout(900)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes_on_a_kernel(path, python3_kernel, tmp_path, monkeypatch):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:  # run from scratch, not from the committed outputs
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    # The kernel inherits this environment, less the suite's FUNCTRANS_JIT_TIERED=0 (readers
    # run with tiered jit on); a fresh working directory keeps files a notebook writes out
    # of the repository.
    monkeypatch.delenv("FUNCTRANS_JIT_TIERED", raising=False)
    build.execute(nb, tmp_path, timeout=CELL_TIMEOUT_S)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors
