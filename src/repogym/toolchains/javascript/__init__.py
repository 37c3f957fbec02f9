"""JavaScript and TypeScript: npm, pnpm and yarn projects, tested with jest, vitest, mocha,
uvu, ava, node-tap or node's own runner.

Environment: the Node.js layer (:mod:`~repogym.toolchains.javascript.layer`) over the base
image; the project's package manager (a pinned pnpm or yarn goes into the environment's
``bin``); its dependencies installed from the lock file where there is one (``npm ci``,
``pnpm install --frozen-lockfile``, ``yarn install --frozen-lockfile``), else resolved;
``node_modules`` then lives outside the work tree, read-only (``EnvSpec.vendored``).

A run calls the runner's own binary with repogym's reporter
(:mod:`~repogym.toolchains.javascript.runners`), after the project's build when its tests
read what the build makes (a ``pretest`` script that builds). The report's settings go
through a file the reporter removes when it loads, so code under test finds neither the
report's path nor the nonce in its environment.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path, PurePosixPath
from typing import Collection, Mapping, Sequence

from repogym.errors import NoTestsError
from repogym.layout import TOOL_CACHE
from repogym.sandboxes.base import ExecResult, Sandbox
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
from repogym.toolchains.javascript import files
from repogym.toolchains.javascript.canary import Canary, plant
from repogym.toolchains.javascript.coverage import coverage_tools_steps
from repogym.toolchains.javascript.failures import read_failure
from repogym.toolchains.javascript.layer import node_layer
from repogym.toolchains.javascript.placed import PlacedRun
from repogym.toolchains.javascript.project import Project, find_project
from repogym.toolchains.javascript.report import parse_report, split_id
from repogym.toolchains.javascript.runners import (
    TAP_OLDEST,
    Invocation,
    Runner,
    runner_for,
    tap_major,
)
from repogym.toolchains.javascript.tap import parse_tap
from repogym.toolchains.runs import drop_scratch, exec_or_lost, salvaged, text_or_none

RECIPE_VERSION = "js-3"
CACHE_DIRS = ("~/.npm", "~/.cache", "~/.local/share/pnpm", "~/.yarn/berry/cache",
              "~/.pnpm-store")


class JavaScriptToolchain(Toolchain):
    """Node.js projects in JavaScript or TypeScript."""

    language = "javascript"
    source_suffixes = files.SOURCE_SUFFIXES
    not_runtime_names = files.NOT_RUNTIME_NAMES

    def detect(self, repo: Path) -> bool:
        project = Project.read(repo)
        if project is None:
            return False
        try:
            project.runner()
        except NoTestsError:
            return False
        return True

    def evidence(self, repo: Path) -> int:
        return sum(1 for path in _tracked(repo) if self.is_test_file(path)
                   and path.endswith(files.SOURCE_SUFFIXES))

    def is_test_file(self, path: str) -> bool:
        return files.is_test_file(path)

    def test_file(self, test_id: str) -> str:
        return split_id(test_id)[0]

    def read_failure(self, message: str, test_id: str,
                     sources: Mapping[str, str]) -> FailureReading | None:
        return read_failure(message, self.test_file(test_id), sources)

    def is_runtime_source(self, path: str) -> bool:
        p = PurePosixPath(path)
        return (super().is_runtime_source(path) and not files.is_declaration(path)
                and not files.is_runner_file(path)
                and not {"dist", "build", "coverage", "out"}.intersection(p.parts[:-1]))

    def is_protected(self, path: str, *, added: bool = False) -> bool:
        return self.is_test_file(path) or files.is_runner_file(path)

    def env_spec(self, checkout: Checkout, base_image: str) -> EnvSpec:
        project = find_project(checkout.path)
        # raises NoTestsError naming what is missing, or a runner repogym cannot run yet
        # (node-tap before 18), before an install that cannot be used
        runner_for(project.runner())
        if project.runner() == "tap":
            major = tap_major(project.dependencies().get("tap", ""))
            if major is not None and major < TAP_OLDEST:
                raise NoTestsError(f"node-tap {major} runs here from version {TAP_OLDEST} "
                                   "on (its runner loads repogym's reporter)")
        return EnvSpec(repo=checkout.name, commit=checkout.commit, base_image=base_image,
                       toolchain="javascript", install_steps=tuple(install_steps(project)),
                       recipe_version=RECIPE_VERSION, layer=node_layer(),
                       vendored=("node_modules",))

    def coverage(self, sandbox: Sandbox, *, timeout: float,
                 select: Sequence[str] | None = None) -> CoverageMap | None:
        """Per-test-file line coverage (see :mod:`repogym.toolchains.javascript.coverage`)."""
        from repogym.toolchains.javascript.coverage import coverage_map

        return coverage_map(self, sandbox, _project_in(sandbox), timeout=timeout,
                            select=select)

    def run_tests(
        self, sandbox: Sandbox, *, timeout: float, select: Sequence[str] | None = None,
        plugins: Sequence[RunPlugin] = (), limits: TimeLimits | None = None,
        exclude: Sequence[str] = (), allowed_changes: Collection[str] | None = (),
        check_runner: bool = True, exitfirst: bool = False, collect: Sequence[str] = (),
    ) -> TestRun:
        project = _project_in(sandbox)
        name = project.runner()
        runner = runner_for(name)
        canary = self._canary(sandbox, name, select) if check_runner else Canary()
        if canary.tests:
            select = [*(select or ()), *canary.tests]
            exitfirst = False  # the canary fails by design: the run must go on
        if runner.tap and not select and not collect:
            collect = self._test_files(sandbox)  # TAP titles are read back by their files
        placed = PlacedRun.place(sandbox, runner, select=select, exclude=exclude,
                                 limits=limits)
        inv = Invocation(scratch=placed.scratch, project_args=tuple(project.runner_args(name)),
                         select=select, exclude=exclude, collect=collect, limits=limits,
                         exitfirst=exitfirst)
        result, lost = exec_or_lost(sandbox, _command(project, runner, inv), timeout=timeout,
                                    env=placed.env(runner.env(inv)))
        run = _read(sandbox, runner, placed, inv, result, lost)
        if canary.files and not lost:
            sandbox.exec(["rm", "-f", *canary.files], timeout=30)
        return canary.check(run).model_copy(update={"sandbox_lost": lost})

    def _test_files(self, sandbox: Sandbox) -> list[str]:
        """The work tree's test files (not fixtures, helpers or type tests)."""
        listed = sandbox.exec(["git", "ls-files", "-z"], timeout=60)
        paths = [p for p in listed.stdout.split("\0") if p] if listed.ok else []
        return sorted(p for p in paths if self.is_test_file(p)
                      and p.endswith(files.SOURCE_SUFFIXES) and "-d." not in p
                      and not {"fixtures", "helpers", "__fixtures__"}.intersection(p.split("/"))
                      and not p.rsplit("/", 1)[-1].startswith("_"))

    def _canary(self, sandbox: Sandbox, runner: str, select: Sequence[str] | None) -> Canary:
        """Checks that must fail, planted beside the selected tests' files (see
        :mod:`~repogym.toolchains.javascript.canary`)."""
        files: dict[str, str] = {}
        for path in sorted({self.test_file(t) for t in select or ()}):
            text = text_or_none(sandbox, path)
            if text is not None:
                files[path] = text
        canary = plant(files, runner)
        for path, body in canary.files.items():
            sandbox.write_file(path, body)
        return canary


