"""Which files of a Go repository are tests, and which a graded patch may not change.

Tests: ``*_test.go`` files and anything under a ``testdata`` folder (the go tool ignores
those folders; tests read their fixtures there).

Protected (a graded patch's changes there are thrown away): the tests; the module's
definition and checksums (``go.mod``, ``go.sum``: a patch could swap a test dependency for
one that always passes); workspace files (``go.work``, ``go.work.sum``: they redirect any
module, the tested one included, to another directory); and ``vendor/`` (the dependencies
the build uses when present).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

SOURCE_SUFFIXES = (".go",)
RUNNER_NAMES = frozenset({"go.mod", "go.sum", "go.work", "go.work.sum"})
TEST_FUNC = re.compile(r"^func\s+((?:Test|Example|Fuzz)[A-Za-z0-9_]*)\s*\(", re.M)


def is_test_file(path: str) -> bool:
    """Test code: a ``_test.go`` file, or anything under a ``testdata`` folder."""
    p = PurePosixPath(path)
    return p.name.endswith("_test.go") or "testdata" in p.parts[:-1]


def is_runner_file(path: str) -> bool:
    """A file that decides what the tests build against: the module and workspace files,
    vendored dependencies."""
    p = PurePosixPath(path)
    return p.name in RUNNER_NAMES or "vendor" in p.parts[:-1]


def is_generated(text: str) -> bool:
    """Go's marker of generated code (``// Code generated ... DO NOT EDIT.``)."""
    return bool(re.search(r"^// Code generated .* DO NOT EDIT\.$", text[:4000], re.M))


def test_functions(text: str) -> list[str]:
    """The top-level test, example and fuzz functions a ``_test.go`` file declares."""
    return TEST_FUNC.findall(text)


__all__ = ["SOURCE_SUFFIXES", "is_generated", "is_runner_file", "is_test_file",
           "test_functions"]
