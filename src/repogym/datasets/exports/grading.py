"""What an exported task carries to be graded inside its own container.

The ``harbor`` and ``swebench`` exports grade without repogym installed: a container of the
task's environment image, a shell script and a stdlib-only Python grader. Two steps:

1. :data:`PREPARE_SCRIPT` (as root, once: at ``docker build`` for Harbor, at the start of the
   ``eval_script`` for SWE-bench) turns the environment image's repository into the task's
   broken state with **no history**::

       /repo                        base_commit + bug_patch + the env's post-install files,
                                    as the only commit of a fresh repository (fixed author
                                    and dates), owned by the test user: `git log`,
                                    `git reflog`, `git stash list` and `git diff` show
                                    nothing of the fix
       /opt/repogym-task/task.git   a copy of that repository's git dir (root-owned,
                                    read-only to the test user): the grader's trusted
                                    source of the broken tree
       /opt/repogym-task/commit     its commit sha
       /opt/repogym-task/post-install.tar   ignored files the install left (*.egg-info ...)

   The environment's own reset state (``/opt/repogym``: the pinned commit's snapshot) is
   removed.
2. :mod:`repogym.datasets.exports.container_grader` (copied in as ``grader.py`` with a
   :class:`ContainerSpec` as ``spec.json``; for Python tasks also repogym's pytest report
   plugin and launcher) grades the candidate the way :func:`repogym.grading.grade_in` does;
   its docstring lists the steps.

The rules come from their one source (the Python toolchain's ``RUNNER_CONFIG``,
``STARTUP_HOOKS``, ``INSTALL_METADATA``, ``RUNNER_MODULES`` and test directories, the
standard library's module names, the sandbox's ``git apply`` fallbacks, the judge's time
limits and the runner changes and plugin modules its baseline saw) and are written into each
spec, so an export made by a later repogym carries that repogym's rules.

**JavaScript tasks** carry a grading plan instead of the Python rules (:class:`JsPlan`, the
spec's ``javascript``): the runner's command line with placeholders for what each run draws
(scratch directory, selected files, name pattern), the run's variables, repogym's reporter
files, the canary templates and the protection rules as data. The plan is read at export
time from a sandbox of the task's environment image in its graded state
(:mod:`repogym.datasets.exports.plans`, :mod:`repogym.toolchains.javascript.export`), so
exporting a JavaScript task to ``harbor`` or ``swebench`` needs its environment image in the
local Docker engine.

**Go tasks** carry one too (:class:`GoPlan`, the spec's ``go``): the Go toolchain's run
script with placeholders (scratch directory, nonce, selected folders, their ``-test.run``,
``-test.skip`` and ``-test.timeout`` values), the canary's name, the pattern of a test
file's top-level tests (test ids name the file that declares them) and the protection
rules as data (:mod:`repogym.toolchains.go.export`). It depends on no file of the task, so
it is made without Docker. Beside the grader goes ``repogym_go_report.py``
(:mod:`repogym.toolchains.plugins.repogym_go_report`): the stdlib-only reader of a Go run's
events that repogym's Go toolchain reads its runs with too.

**Rust tasks** carry one too (:class:`RustPlan`, the spec's ``rust``): the Rust toolchain's
runner program (its scanner and runner, standard library only) with a placeholder for the
run's plan, the plan's fixed part, the canary's name, the report and cleanup paths and the
protection rules as data (:mod:`repogym.toolchains.rust.export`); made without Docker.
Beside the grader goes ``repogym_rust_report.py``
(:mod:`repogym.toolchains.plugins.repogym_rust_report`), the reader repogym's Rust toolchain
reads its runs with. A Rust unit test sits in the source file it tests: a listed test's
file that is runtime source is not in ``protected`` but in ``span_guarded`` (the grader
restores it only when its test code changed, as ``grade_in`` does).

**Java tasks** carry :class:`JavaPlan` (the spec's ``java``: the protection rules as data,
:mod:`repogym.toolchains.java.export`), and beside the grader ``repogym_maven.py``
(:mod:`repogym.toolchains.plugins.repogym_maven`): the Java toolchain's own plan of a run,
its shell script (Maven with repogym's extension, the watchdog) and the reading of its event
log and Surefire's reports, standard library only; made without Docker.
"""

from __future__ import annotations

import base64
import functools
import gzip
import io
import re
import shlex
import sys
import tarfile
from importlib import resources
from typing import Any, Sequence

from pydantic import BaseModel, ConfigDict

