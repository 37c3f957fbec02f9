"""Python toolchain: detect, install recipe, pytest runs with a structured report.

Install recipe (heuristic, no LLM), run in the repository with the env's venv first on PATH:

1. upgrade pip/setuptools/wheel (the base's pip may predate PEP 660 and dependency groups);
2. the project itself, editable, with whichever of the extras ``test, tests, testing, dev``
   it declares (pyproject ``[project.optional-dependencies]``, setup.cfg
   ``[options.extras_require]``, or ``extras_require`` in setup.py); falling back to
   a plain editable install, then to a non-editable one;
3. test requirement files (``requirements-test.txt``, ``requirements/test*.txt``, ...; the
   development ones, ``requirements-dev.txt`` and the like, only where there is none), and
   ``requirements.txt`` when there is no project metadata; PEP 735 dependency groups
   ``test``/``tests``/``testing``/``dev``; tox ``[testenv] deps`` without substitutions; the
   test and dev groups of Poetry, PDM and Hatch (:mod:`repogym.toolchains.python_deps`),
   best effort;
4. pytest and pytest-cov (for the baseline's per-test coverage), plus plugins the configuration needs (``--cov`` -> pytest-cov, ``-n`` ->
   pytest-xdist, ``timeout`` -> pytest-timeout), plus third-party modules the tests import
   that nothing above installed (best effort: one failing name does not fail the step);
5. the project again, editable and without dependencies: a test tool may depend on the
   project itself (pytest needs iniconfig) and have replaced it with a PyPI release.

A repository made from an sdist has no git tags, so setuptools-scm would invent version
0.1.dev1 and dependants would reject it: its PKG-INFO version is pretended instead.

Test runs: ``python -m pytest -p rg_<random>`` with our plugin copied into a fresh
scratch directory per run, and its report at an unguessable path. Grading believes the
report only when it is complete (the plugin's ``finish`` event with this run's nonce) and
consistent with pytest's exit code.
"""

from __future__ import annotations

import ast
import configparser
import functools
import hashlib
import json
import re
import secrets
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Collection, Iterable, Sequence

from repogym import pyast
from repogym.errors import NoTestsError, SandboxError, TestRunError
from repogym.sandboxes.base import Sandbox
from repogym.schemas.records import Checkout, CoverageMap, EnvSpec, TestRun, TimeLimits
from repogym.toolchains import python_deps as pydeps
from repogym.toolchains.base import TOOLCHAINS, CallTracing, RunPlugin, TestRunner, Toolchain
from repogym.toolchains.pytest_report import parse_report
from repogym.toolchains.python_build import C_SUFFIXES, builds_c, c_build_layer
from repogym.toolchains.runs import drop_scratch
from repogym.toolchains.runs import exec_or_lost as _exec_or_lost
from repogym.toolchains.runs import salvaged as _salvaged
from repogym.toolchains.runs import text_or_none as _text_or_none

RECIPE_VERSION = "py-7"
TEST_EXTRAS = ("test", "tests", "testing", "dev")
TEST_REQUIREMENT_FILES = (
    "requirements-test.txt", "requirements_test.txt", "test-requirements.txt",
    "test_requirements.txt", "requirements-tests.txt", "requirements/test.txt",
    "requirements/tests.txt", "requirements/testing.txt", "tests/requirements.txt",
    "test/requirements.txt",
)
# read only when no file above exists: a development file adds the docs, linters and
# type checkers to the tests' requirements (markupsafe's requirements/dev.txt: sphinx, mypy,
# tox and pre-commit over requirements/tests.txt, 10 s of every environment build) and may
# pin the project itself from PyPI
DEV_REQUIREMENT_FILES = (
    "requirements-dev.txt", "requirements_dev.txt", "dev-requirements.txt",
    "requirements/dev.txt",
)
# import name -> PyPI name, where they differ
IMPORT_TO_DIST = {
    "yaml": "pyyaml", "dateutil": "python-dateutil", "PIL": "pillow", "attr": "attrs",
    "bs4": "beautifulsoup4", "sklearn": "scikit-learn", "cv2": "opencv-python",
    "dns": "dnspython", "jwt": "pyjwt", "OpenSSL": "pyopenssl", "Crypto": "pycryptodome",
    "serial": "pyserial", "magic": "python-magic", "slugify": "python-slugify",
    "unidecode": "unidecode", "text_unidecode": "text-unidecode", "pytest_mock": "pytest-mock",
    "freezegun": "freezegun", "hamcrest": "pyhamcrest", "multipart": "python-multipart",
}
TEST_DIR_NAMES = {"tests", "test", "testing"}
TEST_FILE_NAMES = ("conftest.py", "test.py", "tests.py")
EDITABLE_PREFIXES = ("__editable__",)  # setuptools' editable-install finders and .pth
# every configuration file some pytest version reads (9: pytest.toml and .pytest.toml
# first); runs pin the one the installed pytest reads (plugins/repogym_launch.py), so these
# only matter to a patch that edits one
RUNNER_CONFIG = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml",
                 "tox.ini", "setup.cfg")
