"""The Toolchain contract: per-language knowledge, registered by name.

A toolchain knows, for its language, how to recognise a repository (:meth:`detect`), how
to install it (:meth:`env_spec`), which files are tests (:meth:`is_test_file`), and how to
run the tests in a sandbox and read back every test's outcome (:meth:`run_tests`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Callable, ClassVar, Collection, Mapping, Protocol, Sequence

from repogym.registry import Registry
from repogym.sandboxes.base import Sandbox
from repogym.schemas.calls import CallTrace, FailureReading
from repogym.schemas.records import Checkout, CoverageMap, EnvSpec, TestRun, TimeLimits


@dataclass(frozen=True)
class RunPlugin:
    """An extra in-process helper for one test run, beside the report (e.g. a call tracer).

    Python: ``source`` is a pytest plugin module, written next to the report plugin under a
    random module name and loaded with ``-p``. It finds its settings in the JSON file beside
    itself (``<module file without .py>.json``: ``config`` plus ``"out"``, the path it may
    write its output to); the run returns that output as ``TestRun.extras[name]``. What it
    writes is not evidence a grade may rest on: code under test can write there too.
    """

    name: str
    source: str
    config: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CallTracing:
    """A call tracer for one task's failing tests: the plugin to pass to each run, and how
    to read what it recorded (a :class:`~repogym.schemas.calls.CallTrace`)."""

    plugin: RunPlugin
    read: Callable[[str], CallTrace]

    def trace_of(self, run: TestRun) -> CallTrace:
        return self.read(run.extras.get(self.plugin.name, ""))


class TestRunner(Protocol):
    """Anything that runs a sandbox's tests like :meth:`Toolchain.run_tests` does."""

    def run_tests(
        self, sandbox: Sandbox, *, timeout: float, select: Sequence[str] | None = None,
        plugins: Sequence[RunPlugin] = (), limits: TimeLimits | None = None,
        exclude: Sequence[str] = (), allowed_changes: Collection[str] | None = (),
        check_runner: bool = True, exitfirst: bool = False, collect: Sequence[str] = (),
    ) -> TestRun: ...


# folders whose code is not the project's runtime code, in any language
NOT_RUNTIME_DIRS = frozenset({"docs", "doc", "examples", "example", "benchmarks", "benchmark",
                              "bench", "node_modules", "vendor", "third_party"})


