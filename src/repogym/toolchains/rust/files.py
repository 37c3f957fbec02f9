"""Which files of a Rust repository are tests, which a graded patch may not change, and
which lines of a source file are test code.

Tests: anything under a ``tests`` folder (integration tests, their helpers and fixtures,
``src/foo/tests/``), ``testdata`` folders, and files named ``tests.rs``, ``*_test.rs`` or
``*_tests.rs`` (the usual homes of an out-of-line ``#[cfg(test)] mod tests;``).

Unit tests also live *inside* source files: ``#[cfg(test)] mod tests { ... }`` and
``#[test]`` functions. Such a file is runtime source (synthetic bugs go there) and test
code at once; :func:`test_spans` gives the lines that are test code (never to be mutated,
never to be changed by a graded patch), for the generators and the grader to exclude.

Protected (a graded patch's changes are thrown away): the tests; the manifests and the
lock file (``Cargo.toml``, ``Cargo.lock``: a patch could swap a dependency, or add a
``[patch]`` section that replaces one, or change the profile the tests build with); build
scripts (``build.rs``: they run at build time, before any test); cargo's configuration
(``.cargo/config``, ``.cargo/config.toml``: rustflags, a runner that wraps every test
binary, source replacement); the toolchain pin (``rust-toolchain``,
``rust-toolchain.toml``); and ``benches/`` (bench targets are test targets cargo can run).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from repogym.toolchains.rust.scan import test_lines

SOURCE_SUFFIXES = (".rs",)
TEST_DIRS = frozenset({"tests", "testdata", "test_data"})
RUNNER_NAMES = frozenset({"Cargo.toml", "Cargo.lock", "rust-toolchain", "rust-toolchain.toml"})
CARGO_CONFIGS = frozenset({"config", "config.toml"})
NOT_RUNTIME_DIRS = frozenset({"benches", "fuzz"})
_TEST_MARK = re.compile(r"#\[\s*(?:cfg\s*\(\s*(?:all\s*\()?\s*)?(?:[\w:]*::)?test\b")


def is_test_file(path: str) -> bool:
    """Test code as a whole file (see the module docstring)."""
    p = PurePosixPath(path)
    return (bool(TEST_DIRS.intersection(p.parts[:-1])) or p.name == "tests.rs"
            or p.name.endswith(("_test.rs", "_tests.rs")))


def is_runner_file(path: str) -> bool:
    """A file that decides how the tests build and run (module docstring)."""
    p = PurePosixPath(path)
    dirs = p.parts[:-1]
    return (p.name in RUNNER_NAMES or (p.name == "build.rs" and "src" not in dirs)
            or (bool(dirs) and dirs[-1] == ".cargo" and p.name in CARGO_CONFIGS)
            or "benches" in dirs)


def has_inline_tests(text: str) -> bool:
    """Whether a source file's text holds unit tests (a quick look, no scan)."""
    return _TEST_MARK.search(text) is not None


def test_spans(text: str) -> tuple[tuple[int, int], ...]:
    """The lines (1-based, both ends included) of a source file's text that are test code:
    ``#[cfg(test)]`` items, test functions, or the whole file under an inner
    ``#![cfg(test)]`` (:func:`repogym.toolchains.rust.scan.test_lines`, which an exported
    task's grader runs too)."""
    return test_lines(text)


__all__ = ["SOURCE_SUFFIXES", "has_inline_tests", "is_runner_file", "is_test_file",
           "test_spans"]