# files the interpreter runs before pytest starts, wherever they sit on sys.path
STARTUP_HOOKS = ("sitecustomize.py", "usercustomize.py", ".pth")
# install metadata: an egg-info's entry_points.txt can make pytest load a plugin
INSTALL_METADATA = (".egg-info", ".dist-info")
# what the runner imports: a module of that name at the root of the work tree (which runs
# put on sys.path) would stand in for it
RUNNER_MODULES = frozenset({"pytest", "_pytest", "pluggy", "py", "iniconfig", "packaging",
                            "exceptiongroup", "tomli", "colorama", "pygments"})
SKIP_DIRS = {".git", ".tox", ".nox", "node_modules", ".venv", "venv", "build", "dist"}


def _toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def declared_extras(repo: Path) -> set[str]:
    """Extras the project declares, from pyproject, setup.cfg or setup.py."""
    extras = set(_toml(repo / "pyproject.toml").get("project", {}).get("optional-dependencies", {}))
    cfg = configparser.ConfigParser()
    try:
        cfg.read(repo / "setup.cfg", encoding="utf-8")
        if cfg.has_section("options.extras_require"):
            extras |= set(cfg.options("options.extras_require"))
    except configparser.Error:
        pass
    setup_py = repo / "setup.py"
    if setup_py.exists():
        text = setup_py.read_text(encoding="utf-8", errors="replace")
        for name in TEST_EXTRAS:
            if re.search(rf"['\"]{name}['\"]\s*:", text):
                extras.add(name)
    return extras


def requirement_files(repo: Path) -> list[str]:
    """The test requirement files the recipe installs: the test-specific ones, or where
    there is none, the development ones."""
    for names in (TEST_REQUIREMENT_FILES, DEV_REQUIREMENT_FILES):
        if found := [rel for rel in names if (repo / rel).is_file()]:
            return found
    return []


def sdist_version(repo: Path) -> str | None:
    """The version in an sdist's PKG-INFO, if the repository was made from one."""
    pkg_info = repo / "PKG-INFO"
    if not pkg_info.is_file():
        return None
    match = re.search(r"^Version:\s*(\S+)", pkg_info.read_text(errors="replace"), re.M)
    return match.group(1) if match else None


def dependency_groups(repo: Path) -> list[str]:
    groups = _toml(repo / "pyproject.toml").get("dependency-groups", {})
    return [g for g in ("test", "tests", "testing", "dev") if g in groups]


def tox_deps(repo: Path) -> list[str]:
    cfg = configparser.ConfigParser(interpolation=None)
    try:
        cfg.read(repo / "tox.ini", encoding="utf-8")
    except configparser.Error:
        return []
    if not cfg.has_option("testenv", "deps"):
        return []
    deps = [d.strip() for d in cfg.get("testenv", "deps").splitlines()]
    return [d for d in deps if d and not d.startswith(("-", "{", "#")) and "{" not in d and ":" not in d]


def pytest_config_text(repo: Path) -> str:
    """The pytest configuration as text (for spotting plugins it needs)."""
    parts = []
    for name in ("pytest.ini", "tox.ini", "setup.cfg"):
        p = repo / name
        if p.exists():
            parts.append(p.read_text(encoding="utf-8", errors="replace"))
    ini = _toml(repo / "pyproject.toml").get("tool", {}).get("pytest", {}).get("ini_options", {})
    parts.append(json.dumps(ini))
    return "\n".join(parts)


