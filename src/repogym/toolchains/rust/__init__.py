"""Rust: cargo packages and workspaces, tested with libtest.

Environment: the Rust layer (:mod:`~repogym.toolchains.rust.layer`: Debian's ``rustc-web``
and ``cargo-web``, current releases built for the base image's Debian) over the base
image; the crates the project needs downloaded from crates.io into a cargo home in the
venv, and every test target built once into a warm target directory there
(:mod:`~repogym.toolchains.rust.project`). Runs never reach the network
(``CARGO_NET_OFFLINE``).

A run is one Python program in the sandbox (:mod:`~repogym.toolchains.rust.runner`): it
reads the workspace (``cargo metadata``) and each target's module tree, builds every test
binary it needs *before* any test runs, in a copy of the warm target directory outside the
work tree (a reset's ``git clean`` would delete an in-tree ``target/``; the copy is reused
until a reset, fresh for a run with a canary), then runs each binary one test at a time
with libtest's JSON events. The report is read back and checked against each binary's
exit status (:mod:`~repogym.toolchains.rust.report`). Why JSON and not the plain output:
the plain lines carry no structure (a test's output can sit between ``test x ...`` and
``ok``) and captured output is only printed at the end; libtest's JSON puts each test's
output in its own event. It is unstable, and enabled with ``RUSTC_BOOTSTRAP=-1``, which
libtest honours (any value) while rustc and cargo take it as *stable*. Why not
cargo-nextest (a process per test, JUnit): a test process that exits 0 passes there, so
code under test that calls ``std::process::exit(0)`` passes every test that reaches it;
in one libtest process per binary that exit ends the binary before its canary reports.

An exported task's in-container grader runs the same program with a plan it makes the way
:func:`plan` does (:mod:`~repogym.toolchains.rust.export`), and reads the report with the
same standard-library reader (:mod:`repogym.toolchains.plugins.repogym_rust_report`).

Test ids are ``<file>::<libtest name>``: the file that holds the test (for a unit test in
``#[cfg(test)] mod tests`` of ``src/lib.rs``, ``src/lib.rs``; for an integration test,
``tests/foo.rs``; for ``tests/foo/helpers.rs``'s tests, that file), then the name libtest
prints (``tests::parses``), which selects it exactly (``--exact``). A test binary built
with ``harness = false`` is one test, ``<root file>::main``. Doc-tests are not run: they
need rustdoc per run and belong to no test file.

Integrity: each binary's run is framed by markers carrying a nonce the code under test
never sees; a binary's exit status must agree with its events; and a canary -- a test that
must fail, appended to each binary's root file for the build and removed before any test
runs -- catches code that prints forged passes and exits cleanly (before ``main``, from a
``.init_array`` function, or from inside a test). Binaries whose crate root carries an
inner ``#![cfg(...)]`` get no canary (it could configure the canary out with the crate).

Per-test time limits: libtest has none on stable, so each binary gets one (the sum of its
selected tests' limits, or its test count times the default) and is killed past it; the
test it was running is named (``died_in``), and the tests after it never ran.

Unit tests live inside source files, so a file can be runtime source and test code at
once: :meth:`RustToolchain.test_spans` gives the lines of a file that are test code
(``#[cfg(test)]`` items and test functions), which synthetic bugs must avoid and a graded
patch must not change.
"""

from __future__ import annotations

import functools
import json
import secrets
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any, Collection, Mapping, Sequence

from repogym.errors import NoTestsError
from repogym.layout import SCRATCH
from repogym.sandboxes.base import Sandbox
from repogym.schemas.calls import FailureReading
from repogym.schemas.records import Checkout, EnvSpec, Outcome, TestRun, TimeLimits
from repogym.toolchains.base import NOT_RUNTIME_DIRS, TOOLCHAINS, RunPlugin, Toolchain
from repogym.toolchains.runs import exec_or_lost, salvaged
from repogym.toolchains.rust import files
from repogym.toolchains.rust.layer import rust_layer
from repogym.toolchains.rust.project import (
    CARGO_ENV,
    DROP_ENV,
    SEED,
    TARGET_TMP,
    RustProject,
)
from repogym.toolchains.rust.report import parse_report
from repogym.toolchains.rust.runner import command

