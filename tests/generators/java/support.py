"""Helpers shared by the Java mutator tests: run one mutator on a snippet, and compile
mutants with the JDK (one JVM for many files: :file:`CompileEach.java`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from textwrap import dedent

import pytest
from tree_sitter import Node

from repogym.generators.mutators import MUTATORS, Mutator, Site
from repogym.generators.mutators.java.grammar import JAVA

JAVA_KINDS = [name for name in MUTATORS.names() if name.startswith("java_")]
COMPILE_EACH = Path(__file__).with_name("CompileEach.java")


def parse(source: str) -> Node:
    """The root of ``source`` (dedented); it must parse cleanly."""
    tree = JAVA.parse(dedent(source).encode())
    assert not tree.root_node.has_error, source
    return tree.root_node


def sites(kind: str, source: str) -> list[Site]:
    """The sites the mutator finds in ``source`` (dedented, parsed cleanly)."""
    data = dedent(source).encode()
    tree = JAVA.parse(data)
    assert not tree.root_node.has_error, source
    mutator: Mutator = MUTATORS.get(kind)()
    return list(mutator.sites(tree, data))


def mutants(kind: str, source: str) -> list[str]:
    """Every mutated version of ``source`` (dedented) the mutator proposes, in site order;
    each must parse cleanly and count as a real change."""
    source = dedent(source)
    out = [s.apply(source.encode()).decode() for s in sites(kind, source)]
    for mutated in out:
        assert JAVA.parses_cleanly(mutated.encode()), mutated
        assert JAVA.real_change("src/main/java/p/A.java", source, mutated, 1), mutated
    return out


def descriptions(kind: str, source: str) -> list[tuple[int, str]]:
    """``(line, description)`` of every site, in order."""
    return [(s.line, s.description) for s in sites(kind, source)]


def java_tool() -> str:
    """The ``java`` launcher (JDK 17 on the machines this project runs on: a missing one is
    an error, not a skip)."""
    found = shutil.which("java")
    if found is None or shutil.which("javac") is None:
        pytest.fail("a JDK (java and javac) is not installed")
    return found


def compile_each(units: list[tuple[Path, Path]]) -> dict[Path, str]:
    """Compile each ``(sourcepath, file)`` on its own (its project's other classes from the
    sourcepath); the first error of each file that does not compile, by file."""
    lines = "\n".join(f"{sourcepath}\t{file}" for sourcepath, file in units)
    done = subprocess.run([java_tool(), str(COMPILE_EACH)], input=lines, text=True,
                          capture_output=True, timeout=600)
    results: dict[Path, str] = {}
    seen = set()
    for line in done.stdout.splitlines():
        parts = line.split("\t")
        seen.add(Path(parts[1]))
        if parts[0] != "OK":
            results[Path(parts[1])] = parts[2] if len(parts) > 2 else "?"
    assert seen == {file for _, file in units}, done.stderr[-3000:]
    return results
