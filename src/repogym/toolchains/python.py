"""Python toolchain: detect, install recipe, pytest runs with a structured report.

Install recipe (heuristic, no LLM), run in the repository with the env's venv first on PATH:

1. upgrade pip/setuptools/wheel (the base's pip may predate PEP 660 and dependency groups);
2. the project itself, editable, with whichever of the extras ``test, tests, testing, dev``
   it declares (pyproject ``[project.optional-dependencies]``, setup.cfg
   ``[options.extras_require]``, or ``extras_require`` in setup.py); falling back to
   a plain editable install, then to a non-editable one;
3. test requirement files (``requirements-test.txt``, ``requirements/test*.txt``, ...), and
   ``requirements.txt`` when there is no project metadata; PEP 735 dependency groups
   ``test``/``tests``/``dev``; tox ``[testenv] deps`` without substitutions;
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
import json
import re
import secrets
import shlex
import sys
import tomllib
from importlib import resources
from pathlib import Path
from typing import Iterable, Sequence

from repogym.errors import NoTestsError, TestRunError
from repogym.sandboxes.base import Sandbox
from repogym.schemas.records import (Checkout, CoverageMap, EnvSpec, Outcome, TestResult,
                                     TestRun)
from repogym.toolchains.base import TOOLCHAINS, TestRunner, Toolchain

RECIPE_VERSION = "py-3"
TEST_EXTRAS = ("test", "tests", "testing", "dev")
TEST_REQUIREMENT_FILES = (
    "requirements-test.txt", "requirements_test.txt", "test-requirements.txt",
    "test_requirements.txt", "requirements-tests.txt", "requirements-dev.txt",
    "requirements_dev.txt", "dev-requirements.txt", "requirements/test.txt",
    "requirements/tests.txt", "requirements/testing.txt", "requirements/dev.txt",
    "tests/requirements.txt", "test/requirements.txt",
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
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                mods.add(node.module.split(".")[0])
    return mods


class PythonToolchain(Toolchain):
    """pytest-based Python projects."""

    def detect(self, repo: Path) -> bool:
        markers = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "tox.ini")
        return any((repo / m).exists() for m in markers) or any(_walk_py(repo))

    def is_test_file(self, path: str) -> bool:
        p = Path(path)
        if p.name == "conftest.py" or p.name.startswith("test_") or p.stem.endswith("_test"):
            return True
        return bool(TEST_DIR_NAMES.intersection(p.parts[:-1]))

    def test_files(self, repo: Path) -> list[Path]:
        return [p for p in _walk_py(repo)
                if self.is_test_file(str(p.relative_to(repo))) and p.name != "conftest.py"]

    def env_spec(self, checkout: Checkout, base_image: str) -> EnvSpec:
        repo = checkout.path
        if not self.test_files(repo):
            raise NoTestsError(f"{checkout.name}: no test files found (test_*.py, *_test.py, tests/)")
        return EnvSpec(repo=checkout.name, commit=checkout.commit, base_image=base_image,
                       toolchain="python", install_steps=tuple(self.install_steps(repo)),
                       recipe_version=RECIPE_VERSION)

    def install_steps(self, repo: Path) -> list[str]:
        steps = ["python -m pip install -q -U pip setuptools wheel"]
        has_project = any((repo / m).exists() for m in ("pyproject.toml", "setup.py", "setup.cfg"))
        if has_project:
            extras = sorted(declared_extras(repo) & set(TEST_EXTRAS))
            spec = f".[{','.join(extras)}]" if extras else "."
            steps.append(f"python -m pip install -q -e {shlex.quote(spec)} "
                         f"|| python -m pip install -q -e . || python -m pip install -q .")
        elif (repo / "requirements.txt").exists():
            steps.append("python -m pip install -q -r requirements.txt")
        for rel in TEST_REQUIREMENT_FILES:
            if (repo / rel).is_file():
                steps.append(f"python -m pip install -q -r {shlex.quote(rel)}")
        for group in dependency_groups(repo):
            steps.append(f"python -m pip install -q --group {group}")
        deps = tox_deps(repo)
        if deps:
            steps.append("python -m pip install -q " + " ".join(shlex.quote(d) for d in deps))
        steps.append(self._test_tools_step(repo))
        if has_project:
            # test tools may have replaced the project (pytest needs iniconfig, pluggy, ...):
            # make sure the code imported is the working copy's
            steps.append("python -m pip install -q --no-deps -e . || true")
        version = sdist_version(repo)
        if version:  # an sdist has no git tags: setuptools-scm would invent 0.1.dev1
            steps = [f"export SETUPTOOLS_SCM_PRETEND_VERSION={shlex.quote(version)}; {s}"
                     for s in steps]
        return steps

    def _test_tools_step(self, repo: Path) -> str:
        required = ["pytest", "pytest-cov", *needed_plugins(pytest_config_text(repo))]
        local = top_level_names(repo)
        conftests = [p for p in _walk_py(repo) if p.name == "conftest.py"]
        imports = imported_modules([*self.test_files(repo), *conftests])
        missing = sorted(
            m for m in imports
            if m not in sys.stdlib_module_names and m not in local and not m.startswith("_")
            and m not in {"pytest", "repogym_report"} and m.isidentifier()
        )
        base = "python -m pip install -q " + " ".join(required)
        if not missing:
            return base
        # best effort per module: a name that is not on PyPI must not fail the build
        pairs = " ".join(f"{m}={IMPORT_TO_DIST.get(m, m)}" for m in missing)
        return (f"{base} && for p in {pairs}; do m=${{p%%=*}}; d=${{p#*=}}; "
                f"python -c \"import $m\" 2>/dev/null || python -m pip install -q \"$d\" "
                f">/dev/null 2>&1 || echo \"repogym: could not install $d (skipped)\"; done")

    def run_tests(
        self, sandbox: Sandbox, *, timeout: float, select: Sequence[str] | None = None
    ) -> TestRun:
        run, _ = self._pytest(sandbox, timeout=timeout, select=select)
        return run

    def warm_runner(self, sandbox: Sandbox) -> TestRunner:
        """A forking pytest server in ``sandbox`` (see :mod:`repogym.toolchains.warm`)."""
        from repogym.toolchains.warm import WarmPytest

        return WarmPytest(self, sandbox)

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
        return parse_coverage(cov)

    def _pytest(self, sandbox: Sandbox, *, timeout: float, select: Sequence[str] | None,
                coverage: bool = False) -> tuple[TestRun, bytes | None]:
        scratch = sandbox.scratch_path()
        nonce = secrets.token_hex(16)
        report = f"{scratch}/r-{secrets.token_hex(8)}.jsonl"
        config = {"report": report, "nonce": nonce,
                  "select": sorted(select) if select is not None else None}
        plugin = resources.files("repogym.toolchains.plugins").joinpath("repogym_report.py")
        module = f"rg_{secrets.token_hex(8)}"  # a hack cannot look the plugin up by name
        sandbox.write_file(f"{scratch}/{module}.py", plugin.read_bytes())
        sandbox.write_file(f"{scratch}/config.json", json.dumps(config))
        env = {"REPOGYM_PLUGIN_CONFIG": f"{scratch}/config.json", "PYTHONPATH": scratch,
               "PYTHONDONTWRITEBYTECODE": "1"}
        cmd = f"python -m pytest -p {module} {shlex.join(PYTEST_ARGS)}"
        if coverage:
            sandbox.write_file(f"{scratch}/coveragerc", COVERAGE_RC.format(data=f"{scratch}/.cov"))
            cmd += (f" --cov=. --cov-context=test --cov-config={scratch}/coveragerc"
                    f" --cov-report=json:{scratch}/cov.json")
        result = sandbox.exec(cmd, timeout=timeout, env=env)
        raw = _read_or_empty(sandbox, report).decode("utf-8", errors="replace")
        cov = _read_or_empty(sandbox, f"{scratch}/cov.json") if coverage else b""
        sandbox.exec(["rm", "-rf", scratch], timeout=30)
        log = (result.stdout + result.stderr)[-4000:]
        run = parse_report(raw, nonce=nonce, exit_code=result.exit_code,
                           duration=result.duration, timed_out=result.timed_out, log_tail=log)
        return run, (cov or None)


# --tb=line: formatting tracebacks is most of what a failing test costs (7x on a 216-test
# selection); the report plugin keeps each failure's full message without it
PYTEST_ARGS = ("-p", "no:cacheprovider", "--continue-on-collection-errors", "-q", "-rN",
               "--color=no", "--tb=line")


COVERAGE_RC = """[run]
data_file = {data}
[json]
show_contexts = True
"""


def _read_or_empty(sandbox: Sandbox, path: str) -> bytes:
    try:
        return sandbox.read_file(path)
    except FileNotFoundError:
        return b""


def parse_coverage(raw: bytes) -> CoverageMap:
    """coverage.py's JSON report (with contexts) -> file -> line -> test node ids."""
    try:
        files = json.loads(raw)["files"]
    except (ValueError, KeyError, TypeError) as exc:
        raise TestRunError(f"coverage report unreadable: {exc}") from None
    out: dict[str, dict[int, tuple[str, ...]]] = {}
    imports: dict[str, tuple[int, ...]] = {}
    for path, data in files.items():
        lines, bare = {}, []
        for line, contexts in (data.get("contexts") or {}).items():
            tests = sorted({c.rsplit("|", 1)[0] for c in contexts if c})
            if tests:
                lines[int(line)] = tuple(tests)
            if "" in contexts:
                bare.append(int(line))
        if lines:
            out[path] = lines
        if bare:
            imports[path] = tuple(sorted(bare))
    return CoverageMap(files=out, import_lines=imports)


