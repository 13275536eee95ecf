"""The layers ARCHITECTURE.md describes, enforced: import-linter's contracts in
pyproject.toml (every import counts, function-local ones too), and every package installed.

import-linter reads packages from the file system, where ``transforms/`` is not yet
``functrans/transforms``: the package is laid out as it installs in a temporary folder.
"""
import os
import pathlib
import shutil
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _installed_layout(tmp_path) -> pathlib.Path:
    site = tmp_path / "site"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "data")
    shutil.copytree(ROOT / "functrans", site / "functrans", ignore=ignore)
    shutil.copytree(ROOT / "transforms", site / "functrans" / "transforms", ignore=ignore)
    return site


def test_the_import_contracts_hold(tmp_path):
    site = _installed_layout(tmp_path)
    lint = pathlib.Path(sys.executable).with_name("lint-imports")
    env = dict(os.environ, PYTHONPATH=str(site))
    r = subprocess.run([str(lint), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-12000:] + r.stderr[-2000:]
    assert "BROKEN" not in r.stdout and "0 broken" in r.stdout


def test_every_package_is_installed():
    """pyproject's package list names every folder with an ``__init__.py`` (a missing one is
    left out of a wheel: ``import functrans`` failed in a regular install without
    functrans.transforms.partition)."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())
                 ["tool"]["setuptools"]["packages"])
    found = set()
    for base, name in ((ROOT / "functrans", "functrans"),
                       (ROOT / "transforms", "functrans.transforms")):
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base).parts
            found.add(".".join((name,) + rel))
    assert found == listed, f"unlisted: {sorted(found - listed)}, absent: {sorted(listed - found)}"


def _package(module: str) -> str:
    """The unit cycles are counted between: a subpackage (of functrans or of its transforms)
    or a root module; ``functrans`` itself is the package root's ``__init__``."""
    parts = module.split(".")
    if parts[1:2] == ["transforms"] and len(parts) > 2:
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def test_no_import_cycles_between_packages(tmp_path):
    """No subpackage or root module imports one that imports it back, directly or through
    others (imports inside functions count: grimp reads them all)."""
    site = _installed_layout(tmp_path)
    code = f"""
import collections, sys
sys.path.insert(0, {str(site)!r})
import grimp
g = grimp.build_graph("functrans", cache_dir=None)
package = {inspect_source(_package)!r}
exec(package)
edges = collections.defaultdict(set)
for m in g.modules:
    for i in g.find_modules_directly_imported_by(m):
        a, b = _package(m), _package(i)
        if a != b:
            edges[a].add(b)
def reach(a):
    seen, todo = set(), [a]
    while todo:
        for y in edges[todo.pop()]:
            if y not in seen:
                seen.add(y)
                todo.append(y)
    return seen
nodes = set(edges) | {{b for v in edges.values() for b in v}}
r = {{a: reach(a) for a in nodes}}
print(sorted((a, b) for a in nodes for b in r[a] if a < b and a in r[b]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "[]", f"packages importing each other: {out.stdout}"


def inspect_source(fn) -> str:
    import inspect
    import textwrap
    return textwrap.dedent(inspect.getsource(fn))


# JAX's public module names functrans answers to (`import jax.X` resolves to functrans.X).
JAX_FACES = {"ad_checkpoint", "api_util", "custom_batching", "custom_derivatives", "debug",
             "distributed", "dtypes", "errors", "flatten_util", "ops", "ref", "sharding", "stages",
             "test_util", "tree", "tree_util", "typing"}
JAX_FACES |= {"monitoring", "profiler", "image"}
ENTRY_POINTS = {"__init__", "_version", "demo"}


def test_the_package_root_holds_faces():
    """A module at functrans/ is one of JAX's public module names (a thin face) or one of the
    package's entry points; implementation lives in the subpackage it belongs to."""
    for path in sorted((ROOT / "functrans").glob("*.py")):
        name = path.stem
        assert name in JAX_FACES | ENTRY_POINTS, \
            f"functrans/{path.name} is neither a JAX module's face nor an entry point"
        if name not in ("__init__", "demo"):
            lines = len(path.read_text().splitlines())
            assert lines <= 200, f"functrans/{path.name} has {lines} lines: a face holds " \
                "imports, __all__ and a docstring; move the implementation to a subpackage"