RECIPE_VERSION = "rust-1"
CANARY_PREFIX = "zzzz_repogym_canary_"  # sorts after every test name: it runs last


class RustToolchain(Toolchain):
    """Cargo packages and workspaces, tested with libtest."""

    language = "rust"
    source_suffixes = files.SOURCE_SUFFIXES
    not_runtime_names = frozenset({"build.rs"})
    unit_tests_in_sources = True  # test ids name src/*.rs: grading guards their test_spans

    def detect(self, repo: Path) -> bool:
        return RustProject.read(repo) is not None

    def evidence(self, repo: Path) -> int:
        project = RustProject.read(repo)
        return project.test_files if project else 0

    def is_test_file(self, path: str) -> bool:
        return files.is_test_file(path)

    def is_protected(self, path: str, *, added: bool = False) -> bool:
        return files.is_test_file(path) or files.is_runner_file(path)

    def is_runtime_source(self, path: str) -> bool:
        dirs = PurePosixPath(path).parts[:-1]
        return super().is_runtime_source(path) and not files.NOT_RUNTIME_DIRS.intersection(
            dirs) and not NOT_RUNTIME_DIRS.intersection(dirs)

    def test_spans(self, path: str, text: str) -> tuple[tuple[int, int], ...]:
        """The lines (1-based, both ends included) of the repo-relative ``path``, whose
        text is ``text``, that are test code although the file is not a test file:
        ``#[cfg(test)]`` items and test functions. A synthetic bug must not go there, and
        a graded patch must not change them. Every line, for a test file."""
        if self.is_test_file(path):
            return ((1, max(1, text.count("\n") + 1)),)
        return files.test_spans(text) if PurePosixPath(path).suffix == ".rs" else ()

    def read_failure(self, message: str, test_id: str,
                     sources: Mapping[str, str]) -> FailureReading | None:
        """A libtest panic read against the test's source
        (:func:`repogym.toolchains.rust.failures.read_failure`)."""
        from repogym.toolchains.rust.failures import read_failure

        return read_failure(message, test_id, sources)

    def qualified_name(self, path: str, function: str | None) -> str:
        """Rust's path of ``function`` in the module of ``path``: ``parse`` at a crate
        root (``src/lib.rs``, ``src/main.rs``), ``parser::parse`` for ``src/parser.rs``
        or ``src/parser/mod.rs``; the module alone when there is no function."""
        parts = list(PurePosixPath(path).with_suffix("").parts)
        if "src" in parts:
            parts = parts[len(parts) - parts[::-1].index("src"):]
        if parts and parts[-1] in {"mod", "lib", "main"}:
            parts = parts[:-1]
        module = "::".join(parts)
        if not function:
            return module or path
        return f"{module}::{function}" if module else function

    def env_spec(self, checkout: Checkout, base_image: str) -> EnvSpec:
        project = RustProject.read(checkout.path)
        if project is None:
            raise NoTestsError(f"{checkout.name}: no Cargo.toml with tests (a tests/ folder, "
                               "or #[test] in src/)")
        return EnvSpec(repo=checkout.name, commit=checkout.commit, base_image=base_image,
                       toolchain="rust", install_steps=tuple(project.install_steps()),
                       recipe_version=RECIPE_VERSION, layer=rust_layer())

    def run_tests(
        self, sandbox: Sandbox, *, timeout: float, select: Sequence[str] | None = None,
        plugins: Sequence[RunPlugin] = (), limits: TimeLimits | None = None,
        exclude: Sequence[str] = (), allowed_changes: Collection[str] | None = (),
        check_runner: bool = True, exitfirst: bool = False, collect: Sequence[str] = (),
    ) -> TestRun:
        run = plan(select, exclude, limits, nonce=secrets.token_hex(16),
                   scratch=f"{SCRATCH}/repogym-rust-{secrets.token_hex(6)}",
                   budget=timeout, collect=collect, canary=check_runner,
                   failfast=exitfirst and not check_runner)
        script_path = f"{SCRATCH}/repogym-rust-run-{secrets.token_hex(8)}.py"
        sandbox.write_file(script_path, run.script())
        result, lost = exec_or_lost(sandbox, command(script_path), timeout=timeout, env={})
        report = salvaged(sandbox, run.report, lost)
        parsed = parse_report(
            report, nonce=run.nonce, exit_code=result.exit_code, duration=result.duration,
            timed_out=result.timed_out, log_tail=(result.stdout + result.stderr)[-4000:],
            expected=tuple(select or ()), canary=run.canary_name if run.canary else None)
        if not lost:
            sandbox.exec(run.cleanup(), timeout=60)
        if select is not None:
            wanted = set(select)
            parsed = parsed.model_copy(update={"results": {
                t: r for t, r in parsed.results.items()
                if t in wanted or self.test_file(t) in wanted
                or r.outcome is not Outcome.skipped}})
        return parsed.model_copy(update={"sandbox_lost": lost})


