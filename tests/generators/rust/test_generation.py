"""generate_mutations on Rust: a small crate with every kind of file, and a type check of
real crates (cloned from their bundles): a sample of every mutator's mutants must still
build with ``rustc`` (what ``cargo check`` runs)."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import pytest

from repogym.generators.mutators.grammars import grammar_for
from repogym.generators.procedural import Mutation, generate_mutations
from tests.generators.rust.support import RS_KINDS, type_check

BUNDLES = Path(__file__).resolve().parents[4] / "shared" / "repos"

LIB = """\
//! Shapes.

pub mod shapes;

pub fn names(xs: &[&str], limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    for (i, x) in xs.iter().enumerate() {
        if i >= limit {
            break;
        }
        out.push(x.trim().trim_matches('"').to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed() {
        assert_eq!(names(&[" a "], 1 + 0), vec!["a".to_string()]);
    }
}
"""

SHAPES = """\
use std::cmp::Ordering;

pub struct Shape {
    pub width: u32,
    pub height: u32,
    pub label: String,
}

impl Shape {
    pub fn area(&self) -> u32 {
        self.width * self.height
    }

    pub fn perimeter(&self) -> u32 {
        2 * (self.width + self.height)
    }

    pub fn is_square(&self) -> bool {
        self.width == self.height && self.width > 0
    }

    pub fn compare(&self, other: &Shape) -> Ordering {
        match self.area() > other.area() {
            true => Ordering::Greater,
            false => Ordering::Less,
        }
    }

    pub fn grow(&mut self, by: u32) -> Option<u32> {
        if by == 0 {
            return None;
        }
        self.width += by;
        self.height += by;
        Some(self.area())
    }

    pub fn mask(&self, flags: u32) -> u32 {
        (flags & 0xff) | (self.width << 8)
    }

    pub fn describe(&self, verbose: bool) -> usize {
        let mut count = 0;
        if verbose {
            count += self.label.len();
        } else {
            count += 1;
        }
        count
    }

    pub fn span(&self, lo: u32, hi: u32) -> u32 {
        clamp(self.width, lo, hi)
    }
}

fn clamp(v: u32, lo: u32, hi: u32) -> u32 {
    if v < lo {
        lo
    } else if v > hi {
        hi
    } else {
        v
    }
}
"""

FILES: dict[str, str] = {
    "Cargo.toml": '[package]\\nname = "shapes"\\nversion = "0.1.0"\\nedition = "2021"\\n',
    "src/lib.rs": LIB,
    "src/shapes.rs": SHAPES,
    "tests/it.rs": "use shapes::names;\n\n#[test]\nfn it() {\n    assert!(names(&[], 0).len() < 1);\n}\n",
    "benches/b.rs": "fn main() {\n    let x = 1 + 2;\n    assert!(x > 2);\n}\n",
    "examples/demo.rs": "fn main() {\n    let x = 1 + 2;\n    println!(\"{}\", x * 2);\n}\n",
    "build.rs": "fn main() {\n    if 1 + 1 > 2 {\n        return;\n    }\n}\n",
    "src/broken.rs": "fn f( {\n    1 +\n}\n",
}


def _valid(mutation: Mutation) -> bool:
    grammar = grammar_for(mutation.path)
    return (grammar is not None and mutation.mutated != mutation.original
            and grammar.parses_cleanly(mutation.mutated.encode())
            and grammar.real_change(mutation.path, mutation.original, mutation.mutated,
                                    mutation.line))


def test_only_runtime_code_of_parseable_non_test_files_is_mutated(
        make_git_repo: Callable[..., Path], tmp_path: Path) -> None:
    root = make_git_repo(FILES, name="rust")
    sources = [p for p in FILES if p.endswith(".rs")]
    found = generate_mutations(root, sources, seed=0, max_candidates=10_000,
                               per_function=10_000)
    assert {m.path for m in found} == {"src/lib.rs", "src/shapes.rs"}
    assert all(m.mutator.startswith("rs_") and _valid(m) for m in found)
    assert {m.function for m in found} == {
        "names", "Shape::area", "Shape::perimeter", "Shape::is_square", "Shape::compare",
        "Shape::grow", "Shape::mask", "Shape::describe", "Shape::span", "clamp"}
    lib_lines = {m.line for m in found if m.path == "src/lib.rs"}
    assert max(lib_lines) < LIB.count("\n", 0, LIB.index("#[cfg(test)]")) + 1
    assert {m.mutator for m in found} == set(RS_KINDS)
    # every one of them still type checks
    ok, base_warnings, said = type_check(root / "src/lib.rs", tmp_path / "base.rmeta")
    assert ok, said
    for i, mutation in enumerate(found):
        target = root / mutation.path
        target.write_text(mutation.mutated)
        try:
            ok, _, said = type_check(root / "src/lib.rs", tmp_path / f"m{i}.rmeta")
        finally:
            target.write_text(mutation.original)
        assert ok, f"{mutation.mutator} {mutation.description}:\n{said[:1500]}"


def test_python_and_rust_mutators_keep_to_their_files(
        make_git_repo: Callable[..., Path]) -> None:
    files = {"src/lib.rs": LIB, "pkg/mod.py": "def f(a):\n    return a < 1\n"}
    root = make_git_repo(files, name="mixed")
    found = generate_mutations(root, list(files), seed=0, max_candidates=10_000)
    assert {(m.path, m.mutator.startswith("rs_")) for m in found} == {
        ("src/lib.rs", True), ("pkg/mod.py", False)}


# --- real crates: every sampled mutant type checks ---------------------------------------

REAL = ["rust-lang+glob", "dtolnay+itoa", "tailhook+humantime", "seanmonstar+httparse"]
"""Crates that build with no dependency in their default configuration (bitflags, log and
unicode-width do too; they are left out to keep the test short)."""
PER_KIND = 3


def _clone(name: str, tmp_path: Path) -> Path:
    source = BUNDLES / f"{name}.bundle"
    if not source.exists():
        pytest.fail(f"{source} is missing: the real-repository bundles are part of shared/")
    target = tmp_path / name
    subprocess.run(["git", "clone", "-q", str(source), str(target)], check=True,
                   capture_output=True)
    return target


def _runtime_files(root: Path) -> list[str]:
    from repogym.generators.mutators.rust.runtime import is_test_file

    return sorted(p.relative_to(root).as_posix() for p in (root / "src").rglob("*.rs")
                  if not is_test_file(p.relative_to(root).as_posix()))


def _check(job: tuple[Path, Mutation, Path]) -> tuple[Mutation, bool, str]:
    """Type check one mutant in a copy of its crate's ``src`` of its own."""
    root, mutation, scratch = job
    copy = scratch / "src"
    shutil.copytree(root / "src", copy)
    (scratch / mutation.path).write_text(mutation.mutated)
    ok, _, said = type_check(copy / "lib.rs", scratch / "m.rmeta")
    return mutation, ok, said


@pytest.mark.slow
def test_sampled_mutants_of_real_crates_type_check(tmp_path: Path) -> None:
    jobs: list[tuple[Path, Mutation, Path]] = []
    for name in REAL:
        root = _clone(name, tmp_path)
        ok, _, said = type_check(root / "src" / "lib.rs", tmp_path / "base.rmeta")
        assert ok, f"{name} does not build as it is:\n{said[:1500]}"
        found = generate_mutations(root, _runtime_files(root), seed=1, max_candidates=100_000,
                                   mutators=RS_KINDS, per_function=100_000)
        assert found and all(_valid(m) for m in found[::25]), name
        by_kind: dict[str, list[Mutation]] = {}
        for mutation in found:
            by_kind.setdefault(mutation.mutator, []).append(mutation)
        for kind, pool in sorted(by_kind.items()):
            for mutation in random.Random(f"1:{kind}").sample(pool, min(PER_KIND, len(pool))):
                jobs.append((root, mutation, tmp_path / f"m{len(jobs):04d}"))
    tried: Counter[str] = Counter()
    built: Counter[str] = Counter()
    broken: list[str] = []
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as workers:
        for mutation, ok, said in workers.map(_check, jobs):
            tried[mutation.mutator] += 1
            built[mutation.mutator] += ok
            if not ok:
                broken.append(f"{mutation.mutator} {mutation.path}:{mutation.line} "
                              f"{mutation.description}: {said[:600]}")
    rates = {kind: f"{built[kind]}/{tried[kind]}" for kind in sorted(tried)}
    print("type checks per mutator:", rates)
    assert len(tried) >= len(RS_KINDS) - 2, rates
    assert not broken, "\n".join(broken)
