"""generate_mutations on JavaScript and TypeScript: a small repository with every kind of
file, and a smoke test on two real libraries (cloned from their bundles)."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path
from typing import Callable

import pytest

from repogym.generators.mutators.grammars import grammar_for
from repogym.generators.procedural import Mutation, generate_mutations
from tests.generators.ecmascript.support import JS_KINDS
from tests.generators.ecmascript.test_mutators import CORPUS, TRY_SOURCE
from tests.generators.ecmascript.test_runtime import (
    DECLARATIONS_DTS,
    OFF_LIMITS_JS,
    OFF_LIMITS_TS,
)

BUNDLES = Path(__file__).resolve().parents[4] / "shared" / "repos"

FILES: dict[str, str] = {
    "src/stack.ts": CORPUS,
    "src/load.js": TRY_SOURCE,
    "src/offlimits.ts": OFF_LIMITS_TS,
    "src/offlimits.cjs": OFF_LIMITS_JS,
    "types/index.d.ts": DECLARATIONS_DTS,
    "src/view.tsx": "export function View({ n }: { n: number }) {\n"
                    "  return n > 1 ? <b>{n - 1}</b> : null;\n}\n",
    "src/broken.ts": "function f( {\n  return 1 +\n}\n",
}


def _valid(mutation: Mutation) -> bool:
    grammar = grammar_for(mutation.path)
    return (grammar is not None and mutation.mutated != mutation.original
            and grammar.parses_cleanly(mutation.mutated.encode())
            and grammar.real_change(mutation.path, mutation.original, mutation.mutated,
                                    mutation.line))


def test_only_runtime_code_of_parseable_files_is_mutated(
        make_git_repo: Callable[..., Path]) -> None:
    root = make_git_repo(FILES, name="js")
    found = generate_mutations(root, list(FILES), seed=0, max_candidates=10_000)
    assert {m.path for m in found} == {"src/stack.ts", "src/load.js", "src/view.tsx"}
    assert {m.mutator for m in found} == set(JS_KINDS)
    assert all(_valid(m) and m.original == FILES[m.path] for m in found)
    assert {m.function for m in found} == {"Stack.constructor", "Stack.push", "Stack.top",
                                           "window", "words", "load", "View"}


def test_python_and_ecmascript_mutators_keep_to_their_files(
        make_git_repo: Callable[..., Path]) -> None:
    files = {"src/stack.ts": CORPUS, "pkg/mod.py": "def f(a):\n    return a < 1\n"}
    root = make_git_repo(files, name="mixed")
    found = generate_mutations(root, list(files), seed=0, max_candidates=10_000)
    assert {(m.path, m.mutator.startswith("js_")) for m in found} == {
        ("src/stack.ts", True), ("pkg/mod.py", False)}


def _clone(bundle: str, tmp_path: Path) -> Path:
    """A clone of a shared bundle in ``tmp_path`` (the bundle itself is never written)."""
    source = BUNDLES / bundle
    if not source.exists():
        pytest.fail(f"{source} is missing: the real-repository bundles are part of shared/")
    target = tmp_path / bundle.removesuffix(".bundle")
    subprocess.run(["git", "clone", "-q", str(source), str(target)], check=True,
                   capture_output=True)
    return target


def _runtime_files(root: Path, patterns: tuple[str, ...]) -> list[str]:
    paths = {p.relative_to(root).as_posix() for pattern in patterns for p in root.glob(pattern)}
    return sorted(p for p in paths if not p.endswith((".spec.ts", ".test.ts", ".d.ts")))


REAL = [("pillarjs+path-to-regexp.bundle", ("src/*.ts",), 250),
        ("jshttp+mime-types.bundle", ("index.js", "mimeScore.js"), 100)]


@pytest.mark.slow
@pytest.mark.parametrize(("bundle", "patterns", "at_least"), REAL,
                         ids=["path-to-regexp", "mime-types"])
def test_smoke_on_real_libraries(bundle: str, patterns: tuple[str, ...], at_least: int,
                                 tmp_path: Path) -> None:
    root = _clone(bundle, tmp_path)
    files = _runtime_files(root, patterns)
    assert files
    found = generate_mutations(root, files, seed=1, max_candidates=10_000)
    kinds = Counter(m.mutator for m in found)
    assert len(found) >= at_least and len(kinds) >= 14, kinds
    assert set(kinds) <= set(JS_KINDS)
    assert all(_valid(m) for m in found)
    assert len({(m.path, m.mutated) for m in found}) == len(found)
    assert len({m.function for m in found}) >= 8
    again = generate_mutations(root, files, seed=1, max_candidates=60)
    assert again == found[:60]
    other = generate_mutations(root, files, seed=2, max_candidates=60)
    assert [m.mutated for m in other] != [m.mutated for m in again]
    for m in found[::40]:
        check = subprocess.run(["git", "apply", "--check", "-"], cwd=root, input=m.bug_patch,
                               text=True, capture_output=True)
        assert check.returncode == 0, check.stderr