class _Acc:
    """Folds the setup/call/teardown reports of one test into one outcome."""

    def __init__(self) -> None:
        self.outcome: Outcome | None = None
        self.duration = 0.0
        self.message = ""
        self.side_effects: tuple[str, ...] = ()

    def add(self, ev: dict) -> None:
        self.duration += float(ev.get("duration") or 0.0)
        when, out, xf = ev.get("when"), ev.get("outcome"), bool(ev.get("wasxfail"))
        if out == "failed":
            self.message = self.message or ev.get("message", "")
            if when == "call":
                self.outcome = Outcome.failed
            elif self.outcome is not Outcome.failed:
                self.outcome = Outcome.error
        elif out == "skipped" and when in ("setup", "call") and self.outcome is None:
            self.outcome = Outcome.xfail if xf else Outcome.skipped
        elif out == "passed" and when == "call" and self.outcome is None:
            self.outcome = Outcome.xpass if xf else Outcome.passed

    def result(self, nodeid: str) -> TestResult:
        # a test whose call phase never reported (killed mid-test) is an error
        return TestResult(nodeid=nodeid, outcome=self.outcome or Outcome.error,
                          duration=round(self.duration, 6), message=self.message,
                          side_effects=self.side_effects)


def _events(raw: str) -> Iterable[dict]:
    for line in raw.splitlines():
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(ev, dict):
            yield ev


