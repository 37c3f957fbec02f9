"""Go: modules (and repositories from before modules), tested with ``go test``.

Environment: the Go layer (:mod:`~repogym.toolchains.go.layer`) over the base image; the
module's dependencies downloaded through the host's ``GOPROXY`` into the environment's
module cache, and every package and test binary built once so that runs start from a warm
build cache (:mod:`~repogym.toolchains.go.project`). Runs never reach the network
(``GOPROXY=off``).

A run builds each package's test binary, then runs it with ``-test.v=test2json``
(:mod:`~repogym.toolchains.go.script`) and reads the events back, checked against each
binary's exit status (:mod:`~repogym.toolchains.go.report`).

Test ids are ``<test file>::<Test>[/<subtest>...]``: the file that declares the top-level
test function, then the name ``go test`` prints. The package is the file's folder; the
file is what protection, statements and exports need, and a Go test name alone does not
say where it lives.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path, PurePosixPath
from typing import Collection, Mapping, Sequence

from repogym.errors import NoTestsError
from repogym.layout import SCRATCH
from repogym.sandboxes.base import Sandbox
from repogym.schemas.calls import FailureReading
from repogym.schemas.records import (
    Checkout,
    CoverageMap,
    EnvSpec,
    Outcome,
    TestRun,
    TimeLimits,
)
from repogym.toolchains.base import TOOLCHAINS, RunPlugin, Toolchain
from repogym.toolchains.go import files
from repogym.toolchains.go.layer import go_layer
from repogym.toolchains.go.project import GoProject
from repogym.toolchains.go.report import parse_events
from repogym.toolchains.go.script import GoRun
from repogym.toolchains.runs import drop_scratch, exec_or_lost, salvaged, text_or_none

RECIPE_VERSION = "go-1"
MIN_BINARY_TIMEOUT = 10.0  # a test binary's -test.timeout is never below this (start-up)


class GoToolchain(Toolchain):
    """Go modules, tested with ``go test``."""

    language = "go"
    source_suffixes = files.SOURCE_SUFFIXES

    def detect(self, repo: Path) -> bool:
        return GoProject.read(repo) is not None

    def evidence(self, repo: Path) -> int:
        from repogym.toolchains.go.project import _tracked

        return sum(1 for p in _tracked(repo) if p.endswith("_test.go"))

    def is_test_file(self, path: str) -> bool:
        return files.is_test_file(path)

    def is_protected(self, path: str, *, added: bool = False) -> bool:
        return files.is_test_file(path) or files.is_runner_file(path)

    def read_failure(self, message: str, test_id: str,
                     sources: Mapping[str, str]) -> FailureReading | None:
        from repogym.toolchains.go.failures import read_failure

        return read_failure(message, self.test_file(test_id), sources)

    def qualified_name(self, path: str, function: str | None) -> str:
        """``Parse`` for a function of the module's root package, ``pkg.Parse`` for one of
        the package in folder ``.../pkg`` (``Type.Method`` for a method); the file when
        there is no function."""
        if not function:
            return path
        folder = PurePosixPath(path).parent
        return function if str(folder) == "." else f"{folder.name}.{function}"

    def is_runtime_source(self, path: str) -> bool:
        """Go sources the environment builds: not vendored, and not for another system by
        their name (``x_windows.go``, ``x_darwin_arm64.go``: a bug there no test sees)."""
        p = PurePosixPath(path)
        return (super().is_runtime_source(path) and "vendor" not in p.parts[:-1]
                and not _other_platform(p.name))

    def env_spec(self, checkout: Checkout, base_image: str) -> EnvSpec:
        project = GoProject.read(checkout.path)
        if project is None:
            raise NoTestsError(f"{checkout.name}: no Go test file (*_test.go) is tracked")
        return EnvSpec(repo=checkout.name, commit=checkout.commit, base_image=base_image,
                       toolchain="go", install_steps=tuple(project.install_steps()),
                       recipe_version=RECIPE_VERSION, layer=go_layer())

    def coverage(self, sandbox: Sandbox, *, timeout: float,
                 select: Sequence[str] | None = None) -> CoverageMap | None:
        """Per-test line coverage (see :mod:`repogym.toolchains.go.coverage`)."""
        from repogym.toolchains.go.coverage import coverage_map

        declared = self._declared(sandbox)
        return coverage_map(sandbox, timeout=timeout, select=select,
                            test_id=lambda folder, name: id_of(declared, folder, name))

    def run_tests(
        self, sandbox: Sandbox, *, timeout: float, select: Sequence[str] | None = None,
        plugins: Sequence[RunPlugin] = (), limits: TimeLimits | None = None,
        exclude: Sequence[str] = (), allowed_changes: Collection[str] | None = (),
        check_runner: bool = True, exitfirst: bool = False, collect: Sequence[str] = (),
    ) -> TestRun:
        declared = self._declared(sandbox)
        if select is not None:
            select = by_file(select, declared)
        run = plan(select, exclude, limits, nonce=secrets.token_hex(16),
                   scratch=f"{SCRATCH}/repogym-go-{secrets.token_hex(6)}",
                   failfast=exitfirst and not check_runner, collect=collect,
                   canary=check_runner)
        script_path = f"{SCRATCH}/repogym-go-run-{secrets.token_hex(8)}.sh"
        sandbox.write_file(script_path, run.script())
        result, lost = exec_or_lost(sandbox, run.command(script_path), timeout=timeout,
                                    env={})
        report = salvaged(sandbox, run.report, lost)
        logs = self._build_logs(sandbox, report, run, lost)
        parsed = parse_events(
            report, nonce=run.nonce, build_logs=logs,
            test_id=lambda folder, name: id_of(declared, folder, name),
            exit_code=result.exit_code, duration=result.duration,
            timed_out=result.timed_out, log_tail=(result.stdout + result.stderr)[-4000:],
            expected=_by_folder(select or ()),
            canary=run.canary_name if run.canary else None)
        if not lost:
            drop_scratch(sandbox, run.scratch)
        if select is not None:
            wanted = set(select)
            parsed = parsed.model_copy(update={"results": {
                t: r for t, r in parsed.results.items()
                if t in wanted or r.outcome is not Outcome.skipped}})
        return parsed.model_copy(update={"sandbox_lost": lost})

    def _declared(self, sandbox: Sandbox) -> dict[tuple[str, str], str]:
        """(folder, top-level test) -> the test file declaring it, in the work tree now."""
        listed = sandbox.exec(["git", "ls-files", "-z", "-co", "--exclude-standard",
                               "*_test.go"], timeout=60)
        out: dict[tuple[str, str], str] = {}
        for path in sorted(p for p in listed.stdout.split("\0") if p.endswith("_test.go")):
            text = text_or_none(sandbox, path) or ""
            folder = str(PurePosixPath(path).parent)
            for name in files.test_functions(text):
                out.setdefault((folder, name), path)
        return out

    def _build_logs(self, sandbox: Sandbox, report: str, run: GoRun,
                    lost: str) -> dict[str, str]:
        """The build output of every package whose test binary did not build."""
        logs: dict[str, str] = {}
        failed = set(re.findall(r'"Action":"repogym-build","Nonce":"[0-9a-f]+","Package":'
                                r'"([^"]+)"', report))
        for m in re.finditer(r'"Action":"repogym-package","Nonce":"[0-9a-f]+","Package":'
                             r'"([^"]+)","Dir":"[^"]*","Index":(\d+)', report):
            if m.group(1) in failed:
                logs[m.group(1)] = salvaged(sandbox, run.build_log(int(m.group(2))), lost)
        return logs


def id_of(declared: dict[tuple[str, str], str], folder: str, name: str) -> str:
    """``<file>::<name>``: the file declaring ``name``'s top-level test in ``folder``."""
    top = name.split("/", 1)[0]
    path = declared.get((folder, top))
    if path is None:  # a test the files do not show (generated, or a method value)
        path = f"{folder}/_test.go" if folder != "." else "_test.go"
    return f"{path}::{name}"


