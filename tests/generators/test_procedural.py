"""generate_mutations: valid, deterministic, capped, diverse, targeted; patches apply."""

from __future__ import annotations

import ast
import importlib.util
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Callable

import pytest
from pydantic import ValidationError

from repogym.errors import SourceError, UnknownPluginError
from repogym.generators.procedural import (
    MUTATORS,
    Mutation,
    generate_mutations,
    parses_cleanly,
    runtime_sources,
)
from repogym.toolchains.python import PythonToolchain
from tests.generators.test_mutators import CORPUS, OFF_LIMITS, PYTHON_KINDS


def _module(i: int) -> str:
    """A module with several small functions that every mutator kind can touch."""
    return f'''\
"""Module {i}."""
import logging

log = logging.getLogger(__name__)


def clamp{i}(x, lo, hi):
    if x < lo:
        return lo
    else:
        x = x + 0
    if x > hi and hi is not None:
        return hi
    return x


def first{i}(items, n):
    out = []
    for k in range(0, n):
        out.append(items[k])
    return out[:n] if n > 1 else out


class Box{i}:
    def __init__(self, size):
        size = max(size, 0)
        self.size = size
        self.full = False

    def fits(self, other):
        return other.size <= self.size * 2 or self.full


def load{i}(path, default=None, sep=","):
    try:
        with open(path) as fh:
            text = fh.read().strip()
            parts = text.split(sep)
    except (OSError, ValueError):
        return default
    if not parts[0]:
        parts = []
    return parts
'''


FILES: dict[str, str] = {
    **{f"pkg/mod{i}.py": _module(i) for i in range(4)},
    "pkg/__init__.py": "",
    "pkg/stack.py": CORPUS,
    "pkg/offlimits.py": OFF_LIMITS,
    "pkg/broken.py": "def f(:\n    return 1 +\n",
    "tests/test_mod.py": "def test_x():\n    assert 1 < 2\n",
    "conftest.py": "def pytest_configure(config):\n    x = 1 + 1\n",
    "setup.py": "from setuptools import setup\nsetup()\n",
    "docs/conf.py": "def f(a):\n    return a + 1\n",
    "examples/demo.py": "def f(a):\n    return a + 1\n",
}
RUNTIME = sorted(p for p in FILES if p.startswith("pkg/"))


PYTHON_TOOLCHAIN = PythonToolchain()


@pytest.fixture
def repo(make_git_repo: Callable[..., Path]) -> Path:
    root = make_git_repo(FILES, name="mutated")
    (root / "pkg" / "latin1.py").write_bytes(b"def f(a):\n    return a + '\xe9'\n")
    return root


def generate(root: Path, **kwargs: object) -> list[Mutation]:
    options: dict[str, object] = {"seed": 0, "max_candidates": 40, **kwargs}
    return generate_mutations(root, [*RUNTIME, "pkg/latin1.py", "pkg/missing.py"],
                              **options)  # type: ignore[arg-type]


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)
_LOGGERS = {"logging", "logger", "log", "_logger", "_log", "LOGGER", "LOG"}


def _is_quiet_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in {"print", "warn"}
    while isinstance(func, ast.Attribute):
        func = func.value
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id in {"self", "cls"}:
            return func.attr in _LOGGERS
    return isinstance(func, ast.Name) and func.id in _LOGGERS | {"warnings"}


def frozen_parts(source: str, defaults: bool = True) -> list[str]:
    """What no mutation may change, found with Python's own parser (independently of
    tree-sitter): module- and class-level code, signatures with their annotations and
    defaults (unless ``defaults`` is false), decorators, docstrings, variable
    annotations, logging/print/warn calls."""
    module = ast.parse(source)
    parts: list[str] = []
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    for node in ast.walk(module):
        if isinstance(node, _DEFS):
            parts.append(repr(ast.get_docstring(node, clean=False)))
        elif isinstance(node, ast.AnnAssign):
            parts.append(ast.dump(node.annotation))
        elif _is_quiet_call(node):
            parts.append(ast.dump(node))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.append(node)
    for function in functions:  # now blank every function body: what is left is frozen
        function.body = [ast.Pass()]
        if not defaults:
            _blank_defaults(function.args)
    return sorted(parts) + [ast.dump(module)]


def _blank_defaults(args: ast.arguments) -> None:
    args.defaults = [ast.Constant(None) for _ in args.defaults]
    args.kw_defaults = [None if d is None else ast.Constant(None) for d in args.kw_defaults]


def frozen(m: Mutation, source: str) -> list[str]:
    """The frozen parts of ``source`` as ``m``'s mutator must leave them."""
    return frozen_parts(source, defaults=not MUTATORS.get(m.mutator).edits_defaults)


def git_apply(root: Path, patch: str) -> None:
    subprocess.run(["git", "apply", "-"], cwd=root, input=patch, text=True, check=True,
                   capture_output=True)


def test_runtime_sources(repo: Path) -> None:
    assert runtime_sources(repo, PYTHON_TOOLCHAIN.is_runtime_source) == RUNTIME


def test_runtime_sources_needs_a_git_repo(tmp_path: Path) -> None:
    with pytest.raises(SourceError):
        runtime_sources(tmp_path, PYTHON_TOOLCHAIN.is_runtime_source)


def test_deterministic_for_a_seed(repo: Path) -> None:
    first = generate(repo, seed=7)
    assert first == generate(repo, seed=7)
    assert [m.line for m in first] != [m.line for m in generate(repo, seed=8)]


