"""The layers point one way: no module of repogym imports one of a layer above its own.

    core -> sandboxes -> toolchains -> grading -> generators -> judges -> datasets, envs
    -> flows/CLI

Every import counts, at module level or inside a function. The package root
(``repogym/__init__.py``, a lazy facade over :func:`repogym.verify`) is the one exception.
Files that are copied into sandboxes and exported images (the toolchain plugins and the
container grader) run without repogym installed: they import none of it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "repogym"

LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("core", frozenset({"schemas", "errors", "config", "limits", "pyast", "registry", "files",
                        "build_failures", "patches", "layout", "cache"})),
    ("sandboxes", frozenset({"sandboxes"})),
    ("toolchains", frozenset({"toolchains", "repos", "samples", "shared_envs"})),
    ("grading", frozenset({"grading"})),
    ("generators", frozenset({"generators", "baseline"})),
    ("judges", frozenset({"judges"})),
    ("datasets", frozenset({"datasets", "envs"})),
    ("flows", frozenset({"flows", "corpus", "pipeline", "conformance", "commands", "cli",
                        "__main__"})),
)
RANK = {part: rank for rank, (_, parts) in enumerate(LAYERS) for part in parts}
NAME = {part: name for name, parts in LAYERS for part in parts}
STANDALONE = ("toolchains/plugins/", "datasets/exports/container_grader.py")


def module_name(path: Path, root: Path = SRC) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, root: Path = SRC) -> list[tuple[int, str]]:
    """(line, absolute module) of every repogym import in ``path``."""
    here = module_name(path, root).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            out += [(node.lineno, f"{module}.{alias.name}" if module == "repogym" else module)
                    for alias in node.names]
    return [(line, m) for line, m in out if m == "repogym" or m.startswith("repogym.")]


def layer_part(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def sources(root: Path = SRC) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if ".mypy_cache" not in p.parts)


def upward_imports(root: Path = SRC) -> list[str]:
    """Every import of a layer above the importing module's, as ``file:line ...``."""
    upward = []
    for path in sources(root):
        here = layer_part(module_name(path, root))
        if not here or any(s in path.as_posix() for s in STANDALONE):
            continue
        for line, module in imported(path, root):
            there = layer_part(module)
            if there in RANK and RANK[there] > RANK[here]:
                upward.append(f"{path.relative_to(root)}:{line} ({NAME[here]}) imports "
                              f"{module} ({NAME[there]})")
    return upward


def test_every_module_has_a_layer() -> None:
    unplaced = {layer_part(module_name(p)) for p in sources()} - set(RANK) - {""}
    assert not unplaced, f"put these in a layer of tests/test_layers.py: {sorted(unplaced)}"


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = upward_imports()
    assert upward == [], "\n".join(upward)


@pytest.mark.parametrize("path", [p for p in sources()
                                  if any(s in p.as_posix() for s in STANDALONE)],
                         ids=lambda p: str(p.relative_to(SRC)))
def test_files_run_inside_sandboxes_import_nothing_of_repogym(path: Path) -> None:
    assert imported(path) == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The checker itself: relative and absolute upward imports are found, downward ones
    are not."""
    root = tmp_path / "repogym"
    (root / "sandboxes").mkdir(parents=True)
    (root / "sandboxes" / "probe.py").write_text(
        "from ..judges import judge\nfrom repogym import errors\n"
        "def f():\n    import repogym.datasets.verify\n", encoding="utf-8")
    assert upward_imports(root) == [
        "sandboxes/probe.py:1 (sandboxes) imports repogym.judges (judges)",
        "sandboxes/probe.py:4 (sandboxes) imports repogym.datasets.verify (datasets)"]