class Toolchain(ABC):
    name: ClassVar[str]
    language: ClassVar[str]  # the language its tasks are in (a dataset column)
    source_suffixes: ClassVar[tuple[str, ...]] = ()  # its language's source files
    not_runtime_names: ClassVar[frozenset[str]] = frozenset()  # build or runner scripts
    unit_tests_in_sources: ClassVar[bool] = False  # see test_spans
    # the version of env_serves' rule: answers cached under another are asked again
    serve_rule: ClassVar[str] = "1"

    @abstractmethod
    def detect(self, repo: Path) -> bool:
        """True when this toolchain can handle the repository checked out at ``repo``."""

    def evidence(self, repo: Path) -> int:
        """How much of the repository is this toolchain's (its test files, say): when
        several toolchains recognise a repository, the one with the most evidence takes it
        (a Python project with a ``package.json`` for its docs site stays Python)."""
        return 1

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
        self, sandbox: Sandbox, *, timeout: float, select: Sequence[str] | None = None,
        plugins: Sequence[RunPlugin] = (), limits: TimeLimits | None = None,
        exclude: Sequence[str] = (), allowed_changes: Collection[str] | None = (),
        check_runner: bool = True, exitfirst: bool = False, collect: Sequence[str] = (),
    ) -> TestRun:
        """Run the tests (all, or only the node ids in ``select``, never those in
        ``exclude``) and parse every outcome.

        Args:
            timeout: the whole run's limit (enforced by the sandbox).
            plugins: extra in-process helpers (:class:`RunPlugin`); their outputs come back
                in ``TestRun.extras``.
            limits: per-test limits (a test past its limit fails as timed out; one that
                cannot be stopped ends the run, which then names it in ``died_in``).
            allowed_changes: changes to the test runner that are the environment's own
                (``Baseline.runner_changes``); any other makes the run untrusted. None:
                record them all, judge none (the baseline's own runs).
            check_runner: False skips the runner's integrity checks (runs of repogym's own
                candidates, which do not tamper: they cost a few tens of ms a run).
            collect: test files to collect although the runner's configuration does not
                name them (a test patch's files at a commit whose configuration looks
                elsewhere); the files of the node ids in ``select`` are collected so too.
            exitfirst: stop at the first test that does not pass (a binary grade is 0
                then; the tests after it are missing from the run).

        A run the sandbox broke under returns what it streamed until then, with
        ``sandbox_lost`` saying why (reset the sandbox before the next run).

        A run that times out or dies early still returns what finished, with
        ``timed_out`` / ``trusted`` telling the caller how far to believe it.

        Raises:
            SandboxError: the sandbox broke.
        """

    def test_file(self, test_id: str) -> str:
        """The repo-relative file a test id names (pytest: ``path::Class::test``)."""
        return test_id.split("::", 1)[0]

    def is_runtime_source(self, path: str) -> bool:
        """True when the repo-relative ``path`` is the project's runtime code, where a
        synthetic bug may go: a source file of the language, not test code, not a build
        or runner script, not under docs, examples or benchmarks."""
        p = PurePosixPath(path)
        return (p.suffix in self.source_suffixes and not self.is_test_file(path)
                and p.name not in self.not_runtime_names
                and not NOT_RUNTIME_DIRS.intersection(p.parts[:-1]))

    def qualified_name(self, path: str, function: str | None) -> str:
        """How a user of the language names ``function`` of the repo-relative ``path`` (the
        module when ``function`` is None): dotted with its module by default
        (``geo.shapes.area`` for ``src/geo/shapes.py``)."""
        module = str(PurePosixPath(path).with_suffix("")).removesuffix("/__init__")
        module = module.replace("/", ".").removeprefix("src.").removeprefix("lib.")
        return f"{module}.{function}" if function else module

    def test_spans(self, path: str, text: str) -> tuple[tuple[int, int], ...]:
        """The lines (1-based, both ends included) of the repo-relative ``path``, whose
        text is ``text``, that are test code inside a runtime source file (Rust's
        ``#[cfg(test)]`` modules): a synthetic bug must not go there, and a graded patch
        may not change them. Default none: the language's tests live in test files.

        A toolchain that returns spans sets ``unit_tests_in_sources``: its test ids may
        then name runtime source files (:meth:`test_file`), which grading guards by these
        spans instead of protecting the whole file (where the fix goes too)."""
        return ()

    def is_protected(self, path: str, *, added: bool = False) -> bool:
        """True when a graded patch may not change the repo-relative ``path`` (``added``:
        the patch creates it): test code, and whatever decides how the tests run (runner
        configuration, start-up hooks). Changes a patch makes there are thrown away before
        grading."""
        return self.is_test_file(path)

    def runner_setup(self, sandbox: Sandbox) -> str | None:
        """A digest of everything about the test runner that grading depends on, in the
        sandbox's current state: the runner and its plugins as installed, start-up hooks,
        the runner's configuration as committed. Two states with the same digest have the
        same test setup, so probing the verifier on one says the same of the other. None
        when the toolchain cannot tell (probes are then kept per environment image).

        Raises:
            SandboxError: the sandbox broke.
        """
        return None

    def env_may_serve(self, env: EnvSpec, repo: Path, wanted: EnvSpec) -> bool:
        """What :meth:`env_serves` can rule out without a sandbox, from the specs and the
        git history of ``repo`` (checked out at ``wanted.commit``; it holds ``env.commit``
        too): False when ``env`` cannot serve ``wanted`` whatever it holds. Asked first, so
        a commit that differs in what no install changes costs no sandbox."""
        return True

    def env_serves(self, sandbox: Sandbox, env: EnvSpec, repo: Path, wanted: EnvSpec, *,
                   timeout: float) -> bool:
        """True when the environment ``sandbox`` runs (built from ``env``), reset to
        ``wanted.commit`` (checked out on the host at ``repo``), already holds everything
        ``wanted``'s install steps would install, so what is judged at that commit can be
        judged there rather than in an environment built for it. False (build one) when the
        toolchain cannot tell.

        Raises:
            SandboxError: the sandbox broke.
        """
        return False

    def warm_runner(self, sandbox: Sandbox) -> TestRunner | None:
        """A faster runner for many runs in one sandbox (a warm process reused across runs),
        or None when the toolchain has none. It must give the same outcomes as
        :meth:`run_tests`; it is for the judge's own candidates, while grading a policy's
        patch always runs fresh."""
        return None

    def call_tracer(self, sandbox: Sandbox, gold_patch: str,
                    tests: Sequence[str]) -> CallTracing | None:
        """How to record what ``tests`` call into the functions ``gold_patch`` changes, in
        the sandbox's current state (the broken one: the gold patch's old side), or None
        when the toolchain cannot trace calls (statements then rest on failure messages)."""
        return None

    def read_failure(self, message: str, test_id: str,
                     sources: Mapping[str, str]) -> FailureReading | None:
        """What a failed test's message shows, read in the runner's own terms (None: the
        statement writer's generic reading applies). ``sources``: the test files' texts."""
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


def toolchain_for(language: str) -> Toolchain:
    """The registered toolchain of ``language`` (a task's ``language`` column).

    Raises:
        UnknownPluginError: no toolchain is registered for it (lists the languages there are).
    """
    from repogym.errors import UnknownPluginError

    found = [TOOLCHAINS.get(n) for n in TOOLCHAINS if TOOLCHAINS.get(n).language == language]
    if not found:
        raise UnknownPluginError("toolchain language", language,
                                 sorted({TOOLCHAINS.get(n).language for n in TOOLCHAINS}))
    return found[0]()


def detect_toolchain(repo: Path) -> Toolchain:
    """The toolchain that recognises the repository with the most evidence.

    Raises:
        NoTestsError: no toolchain recognises it.
    """
    from repogym.errors import NoTestsError

    found = [tc for tc in (TOOLCHAINS.get(name)() for name in TOOLCHAINS) if tc.detect(repo)]
    if found:
        return max(found, key=lambda tc: tc.evidence(repo))  # first of equals: by name
    raise NoTestsError(f"{repo.name}: no supported toolchain recognises this repository "
                       f"(supported: {', '.join(TOOLCHAINS.names())})")