def needed_plugins(config_text: str) -> list[str]:
    plugins = []
    if re.search(r"--cov\b", config_text):
        plugins.append("pytest-cov")
    if re.search(r"(^|\s|\")-n\s*\w", config_text) or "--numprocesses" in config_text:
        plugins.append("pytest-xdist")
    if re.search(r"^\s*timeout\s*=", config_text, re.M) or "--timeout" in config_text:
        plugins.append("pytest-timeout")
    if "asyncio_mode" in config_text:
        plugins.append("pytest-asyncio")
    return plugins


def _walk_py(repo: Path) -> Iterable[Path]:
    for path in sorted(repo.rglob("*.py")):
        if not SKIP_DIRS.intersection(path.relative_to(repo).parts):
            yield path


def _still_editable(repo: Path) -> str:
    """A shell test, with ``||``, that the project's distribution is installed in editable
    mode (its ``direct_url.json`` says so); empty when its name is not declared statically."""
    name = pydeps.project_name(repo)
    if not name or not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", name):
        return ""
    code = ("import importlib.metadata as m, json, sys; "
            f"u = m.distribution('{name}').read_text('direct_url.json') or '{{}}'; "
            "sys.exit(0 if json.loads(u).get('dir_info', {}).get('editable') else 1)")
    return f'python -I -c "{code}" 2>/dev/null || '  # -I: not the tree's egg-info


def top_level_names(repo: Path) -> set[str]:
    """Module names the repository itself provides (so they are never pip-installed)."""
    names = set()
    for root in (repo, repo / "src", repo / "lib"):
        if root.is_dir():
            for child in root.iterdir():
                if child.suffix == ".py" or (child / "__init__.py").exists():
                    names.add(child.stem if child.suffix == ".py" else child.name)
    for path in _walk_py(repo):  # test helper modules imported by bare name
        names.add(path.stem)
    return names


def imported_modules(paths: Iterable[Path]) -> set[str]:
    mods: set[str] = set()
    for path in paths:
        try:
            tree = pyast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                mods.add(node.module.split(".")[0])
    return mods


PIP = "python -m pip install -q"
# a dry run that only looks at what is installed: it fails unless everything asked for is
# there already (--no-index), and builds the project's metadata with what is installed
DRY_RUN = f"{PIP} --dry-run --no-index --no-build-isolation"