@dataclass(frozen=True)
class RustRun:
    """What one run does (:mod:`~repogym.toolchains.rust.runner` reads it as its plan)."""

    nonce: str
    scratch: str
    budget: float  # seconds the whole run may take
    select: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    collect: tuple[str, ...] = ()
    limits: dict[str, Any] = field(default_factory=dict)
    canary: bool = False
    failfast: bool = False

    @property
    def canary_name(self) -> str:
        """The test planted in each binary when ``canary``: it must fail. It sorts after
        every other test (libtest runs them by name), so code that ends the binary early
        ends it before the canary reports."""
        return f"{CANARY_PREFIX}{self.nonce[:16]}"

    @property
    def report(self) -> str:
        return f"{self.scratch}/report.jsonl"

    def payload(self) -> dict[str, Any]:
        return {"nonce": self.nonce, "scratch": self.scratch, "report": self.report,
                "budget": self.budget, "select": None if self.select is None
                else list(self.select), "exclude": list(self.exclude),
                "collect": list(self.collect), "limits": self.limits, "canary": self.canary,
                "canary_name": self.canary_name, "failfast": self.failfast,
                "seed": SEED, "target_dir": None, "tmp_link": TARGET_TMP,
                "cargo_env": CARGO_ENV, "drop_env": list(DROP_ENV)}

    def script(self) -> str:
        """The runner's program: the scanner, the runner, and the call with this plan."""
        return f"{program()}\n\nmain(json.loads({json.dumps(json.dumps(self.payload()))}))\n"

    def cleanup(self) -> str:
        """Put back the root files a run that stopped mid-build left a canary in (their
        backups are listed in ``planted`` until the runner restores them), then remove
        the scratch folder."""
        s = self.scratch
        return (f"if [ -f {s}/planted ]; then while IFS=$'\\t' read -r b r; do "
                f'cp -p "$b" "$r"; done < {s}/planted; fi; rm -rf {s}')


@functools.cache
def program() -> str:
    """The runner's program without its call: :mod:`~repogym.toolchains.rust.scan`'s text,
    then :mod:`~repogym.toolchains.rust.runner`'s (both standard library only)."""
    package = resources.files("repogym.toolchains.rust")
    return "\n".join(package.joinpath(name).read_text() for name in ("scan.py", "runner.py"))


def plan(select: Sequence[str] | None, exclude: Sequence[str], limits: TimeLimits | None,
         *, nonce: str, scratch: str, budget: float = 600.0, collect: Sequence[str] = (),
         canary: bool = False, failfast: bool = False) -> RustRun:
    """The run for ``select`` (None: every test; an entry without ``::`` names a whole
    file), never running ``exclude``, with per-test ``limits``."""
    lim = limits or TimeLimits(run=budget)
    files_named = {t.partition("::")[0] for t in select or ()}
    return RustRun(nonce=nonce, scratch=scratch, budget=budget,
                   select=None if select is None else tuple(dict.fromkeys(select)),
                   exclude=tuple(dict.fromkeys(exclude)),
                   collect=tuple(sorted({*collect, *files_named})),
                   limits={"tests": dict(lim.tests), "default": lim.default,
                           "grace": lim.grace, "run": min(lim.run, budget)},
                   canary=canary, failfast=failfast)


TOOLCHAINS.register("rust")(RustToolchain)

__all__ = ["CANARY_PREFIX", "RustRun", "RustToolchain", "plan", "program"]
