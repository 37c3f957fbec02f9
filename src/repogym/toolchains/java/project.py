"""A Maven repository as the toolchain sees it, and its install recipe.

A repository is a Maven project when it tracks a ``pom.xml`` at its root and Java test
sources under some module's ``src/test/java`` (a multi-module build lists its modules in
the root POM; each module keeps its own tests). A Maven wrapper's pinned version is not
used: every environment builds with the layer's Maven (:mod:`~repogym.toolchains.java.layer`).

Install: repogym's extension is compiled first (:mod:`~repogym.toolchains.java.maven`);
then one online build (``clean test`` with a test filter that matches every test class and
no test method) downloads into the environment's local repository (``$VIRTUAL_ENV/m2``)
every dependency and plugin the runs need -- Surefire resolves its test-framework provider
only when it has tests to run, so ``test-compile`` or ``dependency:go-offline`` alone leave
it out -- and a last offline ``clean`` leaves no build output in the work tree (runs
compile afresh, :mod:`~repogym.toolchains.java.script`).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from repogym.toolchains.java import files
from repogym.toolchains.java.maven import build_step
from repogym.toolchains.java.script import M2, MAVEN

WARM_UP = ("'-Dtest=*#repogymNoSuchMethod'", "-Dsurefire.failIfNoSpecifiedTests=false",
           "-Dmaven.test.failure.ignore=true", "-Dsurefire.timeout=900")


@dataclass(frozen=True)
class MavenProject:
    root: Path
    poms: tuple[str, ...]  # every tracked pom.xml
    test_files: tuple[str, ...]  # tracked Java test sources

    @classmethod
    def read(cls, root: Path) -> MavenProject | None:
        """The project at ``root``, or None when it is not a Maven project with tests."""
        tracked = _tracked(root)
        if "pom.xml" not in tracked:
            return None
        tests = tuple(p for p in tracked if p.endswith(".java") and is_test_source(p))
        if not tests:
            return None
        poms = tuple(p for p in tracked if p == "pom.xml" or p.endswith("/pom.xml"))
        return cls(root, poms, tests)

    def install_steps(self) -> list[str]:
        """The extension, every dependency and plugin of a test run, no build output."""
        maven = " ".join(MAVEN)
        return [
            f'set -e; mkdir -p "{M2}"\n{build_step()}',
            f"{maven} {' '.join(WARM_UP)} clean test",
            f"{maven} -o clean",
        ]


def is_test_source(path: str) -> bool:
    """A Java test source under a module's ``src/test/java``."""
    return f"/{files.TEST_ROOT}/" in f"/{path}"


def _tracked(repo: Path) -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=repo, capture_output=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


__all__ = ["MavenProject", "is_test_source"]