@dataclass(frozen=True)
class InstallPlan:
    """What the recipe installs at one commit (see the module doc); :meth:`steps` renders
    it as the environment's install steps, :meth:`check` as a command that succeeds only
    when an environment already holds all of it."""

    has_project: bool
    extras: tuple[str, ...]  # of TEST_EXTRAS, declared by the project
    requirement_files: tuple[str, ...]
    groups: tuple[tuple[str, tuple[str, ...]], ...]  # PEP 735 group, its requirements
    tox: tuple[str, ...]
    tools: tuple[str, ...]  # test dependencies of tables pip cannot read (best effort)
    test_tools: tuple[str, ...]  # pytest, pytest-cov and the plugins the configuration needs
    modules: tuple[tuple[str, str], ...]  # third-party module the tests import, its dist
    still_editable: str  # the shell test of _still_editable
    version: str | None  # an sdist's version (setuptools-scm is told it)
    # the project's requirements with its extras, when pyproject.toml declares them
    # statically (then checking them needs no build backend: hatchling, setuptools-scm, ...)
    static: tuple[str, ...] | None = None

    def steps(self) -> list[str]:
        # no step upgrades pip, setuptools and wheel: the prepared layer every build starts
        # from holds them (sandboxes.env_build.prepared_layer); asking the index again cost
        # 1.2-2 s of every build
        steps: list[str] = []
        if self.has_project:
            tries = [f"-e {shlex.quote('.[' + ','.join(self.extras) + ']')}"] if self.extras \
                else []
            steps.append(" || ".join(f"{PIP} {t}"  # editable, then not
                                     for t in [*tries, "-e .", "."]))
        steps += [f"{PIP} -r {shlex.quote(rel)}" for rel in self.requirement_files]
        for group, fallback in self.groups:  # pip resolves the group; ours is the fallback
            steps.append(f"{PIP} --group {group}"
                         + (f" || {pydeps.one_at_a_time(fallback)}" if fallback else ""))
        if self.tox:
            steps.append(f"{PIP} " + " ".join(shlex.quote(d) for d in self.tox))
        if self.tools:  # best effort: one unresolvable name must not fail the build
            steps.append(pydeps.best_effort_install(self.tools))
        steps.append(self._test_tools_step())
        if self.has_project:
            # test tools may have replaced the project (pytest needs iniconfig, pluggy, ...):
            # make sure the code imported is the working copy's (when the project is still
            # installed in editable mode, as it usually is, a reinstall only costs a build)
            steps.append(self.still_editable + f"{PIP} --no-deps -e . || true")
        return [self._versioned(s) for s in steps]

    def _test_tools_step(self) -> str:
        base = f"{PIP} " + " ".join(self.test_tools)
        if not self.modules:
            return base
        # best effort per module: a name that is not on PyPI must not fail the build
        pairs = " ".join(f"{m}={d}" for m, d in self.modules)
        return (f"{base} && for p in {pairs}; do m=${{p%%=*}}; d=${{p#*=}}; "
                f"python -c \"import $m\" 2>/dev/null || {PIP} \"$d\" "
                f">/dev/null 2>&1 || echo \"repogym: could not install $d (skipped)\"; done")

    def check(self) -> str:
        """One shell command, run in an environment checked out at this plan's commit, that
        succeeds only when the environment already holds everything the steps would install:
        pip resolves it against what is installed, offline, in two parts as the steps
        install it -- the project with its requirements, then everything else. Stricter
        than the steps: the project's first choice of extras, and best-effort requirements,
        must be there. pip and the build tools are not looked at; the project stays as
        installed.

        The steps install the rest after the project and then put the project back, so a
        test tool's requirement on the project (pytest's on iniconfig: 0.2 at its old
        commits, against pytest's ``iniconfig>=2``) is not the environment's to meet: where
        pip cannot resolve the rest, it must find each of its requirements installed
        (``--no-deps``) and everything installed complete but for the project
        (``plugins/repogym_env_check.py``)."""
        target = (f"-e {shlex.quote('.[' + ','.join(self.extras) + ']')}" if self.extras
                  else "-e .") if self.has_project and self.static is None else ""
        project = " ".join(a for a in [target, *(shlex.quote(r) for r in self.static or ())]
                           if a)
        rest = " ".join([*(f"-r {shlex.quote(f)}" for f in self.requirement_files),
                         *(f"--group {g}" for g, _ in self.groups),
                         *(shlex.quote(r) for r in (*self.tox, *self.tools, *self.test_tools))])
        parts = [f"{DRY_RUN} {project}"] if project else []
        if rest:
            whole = f"python -I -c {shlex.quote(_code_of('repogym_env_check.py'))}"
            parts.append(f"{{ {DRY_RUN} {rest} || {{ {DRY_RUN} --no-deps {rest} && {whole}; }}; }}"
                         if self.has_project else f"{DRY_RUN} {rest}")
        parts += [f"python -c {shlex.quote('import ' + m)}" for m, _ in self.modules]
        return self._versioned(" && ".join(parts))

    def _versioned(self, step: str) -> str:
        if not self.version:
            return step
        return f"export SETUPTOOLS_SCM_PRETEND_VERSION={shlex.quote(self.version)}; {step}"


def same_native_sources(commit: str) -> str:
    """A shell test, run in the work tree, that HEAD's C, C++ and Cython sources, headers
    and ``setup.py`` are ``commit``'s."""
    globs = sorted({*(f"*{suffix}" for suffix in C_SUFFIXES), "*.h", "*.hpp", "*.pxd"})
    return (f"git diff --quiet {shlex.quote(commit)} HEAD -- setup.py "
            + " ".join(shlex.quote(g) for g in globs))


def same_packages(commit: str) -> str:
    """A shell test, run in the work tree, that HEAD has the project's top-level packages
    (``pkg/__init__.py``, ``src/pkg/__init__.py``, ``src/mod.py``) where ``commit`` has
    them: an editable install made at ``commit`` imports them from there."""
    listing = ("git ls-tree -r --name-only {rev} | grep -E "
               + shlex.quote(r"^([A-Za-z_][A-Za-z0-9_]*/__init__|src/[A-Za-z_][A-Za-z0-9_]*"
                             r"(/__init__)?)\.py$")
               + " | grep -vE " + shlex.quote(r"^(src/)?(tests?|testing|docs?)/") + " | sort")
    return (f'test "$({listing.format(rev=shlex.quote(commit))})" = '
            f'"$({listing.format(rev="HEAD")})"')