def by_file(select: Sequence[str], declared: dict[tuple[str, str], str]) -> list[str]:
    """``select`` with each test file named alone (no ``::``) replaced by its top-level
    tests (the judge scopes runs by test file too); a file that declares none stays (its
    folder then runs whole)."""
    out: list[str] = []
    for item in select:
        if "::" in item:
            out.append(item)
            continue
        tests = sorted(f"{path}::{name}" for (_, name), path in declared.items()
                       if path == item)
        out += tests or [item]
    return list(dict.fromkeys(out))


def _by_folder(tests: Sequence[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for test in tests:
        out.setdefault(split_id(test)[0], []).append(test)
    return out


def split_id(test: str) -> tuple[str, str, str]:
    """(folder, top-level test, full name) of a test id."""
    path, _, name = test.partition("::")
    folder = str(PurePosixPath(path).parent)
    return folder, name.split("/", 1)[0], name


def plan(select: Sequence[str] | None, exclude: Sequence[str], limits: TimeLimits | None,
         *, nonce: str, scratch: str, failfast: bool = False,
         collect: Sequence[str] = (), canary: bool = False) -> GoRun:
    """The run for ``select`` (None: every test): the folders to test, their ``-run`` and
    ``-skip`` patterns (by top-level test: ``go test`` cannot pick subtests of several
    parents at once, so the parent runs whole and the others are dropped from the
    results) and each binary's time limit."""
    run_names: dict[str, set[str]] = {}
    whole: set[str] = set()  # folders a bare file path names: every test runs
    for test in select or ():
        folder, top, _ = split_id(test)
        if top:
            run_names.setdefault(folder, set()).add(top)
        else:
            whole.add(folder)
    skip_names: dict[str, set[str]] = {}
    for test in exclude:
        folder, top, name = split_id(test)
        if name == top:
            skip_names.setdefault(folder, set()).add(top)
    dirs: tuple[str, ...] | None = None
    if select is not None:
        extra = {str(PurePosixPath(p).parent) for p in collect}
        dirs = tuple(sorted(set(run_names) | whole | extra))
    for folder in whole:
        run_names.pop(folder, None)
    default = limits.run if limits else 600.0
    timeouts: dict[str, float] = {}
    if limits is not None and limits.default is not None and select is not None:
        for test in select:
            folder = split_id(test)[0]
            timeouts[folder] = timeouts.get(folder, 0.0) + limits.tests.get(test, limits.default)
        timeouts = {k: min(default, max(MIN_BINARY_TIMEOUT, v + limits.grace))
                    for k, v in timeouts.items()}
    if canary:  # the canary runs beside the selected tests
        for names in run_names.values():
            names.add(GoRun(scratch=scratch, nonce=nonce).canary_name)
    return GoRun(scratch=scratch, nonce=nonce, dirs=dirs, canary=canary,
                 run={k: _alternation(v) for k, v in run_names.items()},
                 skip={k: _alternation(v) for k, v in skip_names.items()},
                 timeouts=timeouts, default_timeout=max(MIN_BINARY_TIMEOUT, default),
                 failfast=failfast)


def _alternation(names: set[str]) -> str:
    return "^(" + "|".join(re.escape(n) for n in sorted(names)) + ")$"


TOOLCHAINS.register("go")(GoToolchain)

__all__ = ["GoToolchain", "id_of", "plan", "split_id"]


# GOOS and GOARCH values a file name may end with (go/build's knownOS and knownArch)
_GOOS = frozenset("aix android darwin dragonfly freebsd hurd illumos ios js linux nacl netbsd "
                  "openbsd plan9 solaris wasip1 windows zos".split())
_GOARCH = frozenset("386 amd64 amd64p32 arm armbe arm64 arm64be loong64 mips mipsle mips64 "
                    "mips64le mips64p32 mips64p32le ppc ppc64 ppc64le riscv riscv64 s390 "
                    "s390x sparc sparc64 wasm".split())


def _other_platform(name: str) -> bool:
    """Whether a file name (``x_windows.go``, ``x_linux_arm64.go``, ``x_386.go``) says the
    file is built only for a system other than the environment's linux/amd64."""
    parts = name.removesuffix(".go").split("_")[1:]
    if len(parts) >= 2 and parts[-2] in _GOOS and parts[-1] in _GOARCH:
        return parts[-2] != "linux" or parts[-1] != "amd64"
    if parts and parts[-1] in _GOOS:
        return parts[-1] != "linux"
    if parts and parts[-1] in _GOARCH:
        return parts[-1] != "amd64"
    return False
