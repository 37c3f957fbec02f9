"""The Toolchain contract: per-language knowledge, registered by name.

A toolchain knows, for its language, how to recognise a repository (:meth:`detect`), how
to install it (:meth:`env_spec`), which files are tests (:meth:`is_test_file`), and how to
run the tests in a sandbox and read back every test's outcome (:meth:`run_tests`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar, Protocol, Sequence

from repogym.registry import Registry
from repogym.sandboxes.base import Sandbox
from repogym.schemas.records import Checkout, CoverageMap, EnvSpec, TestRun


class TestRunner(Protocol):
    """Anything that runs a sandbox's tests like :meth:`Toolchain.run_tests` does."""

    def run_tests(
        self, sandbox: Sandbox, *, timeout: float, select: Sequence[str] | None = None
    ) -> TestRun: ...


class Toolchain(ABC):
    name: ClassVar[str]

    @abstractmethod
    def detect(self, repo: Path) -> bool:
        """True when this toolchain can handle the repository checked out at ``repo``."""

    @abstractmethod
    def env_spec(self, checkout: Checkout, base_image: str) -> EnvSpec:
        """The environment recipe: install steps run in the repository directory, in order.

        Raises:
            NoTestsError: the repository has nothing this toolchain can test.
        """

    @abstractmethod
    def is_test_file(self, path: str) -> bool:
        """True when the repo-relative ``path`` is test code (never mutated, never a fix)."""

    @abstractmethod
    def run_tests(
        self, sandbox: Sandbox, *, timeout: float, select: Sequence[str] | None = None
    ) -> TestRun:
        """Run the tests (all, or only the node ids in ``select``) and parse every outcome.

        A run that times out or dies early still returns what finished, with
        ``timed_out`` / ``trusted`` telling the caller how far to believe it.

        Raises:
            SandboxError: the sandbox broke.
        """

    def warm_runner(self, sandbox: Sandbox) -> TestRunner | None:
        """A faster runner for many runs in one sandbox (a warm process reused across runs),
        or None when the toolchain has none. It must give the same outcomes as
        :meth:`run_tests`; it is for the judge's own candidates, while grading a policy's
        patch always runs fresh."""
        return None

    def coverage(self, sandbox: Sandbox, *, timeout: float,
                 select: Sequence[str] | None = None) -> CoverageMap | None:
        """Per-test line coverage of one run, or None when the toolchain cannot measure it
        (generators then target every runtime line).

        Raises:
            TestRunError: the coverage run was unusable.
        """
        return None


TOOLCHAINS: Registry[type[Toolchain]] = Registry("toolchain")


def detect_toolchain(repo: Path) -> Toolchain:
    """The first registered toolchain that recognises the repository.

    Raises:
        NoTestsError: no toolchain recognises it.
    """
    from repogym.errors import NoTestsError

    for name in TOOLCHAINS:
        tc = TOOLCHAINS.get(name)()
        if tc.detect(repo):
            return tc
    raise NoTestsError(f"{repo.name}: no supported toolchain recognises this repository "
                       f"(supported: {', '.join(TOOLCHAINS.names())})")