class PythonToolchain(Toolchain):
    """pytest-based Python projects."""

    language = "python"
    source_suffixes = (".py",)
    not_runtime_names = frozenset({"setup.py", "conftest.py", "noxfile.py"})
    serve_rule = "2"  # the project apart from the rest, which may need another version of it

    def detect(self, repo: Path) -> bool:
        markers = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "tox.ini")
        return any((repo / m).exists() for m in markers) or any(_walk_py(repo))

    def evidence(self, repo: Path) -> int:
        return len(self.test_files(repo))

    def is_test_file(self, path: str) -> bool:
        p = Path(path)
        if (p.name in TEST_FILE_NAMES or p.name.startswith("test_")
                or p.stem.endswith("_test")):
            return True
        return bool(TEST_DIR_NAMES.intersection(p.parts[:-1]))

    def is_protected(self, path: str, *, added: bool = False) -> bool:
        """Test files; every runner configuration file (any depth); start-up hooks; install
        metadata; and, when the patch adds it, a module or package at the root named like a
        standard-library or runner module (the project's own, committed, are its own)."""
        p = Path(path)
        if self.is_test_file(path) or path.endswith(RUNNER_CONFIG + STARTUP_HOOKS):
            return True
        if any(part.endswith(INSTALL_METADATA) or part.startswith(EDITABLE_PREFIXES)
               for part in p.parts):
            return True
        if not added:
            return False
        top = p.parts[0] if p.parts else ""
        name = top.removesuffix(".py") if len(p.parts) == 1 else top
        return (len(p.parts) > 1 or top.endswith(".py")) and (
            name in sys.stdlib_module_names or name in RUNNER_MODULES)

    def test_files(self, repo: Path) -> list[Path]:
        return [p for p in _walk_py(repo)
                if self.is_test_file(str(p.relative_to(repo))) and p.name != "conftest.py"]

    def env_spec(self, checkout: Checkout, base_image: str) -> EnvSpec:
        repo = checkout.path
        if not self.test_files(repo):
            raise NoTestsError(f"{checkout.name}: no test files found (test_*.py, *_test.py, tests/)")
        return EnvSpec(repo=checkout.name, commit=checkout.commit, base_image=base_image,
                       toolchain="python", install_steps=tuple(self.install_steps(repo)),
                       recipe_version=RECIPE_VERSION,
                       layer=c_build_layer() if builds_c(repo) else None)

    def install_steps(self, repo: Path) -> list[str]:
        return self.install_plan(repo).steps()

    def install_plan(self, repo: Path) -> "InstallPlan":
        """What the recipe installs for the repository checked out at ``repo``."""
        has_project = any((repo / m).exists() for m in ("pyproject.toml", "setup.py", "setup.cfg"))
        declared = pydeps.declared_test_deps(repo)  # PEP 735, Poetry, PDM, Hatch
        local = top_level_names(repo)
        conftests = [p for p in _walk_py(repo) if p.name == "conftest.py"]
        imports = imported_modules([*self.test_files(repo), *conftests])
        missing = sorted(
            m for m in imports
            if m not in sys.stdlib_module_names and m not in local and not m.startswith("_")
            and m not in {"pytest", "repogym_report"} and m.isidentifier()
        )
        files = requirement_files(repo)
        if not has_project and (repo / "requirements.txt").exists():
            files.insert(0, "requirements.txt")
        extras = tuple(sorted(declared_extras(repo) & set(TEST_EXTRAS))) if has_project else ()
        return InstallPlan(
            has_project=has_project,
            extras=extras,
            requirement_files=tuple(files),
            groups=tuple((g, tuple(declared.requirements(pydeps.Source.PEP735, group=g)))
                         for g in dependency_groups(repo)),
            tox=tuple(tox_deps(repo)),
            tools=tuple(declared.requirements(*pydeps.TOOL_SOURCES)),
            test_tools=("pytest", "pytest-cov", *needed_plugins(pytest_config_text(repo))),
            modules=tuple((m, IMPORT_TO_DIST.get(m, m)) for m in missing),
            still_editable=_still_editable(repo) if has_project else "",
            version=sdist_version(repo),
            static=pydeps.static_requirements(repo, extras) if has_project else None)

    def run_tests(
        self, sandbox: Sandbox, *, timeout: float, select: Sequence[str] | None = None,
        plugins: Sequence[RunPlugin] = (), limits: TimeLimits | None = None,
        exclude: Sequence[str] = (), allowed_changes: Collection[str] | None = (),
        check_runner: bool = True, exitfirst: bool = False, collect: Sequence[str] = (),
    ) -> TestRun:
        run, _ = self._pytest(sandbox, timeout=timeout, select=select, plugins=plugins,
                              limits=limits, exclude=exclude, allowed_changes=allowed_changes,
                              check_runner=check_runner, exitfirst=exitfirst,
                              collect=collect)
        return run

    def runner_setup(self, sandbox: Sandbox) -> str | None:
        """The digest of what ``plugins/repogym_setup.py`` prints in the work tree: the
        interpreter, pytest and its plugins as installed, start-up hooks, the pytest
        tables of the configuration files and the conftests (None: it could not run)."""
        script = sandbox.scratch_path(".py")
        sandbox.write_file(script, plugin_source("repogym_setup.py"))
        done = sandbox.exec(f"python {script}; rc=$?; rm -f {script}; exit $rc",
                            timeout=60, env=RUN_ENV)
        if not done.ok or not done.stdout.strip().startswith("{"):
            return None
        return "py-setup-" + hashlib.sha256(done.stdout.encode()).hexdigest()[:20]

    def env_may_serve(self, env: EnvSpec, repo: Path, wanted: EnvSpec) -> bool:
        """The same build, the project's packages where they sat at the environment's
        commit (an editable install maps them by place) and, for a project that compiles
        code, the same native sources and ``setup.py``: its extension modules, built at the
        environment's commit, sit in the work tree and come back on every reset
        (markupsafe's ``_speedups``). Read from ``repo``'s git, no sandbox needed."""
        if not env.same_build(wanted):
            return False
        checks = [same_packages(env.commit)]
        if env.layer is not None:
            checks.append(same_native_sources(env.commit))
        try:
            done = subprocess.run(["bash", "-c", " && ".join(checks)], cwd=repo, timeout=60,
                                  capture_output=True)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return done.returncode == 0

    def env_serves(self, sandbox: Sandbox, env: EnvSpec, repo: Path, wanted: EnvSpec, *,
                   timeout: float) -> bool:
        """pip, offline, resolves everything the recipe at ``wanted.commit`` asks for against
        what the environment holds, once :meth:`env_may_serve` holds (asked again here)."""
        if not self.env_may_serve(env, repo, wanted):
            return False
        result = sandbox.exec(self.install_plan(repo).check(), timeout=timeout)
        return result.ok and not result.timed_out

    def warm_runner(self, sandbox: Sandbox) -> TestRunner:
        """A forking pytest server in ``sandbox`` (see :mod:`repogym.toolchains.warm`)."""
        from repogym.toolchains.warm import WarmPytest

        return WarmPytest(self, sandbox)

    def call_tracer(self, sandbox: Sandbox, gold_patch: str,
                    tests: Sequence[str]) -> CallTracing | None:
        """The call tracer (:mod:`repogym.toolchains.python_calls`) over the functions the
        gold patch changes, read from the sandbox's (broken) state."""
        from repogym.toolchains.python_calls import call_tracer, changed_functions, parse_calls

        targets = changed_functions(gold_patch, lambda path: _text_or_none(sandbox, path))
        if not targets:
            return None
        return CallTracing(plugin=call_tracer(tests, targets), read=parse_calls)

    def coverage(self, sandbox: Sandbox, *, timeout: float,
                 select: Sequence[str] | None = None) -> CoverageMap:
        """One run under pytest-cov with per-test contexts: which tests execute which lines.

        Lines run outside any test (at import or collection) belong to no test here.

        Raises:
            TestRunError: the run or its coverage report is unusable.
        """
        run, cov = self._pytest(sandbox, timeout=timeout, select=select, coverage=True)
        if not run.trusted or cov is None:
            why = "; ".join(run.problems) or "no coverage report"
            raise TestRunError(f"coverage run unusable: {why}: {run.log_tail[-500:]}")
        return parse_coverage_db(cov)

    def _pytest(self, sandbox: Sandbox, *, timeout: float, select: Sequence[str] | None,
                coverage: bool = False, plugins: Sequence[RunPlugin] = (),
                limits: TimeLimits | None = None, exclude: Sequence[str] = (),
                allowed_changes: Collection[str] | None = (),
                check_runner: bool = True,
                exitfirst: bool = False,
                collect: Sequence[str] = ()) -> tuple[TestRun, bytes | None]:
        files = _RunFiles.place(sandbox, plugins, {
            "select": sorted(select) if select is not None else None,
            "exclude": sorted(exclude), "limits": limits.plugin_config() if limits else None,
            "check_runner": check_runner, "exitfirst": exitfirst,
            "collect": sorted(collect)})
        cmd = f"python {files.launcher} {files.module} {shlex.join(PYTEST_ARGS)}"
        cmd += "".join(f" -p {placed.module}" for placed in files.extras)
        if coverage:
            sandbox.write_file(f"{files.scratch}/coveragerc",
                               COVERAGE_RC.format(data=f"{files.scratch}/.cov"))
            cmd += (f" --cov=. --cov-context=test --cov-config={files.scratch}/coveragerc"
                    " --cov-report=")
        result, lost = _exec_or_lost(sandbox, cmd, timeout=timeout, env=files.env)
        try:
            raw, cov, outputs = files.read(sandbox, lost, coverage)
        except SandboxError as exc:  # broke now (killed at the run's limit): read what is left
            lost = str(exc) or "the sandbox broke"
            raw, cov, outputs = files.read(sandbox, lost, coverage)
        log = (result.stdout + result.stderr)[-4000:]
        run = parse_report(raw, nonce=files.nonce, exit_code=result.exit_code,
                           duration=result.duration, timed_out=result.timed_out, log_tail=log,
                           allowed_changes=allowed_changes)
        return run.model_copy(update={"extras": outputs, "sandbox_lost": lost}), cov or None