from repogym.datasets.verify import spec_of
from repogym.errors import InputError
from repogym.grading import protected_paths as verify_protected_paths
from repogym.grading import span_guarded_paths
from repogym.layout import REPO_DIR, TASK_DIR
from repogym.layout import STATE as ENV_STATE
from repogym.layout import USER as TEST_USER
from repogym.limits import policy_for
from repogym.sandboxes.base import APPLY_FALLBACKS
from repogym.schemas.arrow import TaskRow
from repogym.schemas.records import TimeLimits
from repogym.toolchains.go.export import grading_plan as go_grading_plan
from repogym.toolchains.java.export import grading_plan as java_grading_plan
from repogym.toolchains.python import (
    EDITABLE_PREFIXES,
    INSTALL_METADATA,
    RUNNER_CONFIG,
    RUNNER_MODULES,
    STARTUP_HOOKS,
    TEST_DIR_NAMES,
    TEST_FILE_NAMES,
)
from repogym.toolchains.rust.export import grading_plan as rust_grading_plan

ANCHOR = TASK_DIR
GRADER_FILE, PLUGIN_FILE, LAUNCHER_FILE, SPEC_FILE, PREPARE_FILE = (
    "grader.py", "repogym_report.py", "repogym_launch.py", "spec.json", "prepare.sh")
GO_REPORT_FILE = "repogym_go_report.py"  # the Go run's reader (a file of toolchains.plugins)
RUST_REPORT_FILE = "repogym_rust_report.py"  # the Rust run's reader (toolchains.plugins)
MAVEN_FILE = "repogym_maven.py"  # a Maven run's plan, script and reader (toolchains.plugins)
# language -> the module of its runs beside the grader, and the grader's option naming it
READERS = {"go": (GO_REPORT_FILE, "--go-report"), "rust": (RUST_REPORT_FILE, "--rust-report"),
           "java": (MAVEN_FILE, "--maven")}
DEFAULT_TIMEOUT = 600.0
GRADER_COMMAND = "python3 -I -S"  # no site-packages, no PYTHONPATH: stdlib only
LANGUAGES = ("python", "javascript", "go", "rust", "java")  # what the grader grades
# language -> its plan's spec field
PLAN_FIELDS = {"javascript": "javascript", "go": "go", "rust": "rust", "java": "java"}
# spec fields only Python tasks use (other languages' spec.json leaves them out)
PYTHON_FIELDS = frozenset({"runner_config", "startup_hooks", "install_metadata",
                           "editable_prefixes", "runner_modules", "stdlib_modules",
                           "test_dir_names", "test_file_names", "runner_changes"})


def apply_chain(var: str) -> str:
    """Shell: ``git apply`` the file named by ``$var`` with the sandbox's fallbacks, in order
    (each ``--check``-ed first, as :meth:`repogym.sandboxes.base.Sandbox.apply_patch` does)."""
    tries = [f'(git apply --check {f} "${var}" && git apply {f} "${var}")'.replace("  ", " ")
             for f in APPLY_FALLBACKS]
    return " || ".join(tries)


PREPARE_SCRIPT = f"""#!/bin/bash
# repogym: the environment image's repository -> this task's broken state, without history.
# usage (as root, in a container of the task's environment image):
#   prepare.sh BASE_COMMIT BUG_PATCH_FILE
set -euo pipefail
base=$1
bug=$2
repo={REPO_DIR}
anchor={ANCHOR}
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_COUNT=3 \\
  GIT_CONFIG_KEY_0=core.hooksPath GIT_CONFIG_VALUE_0=/dev/null \\
  GIT_CONFIG_KEY_1=core.fsmonitor GIT_CONFIG_VALUE_1=false \\
  GIT_CONFIG_KEY_2=safe.directory GIT_CONFIG_VALUE_2='*'
cd "$repo"
if ! git cat-file -e "$base^{{commit}}" 2>/dev/null; then
  echo "repogym: the image's repository has no commit $base" >&2; exit 3
fi
git reset -q --hard "$base"
git clean -ffdxq
if [ -f {ENV_STATE}/post-install.tar ]; then tar -xf {ENV_STATE}/post-install.tar; fi
if [ -s "$bug" ] && ! ( {apply_chain("bug")} ); then
  echo "repogym: the task's bug_patch does not apply at $base" >&2; exit 3
fi
rm -rf .git
export GIT_AUTHOR_NAME=repogym GIT_AUTHOR_EMAIL=repogym@localhost \\
  GIT_COMMITTER_NAME=repogym GIT_COMMITTER_EMAIL=repogym@localhost \\
  GIT_AUTHOR_DATE=2000-01-01T00:00:00Z GIT_COMMITTER_DATE=2000-01-01T00:00:00Z
git -c init.defaultBranch=main init -q
git add -A
git -c commit.gpgsign=false commit -q --allow-empty -m "repogym task"
rm -rf "$anchor"
mkdir -p "$anchor"
cp -a .git "$anchor/task.git"
git rev-parse HEAD > "$anchor/commit"
git ls-files -z --others --ignored --exclude-standard \\
  | tar --null -T - -cf "$anchor/post-install.tar"
chown -R root:root "$anchor"
chmod -R a+rX,go-w "$anchor"
find "$repo" ! -user {TEST_USER} -exec chown -h {TEST_USER}:{TEST_USER} {{}} +
rm -rf {ENV_STATE}
"""


