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

from pathlib import PurePosixPath

# the module and package of a file: the run's own rules (standard library only)
from repogym.toolchains.plugins.repogym_maven import TEST_ROOT, module_of, package_of

SOURCE_SUFFIXES = (".java",)
RUNNER_NAMES = frozenset({"pom.xml", "mvnw", "mvnw.cmd", "build.gradle", "build.gradle.kts",
                          "settings.gradle", "settings.gradle.kts", "gradlew", "gradlew.bat",
                          "gradle.properties"})


def is_test_file(path: str) -> bool:
    """Test code or test data: anything under a module's ``src/test`` or ``src/it``."""
    parts = PurePosixPath(path).parts[:-1]
    return any(parts[i] == "src" and parts[i + 1] in ("test", "it")
               for i in range(len(parts) - 1))


def is_runner_file(path: str) -> bool:
    """A file that decides how the tests build and run: POMs, ``.mvn/``, the wrappers."""
    p = PurePosixPath(path)
    return p.name in RUNNER_NAMES or ".mvn" in p.parts[:-1]


__all__ = ["SOURCE_SUFFIXES", "TEST_ROOT", "is_runner_file", "is_test_file", "module_of",
           "package_of"]