@dataclass(frozen=True)
class _RunFiles:
    """One run's files in a fresh scratch directory: the report plugin and the launcher
    under random module names, the plugin's settings (with this run's report path and
    nonce), and any extra plugins."""

    scratch: str
    report: str
    nonce: str
    module: str
    launcher: str
    extras: list[PlacedPlugin]

    @property
    def env(self) -> dict[str, str]:
        return {**RUN_ENV, "REPOGYM_PLUGIN_CONFIG": f"{self.scratch}/config.json",
                "PYTHONPATH": self.scratch}

    @classmethod
    def place(cls, sandbox: Sandbox, plugins: Sequence[RunPlugin],
              settings: dict[str, object]) -> _RunFiles:
        scratch = sandbox.scratch_path()
        files = cls(scratch=scratch, report=f"{scratch}/r-{secrets.token_hex(8)}.jsonl",
                    nonce=secrets.token_hex(16), module=f"rg_{secrets.token_hex(8)}",
                    launcher=f"{scratch}/rg_{secrets.token_hex(8)}.py",
                    extras=placed_plugins(scratch, plugins))
        config = {"report": files.report, "nonce": files.nonce, **settings}
        sandbox.write_file(f"{scratch}/{files.module}.py", plugin_source("repogym_report.py"))
        sandbox.write_file(f"{scratch}/config.json", json.dumps(config))
        sandbox.write_file(files.launcher, plugin_source("repogym_launch.py"))
        for placed in files.extras:
            sandbox.write_file(f"{scratch}/{placed.module}.py", placed.plugin.source)
            sandbox.write_file(f"{scratch}/{placed.module}.json", json.dumps(placed.config))
        return files


    def read(self, sandbox: Sandbox, lost: str,
             coverage: bool) -> tuple[str, bytes, dict[str, str]]:
        """The report, the coverage data file (coverage.py's SQLite database: a few MB
        where its JSON report with contexts is hundreds) and the extra plugins' outputs;
        the scratch directory is removed (unless the sandbox is lost: its reset does that)."""
        raw = _salvaged(sandbox, self.report, lost)
        cov = _coverage_data(sandbox, f"{self.scratch}/.cov", lost) if coverage else b""
        outputs = {p.plugin.name: _salvaged(sandbox, p.out, lost) for p in self.extras}
        if not lost:
            drop_scratch(sandbox, self.scratch)
        return raw, cov, outputs