class JsCanary(BaseModel):
    """A canary's template: ``plant``'s file with its random tokens as placeholders
    (``tokens``: placeholder -> bytes of hex; see
    :func:`repogym.toolchains.javascript.export.canary_template`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    text: str
    tests: tuple[str, ...]
    tokens: dict[str, int]


class Protection(BaseModel):
    """A toolchain's ``is_protected`` as data: a path is protected when its file name
    matches one of ``name_patterns`` (Python regular expressions), a folder above it is one
    of ``test_dirs``, or any part of it is one of ``any_part``
    (:func:`repogym.toolchains.javascript.export.protection_rules`,
    :func:`repogym.toolchains.go.export.protection_rules`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name_patterns: tuple[str, ...]
    test_dirs: tuple[str, ...]
    any_part: tuple[str, ...]
    path_patterns: tuple[str, ...] = ()  # matched against the whole path (Rust's build.rs)


class JsPlan(BaseModel):
    """How a JavaScript task's tests run (see :mod:`repogym.toolchains.javascript.export`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    runner: str
    build: str | None
    tap: bool = False
    prefix: tuple[str, ...]
    fresh: tuple[str, ...]
    command: tuple[str, ...]
    command_exitfirst: tuple[str, ...]
    env: dict[str, str]
    reporters: dict[str, str]
    test_timeout_ms: int
    canaries: dict[str, JsCanary]
    protection: Protection


class GoPlan(BaseModel):
    """How a Go task's tests run (see :mod:`repogym.toolchains.go.export`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    script: str
    command: str
    canary: str
    report: str
    build_log: str
    test_functions: str
    min_binary_timeout: float
    fresh: tuple[str, ...]
    protection: Protection


class RustPlan(BaseModel):
    """How a Rust task's tests run (see :mod:`repogym.toolchains.rust.export`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    script: str
    payload: dict[str, Any]
    canary: str
    report: str
    cleanup: str
    command: str
    fresh: tuple[str, ...]
    protection: Protection


class JavaPlan(BaseModel):
    """How a Java task's tests run beside what ``repogym_maven.py`` holds (see
    :mod:`repogym.toolchains.java.export`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    protection: Protection
    fresh: tuple[str, ...]
    collect_timeout: float


Plan = JsPlan | GoPlan | RustPlan | JavaPlan
PLAN_TYPES: dict[str, type[BaseModel]] = {"javascript": JsPlan, "go": GoPlan, "rust": RustPlan,
                                          "java": JavaPlan}


@functools.cache
def go_plan() -> GoPlan:
    """The plan of every Go task: the Go toolchain's (no sandbox needed)."""
    return GoPlan.model_validate(go_grading_plan())


@functools.cache
def rust_plan() -> RustPlan:
    """The plan of every Rust task: the Rust toolchain's (no sandbox needed)."""
    return RustPlan.model_validate(rust_grading_plan())


@functools.cache
def java_plan() -> JavaPlan:
    """The plan of every Java task: the Java toolchain's (no sandbox needed)."""
    return JavaPlan.model_validate(java_grading_plan())


def own_plan(language: str) -> Plan | None:
    """The plan every task of ``language`` shares (None: it has none, or each task's is
    read from its environment)."""
    if language == "go":
        return go_plan()
    if language == "java":
        return java_plan()
    return rust_plan() if language == "rust" else None


class ContainerSpec(BaseModel):
    """The grading spec an exported task carries (``spec.json``), read by the grader.

    ``protected`` holds exact paths (the test patch's files, the files of listed tests, the
    runner plugin modules the judge's baseline loaded); the grader adds the pattern rules of
    :meth:`repogym.toolchains.python.PythonToolchain.is_protected` from the lists below
    (test files: ``test_file_names``, ``test_*.py``, ``*_test.py``, anything under a
    directory in ``test_dir_names``; ``*``-suffixes of ``runner_config`` and
    ``startup_hooks``; path parts ending in ``install_metadata`` or starting with
    ``editable_prefixes``; and, for paths a patch adds, root modules named in
    ``stdlib_modules`` or ``runner_modules``).

    ``time_limits`` are the judge's (each listed test's limit, the run's); the run gets
    ``min(time_limits.run, timeout)``. ``runner_changes`` are the environment's own changes
    to the runner (not tamper).

    ``language`` picks the grader's rules: ``python`` (the fields above), ``javascript``
    (the test-file and runner rules, command line and canaries of ``javascript``, a
    :class:`JsPlan`), ``go`` (the run script, canary and rules of ``go``, a
    :class:`GoPlan`), ``rust`` (the runner program, canary and rules of ``rust``, a
    :class:`RustPlan`) or ``java`` (the rules of ``java``, a :class:`JavaPlan`; the run is
    ``repogym_maven.py``'s); a spec of a language other than Python leaves the Python-only
    fields out, and every spec leaves out the other languages' plans.

    ``span_guarded`` (written only when not empty): listed tests' files that are runtime
    source (Rust's unit tests sit in ``#[cfg(test)]`` modules of the code they test), left
    out of ``protected``; the grader restores one only when the candidate changed its test
    code (:func:`repogym.grading.span_guarded_paths`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    instance_id: str
    language: str = "python"
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    test_patch: str
    protected: tuple[str, ...]
    runner_config: tuple[str, ...] = RUNNER_CONFIG
    startup_hooks: tuple[str, ...] = STARTUP_HOOKS
    install_metadata: tuple[str, ...] = INSTALL_METADATA
    editable_prefixes: tuple[str, ...] = EDITABLE_PREFIXES
    runner_modules: tuple[str, ...] = tuple(sorted(RUNNER_MODULES))
    stdlib_modules: tuple[str, ...] = tuple(sorted(sys.stdlib_module_names))
    test_dir_names: tuple[str, ...] = tuple(sorted(TEST_DIR_NAMES))
    test_file_names: tuple[str, ...] = TEST_FILE_NAMES
    apply_fallbacks: tuple[str, ...] = APPLY_FALLBACKS
    repo_dir: str = REPO_DIR
    anchor: str = ANCHOR
    test_user: str = TEST_USER
    timeout: float = DEFAULT_TIMEOUT
    time_limits: TimeLimits
    runner_changes: tuple[str, ...] = ()
    span_guarded: tuple[str, ...] = ()
    javascript: JsPlan | None = None
    go: GoPlan | None = None
    rust: RustPlan | None = None
    java: JavaPlan | None = None

    @classmethod
    def of(cls, row: TaskRow, timeout: float = DEFAULT_TIMEOUT,
           plan: Plan | None = None) -> ContainerSpec:
        """The spec of a dataset row (the same protected set and limits as ``verify``:
        a row without time limits gets the ceilings ``grade_in`` uses, ``timeout``);
        ``plan``: a JavaScript, Go, Rust or Java task's
        (:func:`repogym.datasets.exports.plans.grading_plans`; a Go, Rust or Java task's
        defaults to its toolchain's, :func:`own_plan`).

        Raises:
            InputError: the row's language has no in-container grader, a JavaScript row
                comes without its plan, or a row comes with another language's plan.
        """
        require_language(row)
        plan = plan or own_plan(row.language)
        if row.language == "javascript" and plan is None:
            raise InputError(f"task {row.instance_id}: a JavaScript task needs its grading "
                             f"plan to be exported (see repogym.datasets.exports.plans)")
        wanted = PLAN_TYPES.get(row.language)
        if plan is not None and (wanted is None or not isinstance(plan, wanted)):
            raise InputError(f"task {row.instance_id} is in {row.language!r}: a "
                             f"{type(plan).__name__} does not grade it")
        return cls(instance_id=row.instance_id, language=row.language,
                   fail_to_pass=row.FAIL_TO_PASS, pass_to_pass=row.PASS_TO_PASS,
                   test_patch=row.test_patch, protected=tuple(sorted(protected_paths(row))),
                   timeout=timeout, time_limits=spec_limits(row, timeout),
                   runner_changes=row.runner_changes,
                   span_guarded=tuple(sorted(span_guarded_paths(spec_of(row)))),
                   javascript=plan if isinstance(plan, JsPlan) else None,
                   go=plan if isinstance(plan, GoPlan) else None,
                   rust=plan if isinstance(plan, RustPlan) else None,
                   java=plan if isinstance(plan, JavaPlan) else None)

    def to_json(self) -> str:
        """``spec.json``'s text: the language's own plan and no other's; another language's
        spec without the Python-only fields; ``span_guarded`` only when it names a file."""
        exclude = {f for lang, f in PLAN_FIELDS.items() if lang != self.language}
        if self.language != "python":
            exclude |= PYTHON_FIELDS
        if not self.span_guarded:
            exclude.add("span_guarded")
        return self.model_dump_json(indent=2, exclude=exclude) + "\n"


def spec_limits(row: TaskRow, timeout: float = DEFAULT_TIMEOUT) -> TimeLimits:
    """The time limits a row is graded with (the judge's, else ``grade_in``'s ceilings)."""
    return row.time_limits or policy_for(timeout, timeout).unknown()


def require_language(row: TaskRow) -> None:
    """Raises InputError when the in-container grader cannot grade the row's language."""
    if row.language not in LANGUAGES:
        raise InputError(f"task {row.instance_id} is in {row.language!r}: the in-container "
                         f"grader grades {', '.join(LANGUAGES[:-1])} and {LANGUAGES[-1]} tasks "
                         f"only")


def protected_paths(row: TaskRow) -> set[str]:
    """Exact paths a candidate may not change: the files of the test patch and of every
    listed test (but those whose test code alone is guarded: ``span_guarded``), and the
    runner plugin modules (``verify``'s rule, :func:`repogym.grading.protected_paths`)."""
    return verify_protected_paths(spec_of(row))


@functools.cache
def grader_source() -> bytes:
    """The stdlib-only grader, as copied into tasks."""
    return resources.files("repogym.datasets.exports").joinpath(
        "container_grader.py").read_bytes()


@functools.cache
def plugin_source(name: str = PLUGIN_FILE) -> bytes:
    """A file of ``repogym.toolchains.plugins`` as copied into tasks (the report plugin,
    the launcher that starts pytest with it, the readers of Go and Rust runs, the run of
    a Maven build)."""
    return resources.files("repogym.toolchains.plugins").joinpath(name).read_bytes()


def grading_files(row: TaskRow, timeout: float = DEFAULT_TIMEOUT,
                  plan: Plan | None = None) -> dict[str, bytes]:
    """``grader.py`` and ``spec.json`` for one task; for a Python task also
    ``repogym_report.py`` and ``repogym_launch.py``, for a Go task ``repogym_go_report.py``,
    for a Rust task ``repogym_rust_report.py``, for a Java task ``repogym_maven.py`` (a
    JavaScript task's reporter files are in its spec's plan)."""
    spec = ContainerSpec.of(row, timeout, plan).to_json()
    files = {GRADER_FILE: grader_source(), SPEC_FILE: spec.encode()}
    if row.language == "python":
        files.update({PLUGIN_FILE: plugin_source(PLUGIN_FILE),
                      LAUNCHER_FILE: plugin_source(LAUNCHER_FILE)})
    elif row.language in READERS:
        name = READERS[row.language][0]
        files[name] = plugin_source(name)
    return files


def grader_args(row: TaskRow, here: str) -> str:
    """Shell: the grader's file arguments for a task whose grading files are in the
    directory ``here`` (a shell word, e.g. ``"$here"``)."""
    args = f'--spec "{here}/{SPEC_FILE}"'
    if row.language == "python":
        args += f' --plugin "{here}/{PLUGIN_FILE}" --launcher "{here}/{LAUNCHER_FILE}"'
    elif row.language in READERS:
        name, option = READERS[row.language]
        args += f' {option} "{here}/{name}"'
    return args


def bundle(files: dict[str, bytes]) -> str:
    """The files as one base64 line of a gzipped tar (for embedding in a shell script).

    Deterministic: fixed mtimes and owners, names in order, no gzip timestamp.
    """
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, 0
            tar.addfile(info, io.BytesIO(files[name]))
    return base64.b64encode(gzip.compress(raw.getvalue(), mtime=0)).decode()


_DOCKER_REF = re.compile(r"^[a-z0-9][a-z0-9._/:@-]*$")


def require_docker_images(rows: Sequence[TaskRow], fmt: str) -> None:
    """Refuse rows whose ``image`` is not a Docker image reference (e.g. a ``local``
    provider's env directory): the export runs them in containers.

    Raises:
        InputError: names the first such task.
    """
    for row in rows:
        if row.image.startswith(("/", ".")) or not _DOCKER_REF.match(row.image):
            raise InputError(f"{fmt} export needs Docker environment images, but task "
                             f"{row.instance_id} has image {row.image!r} (built with the local "
                             f"provider?); rebuild its repository with --provider docker")


def quoted(value: str) -> str:
    """``value`` quoted for a POSIX shell."""
    return shlex.quote(value)