def parse_report(raw: str, *, nonce: str, exit_code: int, duration: float,
                 timed_out: bool = False, log_tail: str = "") -> TestRun:
    """Turn the plugin's JSONL report into a :class:`TestRun`, cross-checked with the exit code."""
    accs: dict[str, _Acc] = {}
    errors: list[str] = []
    collected, finish = 0, None
    problems: list[str] = []
    for ev in _events(raw):
        kind = ev.get("event")
        if kind == "test":
            accs.setdefault(str(ev.get("nodeid")), _Acc()).add(ev)
        elif kind == "side_effects" and isinstance(ev.get("what"), list):
            acc = accs.setdefault(str(ev.get("nodeid")), _Acc())
            acc.side_effects = tuple(str(w)[:300] for w in ev["what"][:10])
        elif kind == "collect_error":
            errors.append(str(ev.get("nodeid")))
        elif kind == "tamper":
            problems.append(f"pytest internals were replaced: {ev.get('what')}")
        elif kind == "collected":
            collected = int(ev.get("count") or 0)
        elif kind == "finish":
            if ev.get("nonce") != nonce:
                problems.append("report finish event carries a foreign nonce")
            elif finish is not None:
                problems.append("report has two finish events")
            else:
                finish = int(ev.get("exitstatus", -1))
    results = {n: a.result(n) for n, a in accs.items()}
    for nodeid in errors:
        results.setdefault(nodeid, TestResult(nodeid=nodeid, outcome=Outcome.error,
                                              message="collection error"))
    problems += _cross_check(results, finish, exit_code, timed_out)
    return TestRun(results=results, exit_code=exit_code, duration=duration, timed_out=timed_out,
                   collected=collected, collection_errors=tuple(errors),
                   finished=finish is not None, problems=tuple(problems), log_tail=log_tail)


def _cross_check(results: dict[str, TestResult], finish: int | None, exit_code: int,
                 timed_out: bool) -> list[str]:
    if timed_out or finish is None:
        return []  # already untrusted through `timed_out` / `finished`
    problems = []
    if finish != exit_code:
        problems.append(f"pytest exit code {exit_code} disagrees with the report's {finish}")
    bad = any(r.outcome in (Outcome.failed, Outcome.error) for r in results.values())
    if exit_code == 0 and bad:
        problems.append("exit code 0 but the report has failures")
    if exit_code == 1 and not bad:
        problems.append("exit code 1 but the report has no failure")
    return problems


TOOLCHAINS.register("python")(PythonToolchain)