@dataclass(frozen=True)
class PlacedPlugin:
    """A :class:`RunPlugin` as one run lays it out: module name, settings, output path."""

    plugin: RunPlugin
    module: str
    out: str

    @property
    def config(self) -> dict:
        return {**self.plugin.config, "out": self.out}


def placed_plugins(scratch: str, plugins: Sequence[RunPlugin]) -> list[PlacedPlugin]:
    """Random module names (as for the report plugin) and output paths in ``scratch``."""
    out = []
    for plugin in plugins:
        module = f"rg_{secrets.token_hex(8)}"
        out.append(PlacedPlugin(plugin, module, f"{scratch}/{module}.out"))
    return out


# the environment of every test run: no options or plugins from the environment, no .pyc,
# and one hash seed, so a test id built from a set's order (parametrize ids such as
# isodate's ``expectedN``) names the same test in every run instead of looking flaky
RUN_ENV = {"PYTEST_ADDOPTS": "", "PYTEST_PLUGINS": "", "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONHASHSEED": "0"}


@functools.lru_cache(maxsize=None)
def plugin_source(name: str) -> str:
    """A file of ``repogym.toolchains.plugins`` (read once per process)."""
    return resources.files("repogym.toolchains.plugins").joinpath(name).read_text()


def _code_of(name: str) -> str:
    """A plugin file without its module docstring (to pass with ``python -c``)."""
    source = plugin_source(name)
    return source.split('"""', 2)[2].lstrip() if source.startswith('"""') else source