def test_cap_respected(repo: Path) -> None:
    assert len(generate(repo, max_candidates=5)) == 5
    assert generate(repo, max_candidates=0) == []
    everything = generate(repo, max_candidates=10_000)
    assert 40 < len(everything) < 10_000
    assert len({(m.path, m.mutated) for m in everything}) == len(everything)


def test_kinds_take_turns(repo: Path) -> None:
    kinds = PYTHON_KINDS
    found = generate(repo, max_candidates=3 * len(kinds), per_function=10)
    for start in range(0, len(found), len(kinds)):
        assert [m.mutator for m in found[start:start + len(kinds)]] == kinds


def test_functions_are_spread_out(repo: Path) -> None:
    found = generate(repo, max_candidates=30)
    per_function = Counter((m.path, m.function) for m in found)
    assert max(per_function.values()) <= 2
    assert len({m.path for m in found}) == 5  # every parseable runtime file with code


def test_mutator_subset_and_unknown_name(repo: Path) -> None:
    found = generate(repo, mutators=["constant_swap", "boolean_swap"])
    assert {m.mutator for m in found} == {"constant_swap", "boolean_swap"}
    assert found[0].mutator == "constant_swap"
    with pytest.raises(UnknownPluginError):
        generate(repo, mutators=["nope"])


def test_lines_filter(repo: Path) -> None:
    wanted = {"pkg/mod1.py": {8, 13}, "pkg/stack.py": {29}}
    found = generate(repo, max_candidates=100, lines=wanted)
    assert found and all(m.line in wanted.get(m.path, set()) for m in found)
    assert {m.path for m in found} == set(wanted)
    assert generate(repo, lines={}) == []


def test_skips_unparseable_undecodable_missing_and_off_limits(repo: Path) -> None:
    paths = {m.path for m in generate(repo, max_candidates=10_000)}
    assert paths == {"pkg/mod0.py", "pkg/mod1.py", "pkg/mod2.py", "pkg/mod3.py",
                     "pkg/stack.py"}


def test_frozen_parts_sees_off_limits_code() -> None:
    parts = frozen_parts(OFF_LIMITS)
    changed = OFF_LIMITS.replace("stacklevel=2 + 1", "stacklevel=2 - 1")
    assert frozen_parts(changed) != parts
    assert frozen_parts(OFF_LIMITS.replace('-> tuple[int, ...]', '-> tuple[str, ...]')) != parts


def test_every_mutation_is_valid_and_described(repo: Path) -> None:
    for m in generate(repo, max_candidates=10_000):
        assert m.original == FILES[m.path] and m.mutated != m.original
        assert parses_cleanly(m.mutated.encode())
        assert ast.dump(ast.parse(m.mutated)) != ast.dump(ast.parse(m.original))
        assert frozen(m, m.mutated) == frozen(m, m.original), m.bug_patch
        assert m.function and m.description and m.mutator in MUTATORS
        assert m.original.splitlines()[m.line - 1].strip()


def test_function_is_qualified(repo: Path) -> None:
    functions = {m.function for m in generate(repo, max_candidates=10_000)}
    assert {"Box0.fits", "Box2.__init__", "clamp1", "Stack.push", "window"} <= functions


def test_mutation_is_frozen(repo: Path) -> None:
    m = generate(repo, max_candidates=1)[0]
    with pytest.raises(ValidationError):
        m.line = 3  # type: ignore[misc]


def test_bug_patch_applies_and_gold_patch_reverts(repo: Path) -> None:
    found = generate(repo, max_candidates=len(PYTHON_KINDS) + 5)
    assert {m.mutator for m in found} == set(PYTHON_KINDS)
    for m in found:
        target = repo / m.path
        git_apply(repo, m.bug_patch)
        assert target.read_text() == m.mutated, m.bug_patch
        git_apply(repo, m.gold_patch)
        assert target.read_text() == m.original, m.gold_patch


_RICH_SPEC = importlib.util.find_spec("rich")
RICH = Path(_RICH_SPEC.origin).parent if _RICH_SPEC and _RICH_SPEC.origin else Path("/nonexistent")


@pytest.mark.slow
@pytest.mark.skipif(not RICH.is_dir(), reason="rich is not installed in this environment")
def test_smoke_on_a_real_library(make_git_repo: Callable[..., Path], tmp_path: Path) -> None:
    files = {f"rich/{p.relative_to(RICH).as_posix()}": p.read_text(encoding="utf-8")
             for p in RICH.rglob("*.py")}
    root = make_git_repo(files, name="rich")
    sources = runtime_sources(root, PYTHON_TOOLCHAIN.is_runtime_source)
    assert len(sources) > 50
    per_kind = 6  # every kind finds far more in rich; more only makes the test slower
    found = generate_mutations(root, sources, seed=1,
                               max_candidates=len(PYTHON_KINDS) * per_kind)
    assert Counter(m.mutator for m in found) == {kind: per_kind for kind in PYTHON_KINDS}
    originals: dict[tuple[str, bool], list[str]] = {}
    for m in found:
        assert parses_cleanly(m.mutated.encode()), m.bug_patch
        compile(m.mutated, m.path, "exec")
        defaults = not MUTATORS.get(m.mutator).edits_defaults
        key = (m.path, defaults)
        if key not in originals:
            originals[key] = frozen_parts(files[m.path], defaults)
        assert frozen_parts(m.mutated, defaults) == originals[key], m.bug_patch
    for m in found[::9]:
        check = subprocess.run(["git", "apply", "--check", "-"], cwd=root, input=m.bug_patch,
                               text=True, capture_output=True)
        assert check.returncode == 0, check.stderr
    shutil.rmtree(root)
