"""Which files of a Maven repository are tests, and which a graded patch may not change.

Tests: everything under a module's ``src/test`` (test code and its resources, Maven's
default ``testSourceDirectory`` and ``testResources``), and ``src/it`` (integration-test
projects).

Protected (a graded patch's changes there are thrown away): the tests; every ``pom.xml``
(dependencies, plugins and the Surefire configuration -- includes, excludes, listeners,
``argLine``, system properties -- all live there); ``.mvn/`` (``maven.config`` and
``jvm.config`` add options to every Maven run, ``extensions.xml`` loads code into Maven
itself); the Maven wrapper (``mvnw``, ``mvnw.cmd``, ``.mvn/wrapper/``); and Gradle's build
files, which a patch could add to change how the repository builds elsewhere.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

SOURCE_SUFFIXES = (".java",)
RUNNER_NAMES = frozenset({"pom.xml", "mvnw", "mvnw.cmd", "build.gradle", "build.gradle.kts",
                          "settings.gradle", "settings.gradle.kts", "gradlew", "gradlew.bat",
                          "gradle.properties"})
TEST_ROOT = "src/test/java"  # Maven's default test source folder, under each module
_PACKAGE = re.compile(r"^\s*package\s+([\w.]+)\s*;", re.M)


def is_test_file(path: str) -> bool:
    """Test code or test data: anything under a module's ``src/test`` or ``src/it``."""
    parts = PurePosixPath(path).parts[:-1]
    return any(parts[i] == "src" and parts[i + 1] in ("test", "it")
               for i in range(len(parts) - 1))


def is_runner_file(path: str) -> bool:
    """A file that decides how the tests build and run: POMs, ``.mvn/``, the wrappers."""
    p = PurePosixPath(path)
    return p.name in RUNNER_NAMES or ".mvn" in p.parts[:-1]


def package_of(path: str, text: str | None = None) -> str:
    """The Java package of the repo-relative source ``path``: its folders under
    ``src/test/java`` (or ``src/main/java``), else the file's ``package`` declaration
    (``text``), else none (the default package)."""
    p = PurePosixPath(path)
    parts = p.parts[:-1]
    for i in range(len(parts) - 2):
        if parts[i] == "src" and parts[i + 2] == "java" and parts[i + 1] in ("test", "main"):
            return ".".join(parts[i + 3:])
    found = _PACKAGE.search(text or "")
    return found.group(1) if found else ""


def module_of(path: str, poms: set[str]) -> str:
    """The Maven module (its folder, ``.`` for the root) holding the repo-relative
    ``path``: the nearest folder above it with a ``pom.xml`` among ``poms``."""
    folder = PurePosixPath(path).parent
    while True:
        key = str(folder)
        if (f"{key}/pom.xml" if key != "." else "pom.xml") in poms or key == ".":
            return key
        folder = folder.parent


__all__ = ["SOURCE_SUFFIXES", "TEST_ROOT", "is_runner_file", "is_test_file", "module_of",
           "package_of"]