# --tb=line: formatting tracebacks is most of what a failing test costs (7x on a 216-test
# selection); the report plugin keeps each failure's full message without it
PYTEST_ARGS = ("-p", "no:cacheprovider", "--continue-on-collection-errors", "-q", "-rN",
               "--color=no", "--tb=line")


COVERAGE_RC = """[run]
data_file = {data}
relative_files = True
"""


def _coverage_data(sandbox: Sandbox, path: str, lost: str) -> bytes:
    """The coverage data file's bytes ("" when the run wrote none)."""
    if lost:
        return sandbox.salvage(path) or b""
    try:
        return sandbox.read_file(path)
    except FileNotFoundError:
        return b""


def parse_coverage_db(data: bytes) -> CoverageMap:
    """coverage.py's data file (SQLite, with test contexts, relative paths) -> file -> line
    -> test node ids; lines run outside any test (the empty context) are import lines.

    Raises:
        TestRunError: the bytes are not a coverage database.
    """
    import sqlite3
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".cov") as tmp:
        tmp.write(data)
        tmp.flush()
        try:
            con = sqlite3.connect(f"file:{tmp.name}?mode=ro", uri=True)
            rows = con.execute(
                "SELECT file.path, context.context, line_bits.numbits FROM line_bits "
                "JOIN file ON file.id = line_bits.file_id "
                "JOIN context ON context.id = line_bits.context_id").fetchall()
            con.close()
        except sqlite3.Error as exc:
            raise TestRunError(f"coverage data unreadable: {exc}") from None
    by_line: dict[str, dict[int, set[str]]] = {}
    bare: dict[str, set[int]] = {}
    for path, context, numbits in rows:
        lines = _numbits(numbits)
        if not context:
            bare.setdefault(path, set()).update(lines)
            continue
        test = context.rsplit("|", 1)[0]
        into = by_line.setdefault(path, {})
        for line in lines:
            into.setdefault(line, set()).add(test)
    files = {p: {ln: tuple(sorted(ts)) for ln, ts in sorted(lines.items())}
             for p, lines in sorted(by_line.items()) if lines}
    return CoverageMap(files=files, import_lines={p: tuple(sorted(ls))
                                                  for p, ls in sorted(bare.items()) if ls})


def _numbits(numbits: bytes) -> list[int]:
    """coverage.py's line bitmap: bit ``n`` of byte ``b`` is line ``8 * b + n``."""
    return [i * 8 + bit for i, byte in enumerate(numbits) for bit in range(8)
            if byte & (1 << bit)]


TOOLCHAINS.register("python")(PythonToolchain)
