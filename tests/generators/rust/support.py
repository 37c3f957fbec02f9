"""Helpers shared by the Rust mutator tests: run one mutator on a snippet, type check a
crate with the host's ``rustc``."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from textwrap import dedent

import pytest
from tree_sitter import Node

from repogym.generators.mutators import MUTATORS, Mutator, Site
from repogym.generators.mutators.rust.grammar import RUST

RS_KINDS = [name for name in MUTATORS.names() if name.startswith("rs_")]
CARGO_BIN = Path.home() / ".cargo" / "bin"


def parse(source: str) -> Node:
    """The root of ``source`` (dedented); it must parse cleanly."""
    tree = RUST.parse(dedent(source).encode())
    assert not tree.root_node.has_error, source
    return tree.root_node


def sites(kind: str, source: str) -> list[Site]:
    """The sites the mutator finds in ``source`` (dedented, parsed cleanly) that the
    generator keeps: in runtime code of a named function."""
    data = dedent(source).encode()
    tree = RUST.parse(data)
    assert not tree.root_node.has_error, source
    mutator: Mutator = MUTATORS.get(kind)()
    kept = []
    for site in mutator.sites(tree, data):
        node = site.node(tree, data)
        if node is not None and RUST.enclosing_function(node) is not None \
                and RUST.in_runtime_code(node):
            kept.append(site)
    return kept


def mutants(kind: str, source: str) -> list[str]:
    """Every mutated version of ``source`` (dedented) the mutator proposes, in site order;
    each must parse cleanly and count as a real change."""
    source = dedent(source)
    out = [s.apply(source.encode()).decode() for s in sites(kind, source)]
    for mutated in out:
        assert RUST.parses_cleanly(mutated.encode()), mutated
        assert RUST.real_change("src/lib.rs", source, mutated, 1), mutated
    return out


def descriptions(kind: str, source: str) -> list[tuple[int, str]]:
    """``(line, description)`` of every site, in order."""
    return [(s.line, s.description) for s in sites(kind, source)]


def rustc() -> str:
    """The host's ``rustc``: on PATH or in ``~/.cargo/bin``. The machines this project
    runs on have Rust; a missing one is an error, not a skip."""
    found = shutil.which("rustc") or (str(CARGO_BIN / "rustc")
                                      if (CARGO_BIN / "rustc").exists() else None)
    if found is None:
        pytest.fail(f"rustc is not installed (looked on PATH and in {CARGO_BIN})")
    return found


def type_check(lib: Path, out: Path, edition: str = "2021") -> tuple[bool, int, str]:
    """``rustc --emit=metadata`` (what ``cargo check`` runs: type and borrow checking) on
    the crate rooted at ``lib``, with the ``std`` feature and its defaults on: whether it
    builds, how many warnings it has, and what rustc said. Needs no network, nor any
    dependency (the crates checked have none in their default build)."""
    done = subprocess.run(
        [rustc(), "--edition", edition, "--crate-type", "lib", "--emit=metadata",
         "-o", str(out), "--cfg", 'feature="std"', "--cfg", 'feature="cjk"',
         "--cap-lints", "warn", str(lib)],
        capture_output=True, text=True, timeout=120)
    warnings = len(re.findall(r"^warning(?:\[\w+\])?: (?!\d+ warnings? emitted)",
                              done.stderr, re.M))
    return done.returncode == 0, warnings, done.stderr