def _command(project: Project, runner: Runner, inv: Invocation) -> str:
    """The run's shell command: the tool cache made, the project's build when its tests read
    what it builds, then the runner."""
    cmd = runner.command(inv)
    build = project.build_script()
    if build:
        cmd = f"npm run --silent {shlex.quote(build)} && {cmd}"
    return f"mkdir -p {TOOL_CACHE} && {cmd}"


def _read(sandbox: Sandbox, runner: Runner, placed: PlacedRun, inv: Invocation,
          result: ExecResult, lost: str) -> TestRun:
    """The run as its report (or ava's TAP) says, its scratch directory removed; with a
    selection, the tests a name filter left out (jest and vitest list them as skipped) are
    not in it."""
    if runner.tap:
        run = parse_tap(result.stdout, inv.files, exit_code=result.exit_code,
                        duration=result.duration, timed_out=result.timed_out,
                        log_tail=result.stderr[-4000:])
    else:
        run = parse_report(salvaged(sandbox, placed.report, lost), nonce=placed.nonce,
                           exit_code=result.exit_code, duration=result.duration,
                           timed_out=result.timed_out,
                           log_tail=(result.stdout + result.stderr)[-4000:])
    if not lost:
        drop_scratch(sandbox, placed.scratch)
    if inv.select is None:
        return run
    wanted = set(inv.select)
    return run.model_copy(update={"results": {
        t: r for t, r in run.results.items()
        if t in wanted or (r.outcome is not Outcome.skipped and not runner.whole_files)}})


def install_steps(project: Project) -> list[str]:
    """The install recipe: the package manager, the dependencies (from the lock file when
    there is one, resolved when it does not fit), then the package managers' caches
    dropped (they are not part of the environment)."""
    pm = project.package_manager()
    steps: list[str] = []
    if pm.name in ("pnpm", "yarn"):
        package = pm.name if pm.name == "pnpm" or pm.version.startswith("1") or not pm.version \
            else "@yarnpkg/cli-dist"
        version = pm.version or ("9" if pm.name == "pnpm" else "1")
        # into the environment's bin, wherever the provider keeps it (its VIRTUAL_ENV)
        steps.append(f'npm install -g --prefix "$VIRTUAL_ENV" '
                     f"{shlex.quote(f'{package}@{version}')}")
    if pm.name == "pnpm":
        steps.append("pnpm install --frozen-lockfile || pnpm install --no-frozen-lockfile")
    elif pm.name == "yarn" and (not pm.version or pm.version.startswith("1")):
        steps.append("yarn install --frozen-lockfile --non-interactive || "
                     "yarn install --non-interactive")
    elif pm.name == "yarn":
        steps.append("yarn install --immutable || yarn install")
    elif pm.lock_file:
        steps.append("npm ci || npm install")
    else:
        steps.append("npm install")
    steps += coverage_tools_steps(project)
    build = project.build_script()
    if build:  # the tests read what it builds: it must build here (and runs before each run)
        steps.append(f"npm run --silent {shlex.quote(build)}")
    steps.append("rm -rf " + " ".join(CACHE_DIRS))
    return steps


def _project_in(sandbox: Sandbox) -> Project:
    """The project as the sandbox's work tree has it now.

    Raises:
        NoTestsError: its package.json is missing or unreadable.
    """
    try:
        text = sandbox.read_file(f"{sandbox.repo_dir}/package.json").decode("utf-8")
        data = json.loads(text)
    except (FileNotFoundError, ValueError, UnicodeDecodeError) as exc:
        raise NoTestsError(f"no readable package.json in the sandbox: {exc}") from None
    return Project(Path(sandbox.repo_dir), data if isinstance(data, dict) else {})


def _tracked(repo: Path) -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=repo, capture_output=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


TOOLCHAINS.register("javascript")(JavaScriptToolchain)

__all__ = ["JavaScriptToolchain", "install_steps"]
