"""repogym's in-container grader: the rules of :mod:`repogym.grading`, stdlib only.

Usage (as root, in a container prepared as below)::

    python3 -I -S grader.py --spec spec.json [--plugin repogym_report.py] \
        [--launcher repogym_launch.py] [--go-report repogym_go_report.py] \
        [--rust-report repogym_rust_report.py] [--maven repogym_maven.py] [--patch FILE] \
        [--out DIR] [--partial]

The spec's ``language`` says which rules grade: ``python`` (the default), ``javascript``,
``go``, ``rust`` or ``java`` (see *JavaScript*, *Go*, *Rust* and *Java* below). ``--plugin`` is repogym's pytest report plugin and
``--launcher`` the script that starts pytest with it (``repogym/toolchains/plugins/``;
default: ``repogym_launch.py`` beside the plugin), both needed for Python tasks only;
``--go-report`` the reader of a Go run's events (``repogym_go_report.py`` of the same
folder, the module repogym's Go toolchain reads with; default: beside this grader), loaded
by path for Go tasks only; ``--rust-report`` the reader of a Rust run's report
(``repogym_rust_report.py``, likewise), for Rust tasks only; ``--maven`` a Maven run's
plan, script and reader (``repogym_maven.py``, likewise), for Java tasks only; ``--patch`` the candidate's diff (default: ``/repo``'s
working-tree changes); ``--out`` where ``reward.txt`` and ``result.json`` go;
``--partial`` rewards the share of listed tests that pass.

Exported tasks (``harbor``'s ``tests/test.sh``, ``swebench``'s ``eval_script``) copy this file
into the task's container and run it with ``python3 -I -S`` (no site-packages, no
``PYTHONPATH``), so nothing the solver planted in the environment is imported. It needs
the stdlib, ``git``, ``timeout`` and (as root) ``setpriv``; pytest runs in the
environment's own Python, ``go``, ``cargo`` and ``mvn`` are the environment's.

It works on a container prepared by :data:`repogym.datasets.exports.grading.PREPARE_SCRIPT`:

* ``/repo``: the broken state as one fresh commit (no history), owned by the test user;
* ``<anchor>/task.git``: a bare copy of that commit, root-owned and read-only to the solver
  (the trusted source of the broken tree); ``<anchor>/commit``: its sha;
  ``<anchor>/post-install.tar``: the ignored files the install left (``*.egg-info`` ...).

Grading, in order (``verify.grade_in`` does the same in a repogym sandbox):

1. kill every leftover process of the test user (a solver's daemon must not edit files
   while grading runs);
2. the candidate's changes: the file given with ``--patch`` (SWE-bench style), or the
   diff of ``/repo``'s working tree against the broken commit (Harbor: the solver edited
   ``/repo`` in place; ``/repo/.git`` is never read; files the solver's ``.gitignore``
   ignores and nested repositories are left out, as no patch carries them);
3. ``/repo`` is wiped (``.git`` too) and checked out again from the anchor, the
   post-install files are restored, and ``/repo/.git`` is made anew with the broken
   commit as ``HEAD`` (its objects borrowed from the anchor): the broken state, whatever
   the solver did to it -- and the ``HEAD`` the launcher pins pytest's configuration to;
4. the candidate's diff is applied (``git apply`` with repogym's fallbacks); a diff that
   does not apply scores 0;
5. every file it touched (named in the diff, or shown by ``git status``) that the Python
   toolchain protects is restored from the broken commit (deleted if new): listed in
   ``protected``, a test file, runner configuration or interpreter start-up hook (by
   suffix), install metadata (a path part ending in ``.egg-info``/``.dist-info`` or
   starting with ``__editable__``) and, when the diff adds it, a module or package at the
   root named like a standard-library or runner module;
6. the task's ``test_patch`` is applied (when it does not apply because the candidate
   changed the lines next to the tests it adds to a ``span_guarded`` source file, the
   candidate scores 0 as a diff that does not apply);
7. FAIL_TO_PASS + PASS_TO_PASS run as the test user through repogym's launcher
   (``python <launcher> <plugin module> <pytest args>``: the report plugin imported before
   anything else, the work tree on ``sys.path`` only after it, pytest's configuration
   pinned to the files committed at ``HEAD``), the plugin and the launcher copied in under
   random module names, with a fresh report path and nonce, each test within its time
   limit (``time_limits``; the run within ``min(time_limits.run, timeout)``). When the
   run dies in a test (a hard time limit, ``os._exit``, the kernel's OOM killer), binary
   grading stops at 0; with ``--partial`` the listed tests that had not run run again, up
   to 5 times, and the parts are merged (``repogym.toolchains.resume.run_to_end``);
8. reward 1 only when the report is complete, consistent with the exit code, shows the
   runner unchanged (apart from the environment's own ``runner_changes``), and every
   listed test passed with its body run (a timed-out test fails; ``--partial``: the share
   that passed, 0 when untrusted).

JavaScript (``language: javascript``; ``repogym.toolchains.javascript`` in a repogym
sandbox): steps 1-6 and 8 are the same, with the JavaScript toolchain's protection rules
(the spec plan's ``protection``: test files and folders, runner/transpiler configuration,
setup files, every ``package.json``, lock files, ``node_modules`` anywhere); step 7 runs what
the spec's ``javascript`` plan (written at export time by
``repogym.toolchains.javascript.export``) describes: per part, a fresh scratch directory
holding repogym's reporter files and a settings file (report path, nonce, selection,
per-test limit; the reporter reads and deletes it), a canary beside each selected test
file (checks that must fail, loading what that file loads: the file
``repogym.toolchains.javascript.canary.plant`` made at export time, with fresh random
tokens), the plan's ``fresh`` folders emptied (the tool cache ``node_modules/.cache``
points to, as a reset empties it), then the plan's ``prefix`` commands (that folder made,
the project's build script) and the runner's own binary with the selection's files and
name pattern, as the test user, with a fresh ``HOME`` and ``TMPDIR``, within the time
limit. The report is believed only when its ``finish`` line carries the
HMAC (keyed with the nonce) of every line before it, nothing follows it, the exit code and
the counts agree with it, and every canary check failed; the canaries' results are then
dropped. A runner the plan marks ``tap`` (ava) is read from the TAP it prints instead
(``repogym.toolchains.javascript.tap``'s checks: numbering, plan, counts, exit code), its
selection given as one ``--match`` per test. ``node_modules`` stays the environment's read-only link: the grader restores it
with the rest of the broken state.

Go (``language: go``; ``repogym.toolchains.go`` in a repogym sandbox): steps 1-6 and 8 are
the same, with the Go toolchain's protection rules (the spec plan's ``protection``:
``_test.go`` files, ``testdata/`` and ``vendor/`` folders, ``go.mod``, ``go.sum``,
``go.work``, ``go.work.sum``); step 7 runs the ``go`` plan's run script (written at export
time by ``repogym.toolchains.go.export`` from the toolchain's own) filled in for each part:
a fresh scratch folder, nonce and canary name, the selected tests' folders (a test file
listed alone stands for its top-level tests), their ``-test.run`` patterns (their
top-level tests and the canary), the ``-test.skip`` patterns of the tests earlier parts
ran and each folder's ``-test.timeout`` (its tests' limits plus the grace, within the
run's), as ``repogym.toolchains.go.plan`` makes them; the plan's
``fresh`` folders emptied first (the run's build cache starts from the environment's warmed
one), and the script read into memory and removed before it runs, as the test user with a
fresh ``HOME`` and ``TMPDIR``, within the time limit. Each package's test binary is built
with a canary test planted beside its tests (a test that must fail), then run through ``go
tool test2json``; the report is read by ``repogym_go_report`` (markers with the nonce, each
binary's exit status checked against its events, the canary failed in every package), the
test ids named by the ``_test.go`` file that declares each top-level test in the work tree
(the plan's ``test_functions``).

Rust (``language: rust``; ``repogym.toolchains.rust`` in a repogym sandbox): steps 1-6 and
8 are the same, with the Rust toolchain's protection rules (the spec plan's
``protection``: files under ``tests/``, ``testdata/``, ``test_data/`` and ``benches/``,
``tests.rs``, ``*_test.rs``, ``*_tests.rs``, ``Cargo.toml``, ``Cargo.lock``, the toolchain
pin, ``build.rs`` outside ``src/``, ``.cargo/config[.toml]``); a listed test's file that is
runtime source (``span_guarded``: unit tests in a ``#[cfg(test)]`` module of ``src/lib.rs``)
is restored whole only when the candidate changed its test code (the lines the plan's own
scanner, ``test_lines``, finds, compared with the broken commit's). Step 7 runs the
``rust`` plan's script (the toolchain's runner program, written at export time by
``repogym.toolchains.rust.export``) with a plan made per part as ``repogym.toolchains.rust.
plan`` makes it: a fresh scratch folder, nonce and canary name, the selected tests, the
tests earlier parts ran excluded, the per-test limits; the plan's ``fresh`` folders
emptied first, the script read into memory and removed before it runs, as the test user
with a fresh ``HOME`` and ``TMPDIR`` (the run's copy of the warm target directory lives
there), within the time limit. The runner builds every test binary before any test runs,
with a canary test (one that must fail) appended to each binary's root file for the build
and taken out again, then runs each binary with libtest's JSON events; the plan's
``cleanup`` puts back a root file a run stopped mid-build left its canary in. The report is
read by ``repogym_rust_report`` (markers with the nonce, each binary's exit status checked
against its events, the canary failed in every binary), each test's file named by the
program's ``file_of`` from the module tree the runner read.

Java (``language: java``; ``repogym.toolchains.java`` in a repogym sandbox): steps 1-6 and
8 are the same, with the Java toolchain's protection rules (the spec plan's ``protection``:
anything under a module's ``src/test`` or ``src/it``, every ``pom.xml``, ``.mvn/``, the Maven
wrapper, Gradle's build files). Step 7 runs what the Java toolchain runs, from
``repogym_maven.py`` (``repogym.toolchains.plugins.repogym_maven``, the module the toolchain
itself plans, runs and reads with): the work tree's Java sources and POMs listed, each
selected test file's package found, then per part its ``plan`` (the Surefire filter, the
canary's modules, each module's fork budget, JUnit Jupiter's per-test limit; the tests
earlier parts ran excluded) and its script -- one ``mvn -o clean test`` with repogym's
Maven extension (the environment's jar) and a watchdog -- read into memory and removed
before it runs, as the test user with a fresh ``HOME`` and ``TMPDIR``, within the time
limit; then the reports gathered (``collect_command``) and read by ``parse_run``: the
extension's event log with the nonce, each report's digest as Surefire first wrote it, the
canary failed in each module, a test JVM that died on its own, Maven's exit status.

Outputs (``--out DIR``): ``reward.txt`` (``1``/``0``, or a float with ``--partial``) and
``result.json``; any ``reward.txt``/``reward.json`` already there is deleted first. On
stdout: one ``<STATUS> <nodeid>`` line per listed test between SWE-bench's
``>>>>> Start Test Output`` / ``>>>>> End Test Output`` markers (all ``FAILED`` when the
report is untrusted; JavaScript: ``[PASSED] <id>`` / ``[FAILED] <id>``, ids holding
spaces, and Java alike; Go: ``--- PASS: <id> (0.00s)`` / ``--- FAIL: <id> (0.00s)``;
Rust: ``test <id> ... ok`` / ``test <id> ... FAILED``), then
``REPOGYM_REWARD=<reward>`` and ``REPOGYM_RESULT=<json>``. The runner's own output is never
echoed: code under test cannot print a verdict.

Exit status: 0 graded (whatever the reward), 2 bad arguments or spec, 3 the environment
is broken (e.g. the task's own test patch does not apply). A reward of 0 is written in
every case.

The spec (``--spec FILE``, JSON) holds ``instance_id``, ``language``, ``fail_to_pass``,
``pass_to_pass``, ``test_patch``, ``protected`` (exact paths), ``apply_fallbacks``,
``repo_dir``, ``anchor``, ``test_user``, ``timeout``, ``time_limits`` (``{"tests": {id: s},
"default": s | null, "grace": s, "run": s}``); for Python ``runner_config``,
``startup_hooks``, ``install_metadata``, ``editable_prefixes``, ``runner_modules``,
``stdlib_modules``, ``test_dir_names``, ``test_file_names`` and ``runner_changes``; for
JavaScript ``javascript``, for Go ``go``, for Rust ``rust`` and for Java ``java`` (the
plans), and
``span_guarded`` where a listed test's file is runtime source: see
:class:`repogym.datasets.exports.grading.ContainerSpec`, which writes it.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import importlib.util
import json
import os
import pwd
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import PurePosixPath

GIT = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
       "-c", "safe.directory=*", "-c", "core.pager=cat", "-c", "color.ui=false"]
SCRATCH_ROOT = "/var/tmp"
HOST_GRACE = 10.0
# variables that would change what pytest or Python loads; the grader sets its own
DROPPED_ENV = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONSTARTUP", "PYTHONHOME",
               "PYTHONUSERBASE", "PYTHONINSPECT", "PYTHONBREAKPOINT", "LD_PRELOAD",
               "LD_LIBRARY_PATH", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")
# repogym.toolchains.python's RUN_ENV and PYTEST_ARGS (a parity test keeps them equal)
RUN_ENV = {"PYTEST_ADDOPTS": "", "PYTEST_PLUGINS": "", "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONHASHSEED": "0"}
PYTEST_ARGS = ("-p", "no:cacheprovider", "--continue-on-collection-errors", "-q", "-rN",
               "--color=no", "--tb=line")
LAUNCHER_FILE = "repogym_launch.py"
MAX_CULPRITS = 5  # repogym.toolchains.resume.MAX_CULPRITS
EXIT_OK, EXIT_USAGE, EXIT_INFRA = 0, 2, 3


class GraderError(Exception):
    """The environment cannot be graded (not a verdict on the candidate)."""


# -- the spec -------------------------------------------------------------------------------

COMMON_REQUIRED = ("instance_id", "fail_to_pass", "pass_to_pass", "test_patch", "protected",
                   "apply_fallbacks", "repo_dir", "anchor", "test_user", "timeout",
                   "time_limits")
PYTHON_REQUIRED = ("runner_config", "startup_hooks", "install_metadata", "editable_prefixes",
                   "runner_modules", "stdlib_modules", "test_dir_names", "test_file_names",
                   "runner_changes")
JS_PLAN_REQUIRED = ("prefix", "fresh", "command", "command_exitfirst", "env", "reporters",
                    "test_timeout_ms", "canaries", "protection")
GO_PLAN_REQUIRED = ("script", "command", "canary", "report", "build_log", "test_functions",
                    "min_binary_timeout", "fresh", "protection")
RUST_PLAN_REQUIRED = ("script", "payload", "canary", "report", "cleanup", "command", "fresh",
                      "protection")
JAVA_PLAN_REQUIRED = ("protection", "fresh", "collect_timeout")
PLAN_REQUIRED = {"javascript": JS_PLAN_REQUIRED, "go": GO_PLAN_REQUIRED,  # language -> plan
                 "rust": RUST_PLAN_REQUIRED, "java": JAVA_PLAN_REQUIRED}
PLAN_NAMES = {"javascript": "JavaScript", "go": "Go", "rust": "Rust", "java": "Java"}
REQUIRED = COMMON_REQUIRED + PYTHON_REQUIRED  # a Python spec's
LANGUAGES = ("python", "javascript", "go", "rust", "java")


def language_of(spec):
    return spec.get("language") or "python"


def load_spec(path):
    """The spec as a dict; ValueError naming the first problem."""
    with open(path, encoding="utf-8") as fh:
        spec = json.load(fh)
    if not isinstance(spec, dict) or language_of(spec) not in LANGUAGES:
        raise ValueError(f"spec {path} is not a spec of a language this grader grades "
                         f"({', '.join(LANGUAGES)})")
    language = language_of(spec)
    planned = language in PLAN_REQUIRED  # the plan is the spec's field named as the language
    required = COMMON_REQUIRED + ((language,) if planned else PYTHON_REQUIRED)
    missing = [k for k in required if k not in spec]
    if planned and not missing:
        if not isinstance(spec[language], dict):
            raise ValueError(f"spec {path} has no {PLAN_NAMES[language]} grading plan")
        missing = [f"{language}.{k}" for k in PLAN_REQUIRED[language]
                   if k not in spec[language]]
    if missing:
        raise ValueError(f"spec {path} lacks {', '.join(missing)}")
    if not spec["fail_to_pass"]:
        raise ValueError(f"spec {path} has no FAIL_TO_PASS test")
    if not isinstance(spec["time_limits"], dict) or "run" not in spec["time_limits"]:
        raise ValueError(f"spec {path} has no run time limit")
    return spec


def is_test_file(path, spec):
    """The Python toolchain's rule: a name in ``test_file_names`` (conftest.py ...),
    test_*.py, *_test.py, or under a directory in ``test_dir_names``."""
    p = PurePosixPath(path)
    if (p.name in set(spec["test_file_names"]) or p.name.startswith("test_")
            or p.stem.endswith("_test")):
        return True
    return bool(set(spec["test_dir_names"]).intersection(p.parts[:-1]))


def is_protected(path, spec, added=False):
    """Whether a candidate's change to ``path`` is thrown away (``verify``'s rules, and
    the toolchain's ``is_protected``'s); ``added``: the candidate's diff creates it."""
    language = language_of(spec)
    if language in PLAN_REQUIRED:  # JavaScript, Go: the plan's rules
        return (path in set(spec["protected"])
                or protected_by_rules(path, spec[language]["protection"]))
    p = PurePosixPath(path)
    if (path in set(spec["protected"]) or is_test_file(path, spec)
            or path.endswith(tuple(spec["runner_config"]) + tuple(spec["startup_hooks"]))):
        return True
    if any(part.endswith(tuple(spec["install_metadata"]))
           or part.startswith(tuple(spec["editable_prefixes"])) for part in p.parts):
        return True
    if not added or not p.parts:
        return False
    top = p.parts[0]
    if len(p.parts) == 1 and not top.endswith(".py"):
        return False
    name = top[:-3] if len(p.parts) == 1 else top
    return name in set(spec["stdlib_modules"]) or name in set(spec["runner_modules"])


# -- processes and users ----------------------------------------------------------------------

def _ancestors():
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
                pid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def _pids_of(uid):
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", encoding="utf-8") as fh:
                for line in fh:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            out.append(int(name))
                        break
        except (OSError, ValueError):
            continue
    return out


def kill_strays(uid):
    """SIGKILL every process of ``uid`` except this grader and its ancestors."""
    keep = _ancestors()
    for _ in range(40):
        victims = [p for p in _pids_of(uid) if p not in keep]
        if not victims:
            return
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)


# -- git on the trusted anchor --------------------------------------------------------------

class Tree:
    """``repo_dir`` seen through the anchor's git dir with a private index and object store.

    The solver's ``.git`` is never read, and nothing is written into the anchor.
    """

    def __init__(self, spec, scratch):
        self.repo = spec["repo_dir"]
        anchor = spec["anchor"]
        self.git_dir = os.path.join(anchor, "task.git")
        with open(os.path.join(anchor, "commit"), encoding="utf-8") as fh:
            self.commit = fh.read().strip()
        self.post_install = os.path.join(anchor, "post-install.tar")
        objects = os.path.join(scratch, "objects")
        os.makedirs(objects, exist_ok=True)
        self.base_env = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": scratch, "LANG": "C.UTF-8", "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_TERMINAL_PROMPT": "0",
        }
        self.env = dict(self.base_env, **{
            "GIT_DIR": self.git_dir, "GIT_WORK_TREE": self.repo,
            "GIT_INDEX_FILE": os.path.join(scratch, "index"),
            "GIT_OBJECT_DIRECTORY": objects,
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": os.path.join(self.git_dir, "objects"),
        })

    def git(self, *args, check=True, data=None, env=None):
        proc = subprocess.run(GIT + list(args), cwd=self.repo, env=env or self.env,
                              input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if check and proc.returncode != 0:
            raise GraderError(f"git {args[0]} failed: "
                              f"{proc.stderr.decode(errors='replace').strip()[-500:]}")
        return proc

    def nested_repos(self):
        """Directories below the top that hold their own ``.git`` (a solver's clone, say):
        left out of the diff, as a patch could never carry them."""
        found = []
        for root, dirs, files in os.walk(self.repo):
            if root == self.repo:
                dirs[:] = [d for d in dirs if d != ".git"]
                continue
            if ".git" in dirs or ".git" in files:
                found.append(os.path.relpath(root, self.repo))
                dirs[:] = []
        return sorted(found)

    def working_diff(self):
        """The working tree's changes against the broken commit, as a binary git diff.

        Unreadable files are made readable first (the solver owns them); nested
        repositories are left out.
        """
        subprocess.run(["chmod", "-R", "u+rwX", "--", self.repo], stderr=subprocess.DEVNULL)
        self.git("read-tree", self.commit)
        excluded = [f":(exclude,literal){p}" for p in self.nested_repos()]
        self.git("add", "-A", "--ignore-errors", "--", ".", *excluded, check=False)
        return self.git("diff", "--cached", "--binary", "--no-ext-diff", "--no-textconv",
                        "--no-renames", self.commit).stdout

    def restore(self):
        """Wipe the working tree (``.git`` too) and check the broken state out again, with
        a fresh ``.git`` whose ``HEAD`` is the broken commit."""
        subprocess.run(["chmod", "-R", "u+rwX", "--", self.repo], stderr=subprocess.DEVNULL)
        for name in os.listdir(self.repo):
            path = os.path.join(self.repo, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        self.git("read-tree", self.commit)
        self.git("checkout-index", "-a", "-f")
        if os.path.exists(self.post_install):
            subprocess.run(["tar", "-xf", self.post_install, "-C", self.repo], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.fresh_git_dir()

    def fresh_git_dir(self):
        """``repo_dir/.git`` made anew: one branch at the broken commit, its objects
        borrowed from the anchor, its index that commit's tree. The launcher reads which
        configuration files are committed at ``HEAD`` from it; the solver's ``.git`` (which
        could have committed a configuration file, or removed one) is gone."""
        dot = os.path.join(self.repo, ".git")
        env = dict(self.base_env, GIT_DIR=dot)  # run in the work tree's top
        self.git("-c", "init.defaultBranch=main", "init", "-q", "--template=", env=env)
        info = os.path.join(dot, "objects", "info")
        os.makedirs(info, exist_ok=True)
        with open(os.path.join(info, "alternates"), "w", encoding="utf-8") as fh:
            fh.write(os.path.join(self.git_dir, "objects") + "\n")
        self.git("update-ref", "HEAD", self.commit, env=env)
        self.git("read-tree", self.commit, env=env)

    def apply(self, patch_path, fallbacks):
        """``git apply`` with the first fallback whose ``--check`` passes; the flags used,
        or None when none applies (the tree is then unchanged)."""
        for flags in fallbacks:
            extra = flags.split()
            if self.git("apply", "--check", *extra, patch_path, check=False).returncode == 0:
                if self.git("apply", *extra, patch_path, check=False).returncode == 0:
                    return extra
        return None

    def touched(self, patch_path, flags):
        """Path -> whether the candidate added it, for every path ``git status`` shows
        (added: untracked or ``A``) and every other path the patch names (both sides of
        renames; added, as ``verify`` counts them: a path the patch names that ``git
        status`` does not show is a new file the candidate's ``.gitignore`` hides)."""
        status = self.git("status", "--porcelain=v1", "-z", "--untracked-files=all",
                          "--ignored=no", "--no-renames").stdout
        paths = {}
        for entry in status.decode("utf-8", errors="surrogateescape").split("\0"):
            if len(entry) > 3:
                code = entry[:2].strip() or entry[:2]
                paths.setdefault(entry[3:], code in ("??", "A"))
        for path in self.named(patch_path, flags):
            paths.setdefault(path, True)
        return paths

    def named(self, patch_path, flags):
        """The paths the patch names (``git apply --numstat``; renames give both)."""
        paths = set()
        out = self.git("apply", "--numstat", "-z", *flags, patch_path, check=False).stdout
        fields = out.decode("utf-8", errors="surrogateescape").split("\0")
        i = 0
        while i < len(fields):
            parts = fields[i].split("\t")
            i += 1
            if len(parts) == 3 and parts[2]:
                paths.add(parts[2])
            elif len(parts) == 3:  # a rename: the two paths follow
                paths.update(p for p in fields[i:i + 2] if p)
                i += 2
        return paths

    def in_commit(self, path):
        return self.git("cat-file", "-e", f"{self.commit}:{path}", check=False).returncode == 0

    def reset_path(self, path):
        """``path`` back to the broken commit's version, or gone if the commit lacks it."""
        if self.in_commit(path):
            self.git("checkout", self.commit, "--", path)
            return
        full = os.path.join(self.repo, path)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full)
        elif os.path.lexists(full):
            os.unlink(full)


# -- the report (a port of repogym.toolchains.pytest_report.parse_report) ------------------

NO_BODY = "the test passed, but its body never ran"


def _num(value, default, kind=float):
    try:
        return kind(value)
    except (TypeError, ValueError):
        return default


class _Acc:
    """Folds the setup/call/teardown reports of one test into one outcome."""

    def __init__(self):
        self.outcome, self.message = None, ""
        self.timed_out = self.no_body = self.ended = False

    def add(self, ev):
        when, out, xf = ev.get("when"), ev.get("outcome"), bool(ev.get("wasxfail"))
        self.ended = self.ended or when == "teardown"
        if out == "failed":
            self.message = self.message or str(ev.get("message") or "")
            if when == "call":
                self.outcome = "failed"
            elif self.outcome != "failed":
                self.outcome = "error"
        elif out == "skipped" and when in ("setup", "call") and self.outcome is None:
            self.outcome = "xfail" if xf else "skipped"
        elif out == "passed" and when == "call" and self.outcome is None:
            self.outcome = "xpass" if xf else "passed"
            self.no_body = ev.get("body") is False and not xf

    def died(self, why):
        """The run died while this test ran."""
        if self.timed_out:
            self.outcome, self.message = "failed", self.message or why
        else:
            self.outcome, self.message = "error", why

    def result(self):
        """``{"outcome", "timed_out", "message"}``: no call report is an error, a pass
        without its body an error, an error past its time limit a failure."""
        outcome, message = self.outcome or "error", self.message
        if self.no_body and outcome == "passed":
            outcome, message = "error", NO_BODY
        if self.timed_out and outcome == "error":
            outcome = "failed"
        return {"outcome": outcome, "timed_out": self.timed_out, "message": message}


def _events(raw):
    for line in raw.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict):
            yield ev


class _Report:
    """What the events of one report say, read in order."""

    def __init__(self, nonce):
        self.nonce, self.accs, self.errors, self.problems = nonce, {}, [], []
        self.finish, self.current, self.changes = None, None, []
        self.stopped = False  # binary grading stopped the run at a test that did not pass

    def acc(self, ev):
        return self.accs.setdefault(str(ev.get("nodeid")), _Acc())

    def read(self, ev):
        kind = ev.get("event")
        if kind == "begin":
            self.current = str(ev.get("nodeid"))
            self.acc(ev)
        elif kind == "test":
            self.acc(ev).add(ev)
        elif kind == "timeout":
            acc = self.acc(ev)
            acc.timed_out = True
            acc.message = (f"timed out: the test ran past its limit of "
                           f"{_num(ev.get('limit') or 0, 0.0):.1f}s")
        elif kind == "collect_error":
            self.errors.append(str(ev.get("nodeid")))
        elif kind == "runner_changed" and isinstance(ev.get("what"), list):
            self.changes += [str(w) for w in ev["what"] if str(w) not in self.changes]
        elif kind == "stopped" and ev.get("nonce") == self.nonce:
            self.stopped = True
        elif kind == "finish":
            if ev.get("nonce") != self.nonce:
                self.problems.append("report finish event carries a foreign nonce")
            elif self.finish is not None:
                self.problems.append("report has two finish events")
            else:
                self.finish = _num(ev.get("exitstatus", -1), -1, int)

    def died_in(self):
        """The test that was running when the run died (None: it finished, or died
        outside any test)."""
        if self.finish is not None or self.current is None:
            return None
        acc = self.accs[self.current]
        return None if acc.ended and not acc.timed_out else self.current


def parse_report(raw, nonce, exit_code, timed_out, allowed_changes=(), duration=0.0):
    """One run's report: ``{"tests": {nodeid: {"outcome", "timed_out", "message"}},
    "finished", "problems", "timed_out", "died_in", "culprits", "duration"}`` (the rules of
    ``repogym.toolchains.pytest_report``; ``allowed_changes``: the environment's own
    runner changes)."""
    rep = _Report(nonce)
    for ev in _events(raw):
        rep.read(ev)
    died_in = rep.died_in()
    if died_in is not None:
        rep.accs[died_in].died(f"the test run died while this test ran (exit code {exit_code})")
    tests = {n: a.result() for n, a in rep.accs.items()}
    for nodeid in rep.errors:
        tests.setdefault(nodeid, {"outcome": "error", "timed_out": False,
                                  "message": "collection error"})
    allowed = set(allowed_changes)
    tamper = [c for c in rep.changes if c not in allowed]
    if tamper:
        rep.problems.append(f"the test runner was changed by code under test: {tamper[:10]}")
    no_body = {n for n, a in rep.accs.items() if a.no_body}
    rep.problems += _cross_check(tests, rep.finish, exit_code, timed_out, no_body,
                                 rep.stopped)
    return {"tests": tests, "finished": rep.finish is not None, "problems": rep.problems,
            "timed_out": bool(timed_out), "died_in": died_in, "culprits": [],
            "duration": duration}


def _cross_check(tests, finish, exit_code, timed_out, no_body, stopped=False):
    """Problems when the exit code and the report disagree (a test turned into an error
    for want of a body counts as pytest saw it: passed; a run binary grading stopped at a
    skipped test exits 1 too)."""
    if timed_out or finish is None:
        return []
    problems = []
    if finish != exit_code:
        problems.append(f"pytest exit code {exit_code} disagrees with the report's {finish}")
    bad = any(t["outcome"] in ("failed", "error") and n not in no_body
              for n, t in tests.items())
    if exit_code == 0 and bad:
        problems.append("exit code 0 but the report has failures")
    if exit_code == 1 and not bad and not stopped:
        problems.append("exit code 1 but the report has no failure")
    return problems


# -- runs that die in a test (a port of repogym.toolchains.resume) ---------------------------

def blame_overrun(report):
    """A run stopped at its own limit while a test ran: that test ran past the limit."""
    culprit = report["died_in"]
    if not report["timed_out"] or culprit is None:
        return report
    tests = dict(report["tests"])
    tests[culprit] = {"outcome": "failed", "timed_out": True, "message": (
        f"timed out: the run reached its limit of {report['duration']:.0f}s in this test")}
    return dict(report, tests=tests)


def merged(parts):
    """One report from consecutive parts (each ran the tests the ones before did not)."""
    last, tests = parts[-1], {}
    for part in parts:
        tests.update(part["tests"])
    problems = list(dict.fromkeys(p for part in parts for p in part["problems"]))
    return dict(last, tests=tests, problems=problems,
                culprits=[p["died_in"] for p in parts if p["died_in"] is not None],
                duration=round(sum(p["duration"] for p in parts), 3))


def run_to_end(run_part, wanted, budget, partial):
    """Run ``wanted`` within ``budget`` seconds, as ``run_part(todo, timeout)`` reports;
    when a part dies in a test, stop (binary grading: the reward is 0 already) or, with
    ``partial``, run the tests that have not run again, up to :data:`MAX_CULPRITS` times."""
    deadline = time.monotonic() + budget
    parts, done = [], {}
    while True:
        todo = [t for t in sorted(wanted) if t not in done]
        part = blame_overrun(run_part(todo, max(1.0, deadline - time.monotonic())))
        parts.append(part)
        done.update(part["tests"])
        if part["died_in"] is not None and not [t for t in todo if t not in done]:
            # the test it died in was the last one left: as complete as a finished run
            return {**merged(parts), "finished": True, "timed_out": False, "died_in": None}
        if (part["died_in"] is None or part["finished"] or len(parts) > MAX_CULPRITS
                or time.monotonic() >= deadline or not partial):
            return merged(parts)


def grade(report, wanted, partial=False):
    """``{"reward", "resolved", "trusted", "outcomes", "problems"}`` of a (merged) report
    over ``wanted`` (``verify._graded``'s rules)."""
    tests, culprits = report["tests"], report["culprits"]
    outcomes = {t: tests[t]["outcome"] if t in tests else None for t in sorted(wanted)}
    passed = sum(o == "passed" for o in outcomes.values())
    problems = list(report["problems"])
    problems += [f"{t}: {tests[t]['message']}" for t in culprits if t in tests]
    if report["timed_out"]:
        problems.append("the test run timed out")
    elif not report["finished"]:
        problems.append("the test run ended without a complete report")
    problems += [f"{t} timed out" for t in sorted(wanted)
                 if t in tests and tests[t]["timed_out"] and t not in culprits]
    trusted = report["finished"] and not report["timed_out"] and not report["problems"]
    resolved = bool(trusted and wanted and passed == len(wanted))
    if partial:
        reward = passed / len(wanted) if trusted and wanted else 0.0
    else:
        reward = 1.0 if resolved else 0.0
    return {"reward": reward, "resolved": resolved, "trusted": bool(trusted),
            "outcomes": outcomes, "problems": problems}


# -- running pytest ------------------------------------------------------------------------

def plugin_limits(spec):
    """The report plugin's ``limits`` setting from the spec's ``time_limits``."""
    limits = spec["time_limits"]
    return {"tests": limits.get("tests") or {}, "default": limits.get("default"),
            "grace": limits.get("grace", 2.0)}


def run_budget(spec):
    """How long all parts of the run may take: the judge's run limit, at most ``timeout``."""
    return min(float(spec["time_limits"]["run"]), float(spec["timeout"]))


class Runner:
    """Runs listed tests as the test user, through the launcher, one fresh part at a time."""

    def __init__(self, spec, plugin_path, launcher_path, user, exitfirst=False):
        self.spec, self.plugin, self.launcher, self.user = (
            spec, plugin_path, launcher_path, user)
        self.exitfirst = exitfirst  # binary grading: the first test that fails ends it

    def part(self, todo, timeout):
        """One run of ``todo`` (fresh scratch, module names, report path and nonce) within
        ``timeout`` seconds; its parsed report."""
        scratch = tempfile.mkdtemp(prefix="rg-", dir=SCRATCH_ROOT)
        try:
            nonce, cmd, env, report = self._place(scratch, todo)
            code, duration, timed_out = self._execute(cmd, env, timeout)
            raw = _read(report)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return parse_report(raw, nonce, code, timed_out, self.spec["runner_changes"], duration)

    def _place(self, scratch, todo):
        """The run's files in ``scratch``; ``(nonce, command, environment, report path)``."""
        home = os.path.join(scratch, "home")
        os.mkdir(home)
        nonce, module = secrets.token_hex(16), f"rg_{secrets.token_hex(8)}"
        launcher = os.path.join(scratch, f"rg_{secrets.token_hex(8)}.py")
        report = os.path.join(scratch, f"r-{secrets.token_hex(8)}.jsonl")
        config = os.path.join(scratch, "config.json")
        shutil.copyfile(self.plugin, os.path.join(scratch, f"{module}.py"))
        shutil.copyfile(self.launcher, launcher)
        with open(config, "w", encoding="utf-8") as fh:
            json.dump({"report": report, "nonce": nonce, "select": sorted(todo),
                       "exclude": [], "limits": plugin_limits(self.spec),
                       "exitfirst": self.exitfirst}, fh)
        user = self.user
        if os.geteuid() == 0:
            subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", scratch],
                           check=True)
        cmd = ["python", launcher, module, *PYTEST_ARGS]
        return nonce, cmd, _test_env(scratch, config, home), report

    def _execute(self, cmd, env, timeout):
        return execute(cmd, env, self.spec["repo_dir"], self.user, timeout)


def execute(cmd, env, cwd, user, timeout, stdout=None):
    """``(exit code, seconds, timed out)`` of ``cmd`` as ``user`` within ``timeout``;
    every process it left is killed. ``stdout``: a file (opened here, by the grader) that
    receives the command's standard output, else it is discarded."""
    cmd = ["timeout", "-s", "KILL", f"{timeout:.3f}", *cmd]
    if os.geteuid() == 0 and user.pw_uid != 0:
        cmd = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}",
               "--init-groups", "--no-new-privs", "--"] + cmd
    start = time.monotonic()
    out = open(stdout, "wb") if stdout else subprocess.DEVNULL  # noqa: SIM115
    try:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.DEVNULL,
                                start_new_session=True)
    finally:
        if stdout:
            out.close()
    hung = False
    try:
        code = proc.wait(timeout + HOST_GRACE)
    except subprocess.TimeoutExpired:
        hung, code = True, -9
    _kill_group(proc.pid)
    kill_strays(user.pw_uid)
    if hung:
        proc.wait()
    duration = time.monotonic() - start
    return code, duration, hung or (code in (124, 137, -9) and duration >= timeout)


# -- JavaScript: the spec's plan (repogym.toolchains.javascript and its export module) ----------

# placeholders of the plan's command line (repogym.toolchains.javascript.export)
JS_SCRATCH, JS_FILES, JS_PATTERN = "@RG_SCRATCH@", "@RG_FILES@", "@RG_PATTERN@"
JS_EACH_SELECT, JS_EACH_EXCLUDE, JS_TITLE = "@RG_EACH_SELECT@", "@RG_EACH_EXCLUDE@", "@RG_TITLE@"
JS_STDOUT_BYTES = 64 << 20  # the most of a TAP runner's output that is read
# repogym.toolchains.javascript.report and .runners (a parity test keeps them equal)
JS_SEPARATOR = " > "
JS_MESSAGE_CHARS = 4000
JS_REGEX_SPECIAL = re.compile(r"[.*+?^${}()|\[\]\\/-]")
JS_OUTCOMES = {"passed": "passed", "failed": "failed", "skipped": "skipped",
               "pending": "skipped", "todo": "skipped", "disabled": "skipped", "error": "error"}
# what would change how node, npm or bash start (the plan's variables set their own)
JS_DROPPED_ENV = ("NODE_OPTIONS", "NODE_PATH", "NODE_REPL_EXTERNAL_MODULE", "BASH_ENV", "ENV",
                  "TMPDIR", "npm_config_userconfig", "NPM_CONFIG_USERCONFIG",
                  "npm_config_globalconfig", "NPM_CONFIG_GLOBALCONFIG", "REPOGYM_JS_CONFIG")


def protected_by_rules(path, rules):
    """A toolchain's ``is_protected`` from a plan's rules: the file name matches a
    pattern, the whole path one of ``path_patterns`` (Rust: a build script outside
    ``src/``), a folder above it is a test folder, or a part of it is one of ``any_part``
    (JavaScript: ``node_modules``)."""
    p = PurePosixPath(path)
    if any(re.search(pattern, p.name) for pattern in rules["name_patterns"]):
        return True
    if any(re.search(pattern, path) for pattern in rules.get("path_patterns") or ()):
        return True
    return bool(set(rules["test_dirs"]).intersection(p.parts[:-1])
                or set(rules["any_part"]).intersection(p.parts))


js_is_protected = protected_by_rules  # JavaScriptToolchain.is_protected's, from the plan


def js_test_id(file, titles):
    """``file > title > ...`` (titles' own line breaks folded)."""
    return JS_SEPARATOR.join([file, *(" ".join(str(t).split()) for t in titles)])


def js_split_id(test):
    """The file and the titles of a test id (without the ``[n]`` of a repeated name)."""
    file, *titles = test.split(JS_SEPARATOR)
    if titles and titles[-1].endswith("]") and " [" in titles[-1]:
        head, _, count = titles[-1].rpartition(" [")
        if count[:-1].isdigit():
            titles[-1] = head
    return file, titles


def js_escape(text):
    """``text`` as a JavaScript regular expression matching it literally."""
    return JS_REGEX_SPECIAL.sub(lambda m: "\\" + m.group(0), text)


def js_name_pattern(select, exclude):
    """A pattern over full names that matches the selected tests and none of the excluded
    ones; None when every name may run."""
    def names(ids):
        full = sorted({" ".join(js_split_id(i)[1]) for i in ids})
        return "|".join(js_escape(n) for n in full)

    if select is None and not exclude:
        return None
    keep = f"(?:{names(select)})$" if select is not None else ""
    drop = f"(?!(?:{names(exclude)})$)" if exclude else ""
    return f"^{drop}{keep}" if keep else f"^{drop}"


def js_files_of(ids):
    return sorted({js_split_id(i)[0] for i in ids if js_split_id(i)[0]})


def js_command(plan, scratch, select, exclude, exitfirst):
    """The runner's command line (words) for one run, from the plan's template."""
    pattern = js_name_pattern(select, exclude)
    out = []
    for word in plan["command_exitfirst" if exitfirst else "command"]:
        if word == JS_FILES:
            out += js_files_of(select)
        elif word.startswith(JS_EACH_SELECT):  # one word per test (ava's --match)
            out += [_js_title_word(word[len(JS_EACH_SELECT):], t) for t in select]
        elif word.startswith(JS_EACH_EXCLUDE):
            out += [_js_title_word(word[len(JS_EACH_EXCLUDE):], t) for t in exclude]
        else:
            word = word.replace(JS_SCRATCH, scratch)
            if JS_PATTERN in word:
                if pattern is None:
                    raise GraderError("the plan's command line needs a selection")
                word = word.replace(JS_PATTERN, pattern)
            out.append(word)
    return out


def _js_title_word(word, test):
    titles = js_split_id(test)[1]
    return word.replace(JS_TITLE, titles[-1] if titles else "")


def js_canary(template):
    """``(path, text, test ids)`` of one canary from its template (the file
    ``repogym.toolchains.javascript.canary.plant`` made at export time, its random tokens
    placeholders), with fresh random tokens."""
    values = {name: secrets.token_hex(int(n)) for name, n in template["tokens"].items()}

    def filled(text):
        for name, value in values.items():
            text = text.replace(name, value)
        return text

    return (filled(template["path"]), filled(template["text"]),
            [filled(t) for t in template["tests"]])


class _JsReading:
    """One report read line by line (``repogym.toolchains.javascript.report._Reading``)."""

    def __init__(self, nonce):
        self.nonce, self.results, self.file_errors, self.forged = nonce, {}, [], []
        self.running, self.finished, self.totals = None, False, {}
        self.exit_code_checked = True
        self.hash = hashlib.sha256()

    def line(self, raw):
        if self.finished:
            self.forged.append("report lines after its finish line")
            return
        try:
            event = json.loads(raw)
        except ValueError:
            event = None
        if isinstance(event, dict) and event.get("event") == "finish":
            self._finish(event)
            return
        self.hash.update(raw)
        if not isinstance(event, dict):
            return
        kind = event.get("event")
        if kind == "begin":
            self.running = str(event.get("id", ""))
        elif kind == "test":
            self._test(event)
        elif kind == "file_error":
            file = str(event.get("file", ""))
            self.file_errors.append(
                f"{file}: {str(event.get('message', ''))[:JS_MESSAGE_CHARS]}")

    def _finish(self, event):
        want = hmac.new(self.nonce.encode(), self.hash.hexdigest().encode(),
                        hashlib.sha256).hexdigest()
        if not hmac.compare_digest(str(event.get("mac", "")), want):
            self.forged.append("the report's finish line does not sign what came before it")
            return
        self.finished = True
        self.exit_code_checked = event.get("exit_code_checked") is not False
        self.totals = {k: int(_num(v, 0, int)) for k, v in event.items()
                       if k in ("passed", "failed", "skipped", "errors")
                       and isinstance(v, (int, float))}

    def _test(self, event):
        base = js_test_id(str(event.get("file", "")),
                          [str(t) for t in event.get("titles") or []])
        nodeid, n = base, 1
        while nodeid in self.results:
            n += 1
            nodeid = f"{base} [{n}]"
        outcome = JS_OUTCOMES.get(str(event.get("outcome")), "error")
        timed_out = bool(event.get("timed_out"))
        self.results[nodeid] = {
            "outcome": "failed" if timed_out else outcome, "timed_out": timed_out,
            "message": str(event.get("message") or "")[:JS_MESSAGE_CHARS]}
        if self.running in (base, nodeid):
            self.running = None


def _js_problems(reading, exit_code, timed_out):
    """Reasons not to believe a finished report."""
    out = list(dict.fromkeys(reading.forged))
    if not reading.finished or timed_out:
        return out
    failing = [t for t, r in reading.results.items() if r["outcome"] not in ("passed", "skipped")]
    if exit_code == 0 and (failing or reading.file_errors) and reading.exit_code_checked:
        out.append(f"the runner exited 0 but {len(failing)} test(s) failed and "
                   f"{len(reading.file_errors)} file(s) did not load")
    if exit_code != 0 and not failing and not reading.file_errors:
        out.append(f"the runner exited {exit_code} but the report has no failure")
    counted = reading.totals.get("passed")
    passed = sum(1 for r in reading.results.values() if r["outcome"] == "passed")
    if counted is not None and counted != passed:
        out.append(f"the runner counted {counted} passing test(s), the report has {passed}")
    return out


def js_parse_report(raw, nonce, exit_code, timed_out, duration=0.0):
    """One run's report from the reporter's JSON lines (``raw``: bytes or text), in the
    form :func:`parse_report` gives (``repogym.toolchains.javascript.report.parse_report``'s
    rules; ``died_in``: the test a run that did not finish was in)."""
    if isinstance(raw, bytes):  # read as repogym reads it: UTF-8, bad bytes replaced
        raw = raw.decode("utf-8", errors="replace")
    reading = _JsReading(nonce)
    for line in raw.encode("utf-8", errors="surrogateescape").splitlines(keepends=True):
        if line.strip():
            reading.line(line)
    return {"tests": reading.results, "finished": reading.finished,
            "problems": _js_problems(reading, exit_code, timed_out),
            "timed_out": bool(timed_out), "died_in": None if reading.finished
            else reading.running, "culprits": [], "duration": duration}


# -- ava's TAP (a port of repogym.toolchains.javascript.tap; a parity test keeps them equal) --

TAP_SEP = " \u203a "
TAP_POINT = re.compile(r"^(not ok|ok) (\d+) - (.*?)(?: # (SKIP|TODO)\b.*)?$")
TAP_EXITED = re.compile(r"^(.*) exited with a non-zero exit code: (\d+)$")
TAP_COUNT = re.compile(r"^# (pass|fail) (\d+)$")
TAP_CRASH = re.compile(r"^(?:[A-Z]\w*)?(?:Error|Exception)(?: \[[A-Z_0-9]+\])?: |"
                       r"^(?:Uncaught exception|Unhandled rejection) in |^No tests found in ")


def ava_title_prefixes(files):
    """ava's title prefix of each file -> the file (no prefix when one file runs)."""
    if len(files) <= 1:
        return {}
    common = files[0].split("/")[:-1]
    for f in files[1:]:
        d = f.split("/")[:-1]
        i = 0
        while i < min(len(common), len(d)) and common[i] == d[i]:
            i += 1
        common = common[:i]
    out = {}
    for f in files:
        parts = [p for p in f.split("/")[len(common):] if p != "__tests__"]
        name = parts.pop().replace(".spec.", ".", 1).replace(".test.", ".", 1)
        name = re.sub(r"^test-", "", name)
        name = re.sub(r"\.[cm]?[jt]sx?$", "", name)
        out[TAP_SEP.join([*parts, name])] = f
    return out


class _Tap:
    """ava's TAP stream read line by line."""

    def __init__(self, files):
        self.files, self.results, self.file_errors, self.problems = files, {}, [], []
        self.counts, self.plan, self.points, self.crashes = {}, None, 0, 0

    def read(self, text):
        lines = text.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            i += 1
            if line.startswith("1..") and line[3:].isdigit():
                self.plan = int(line[3:])
            elif (m := TAP_COUNT.match(line)) is not None:
                self.counts[m.group(1)] = int(m.group(2))
            elif (m := TAP_POINT.match(line)) is not None:
                block, i = _tap_yaml(lines, i)
                self.point(m, block)

    def point(self, m, message):
        ok, number, title, directive = m.group(1) == "ok", int(m.group(2)), m.group(3), m.group(4)
        self.points += 1
        if number != self.points:
            self.problems.append(f"TAP test point {number} out of sequence (expected "
                                 f"{self.points})")
        if not ok and (e := TAP_EXITED.match(title)) is not None:
            self.file_errors.append(f"{e.group(1)}: {title}")
            self.crashes += 1
            return
        if not ok and not directive and TAP_CRASH.match(title):
            self.file_errors.append(f"{title}\n{message}"[:JS_MESSAGE_CHARS])
            self.crashes += 1
            return
        file, name = self._split(title)
        if file is None:
            if not ok and not directive:
                self.file_errors.append(f"{title}\n{message}"[:JS_MESSAGE_CHARS])
                self.crashes += 1
                return
            file = self.files[0] if self.files else ""
        outcome = {"SKIP": "skipped", "TODO": "skipped"}.get(
            directive or "", "passed" if ok else "failed")
        nodeid = js_test_id(file, [name])
        if nodeid in self.results:
            self.problems.append(f"TAP names the test {nodeid!r} twice")
        self.results[nodeid] = {
            "outcome": outcome, "timed_out": "Timed out" in message or "timed out" in message,
            "message": message[:JS_MESSAGE_CHARS] if outcome == "failed" else ""}

    def _split(self, title):
        prefixes = ava_title_prefixes(self.files)
        if not prefixes:
            return (self.files[0] if len(self.files) == 1 else None), title
        for prefix, file in sorted(prefixes.items(), key=lambda kv: -len(kv[0])):
            if title.startswith(prefix + TAP_SEP):
                return file, title[len(prefix) + len(TAP_SEP):]
        return None, title


def _tap_yaml(lines, i):
    """The YAML block (``  ---`` ... ``  ...``) at ``lines[i]``, if any, and where it ends."""
    if i >= len(lines) or lines[i] != "  ---":
        return "", i
    out = []
    i += 1
    while i < len(lines) and lines[i] != "  ...":
        out.append(lines[i][4:])
        i += 1
    return "\n".join(out).strip(), i + 1


def js_parse_tap(text, files, exit_code, timed_out, duration=0.0):
    """One run's report from ``ava --tap`` output, in the form :func:`js_parse_report`
    gives (``parse_tap``'s rules: numbering, plan, counts and exit code cross-checked)."""
    tap = _Tap(files)
    tap.read(text)
    finished = tap.plan is not None and not timed_out
    problems = list(tap.problems)
    if finished:
        tests = tap.points - tap.crashes
        failing = sum(1 for r in tap.results.values() if r["outcome"] == "failed")
        passing = sum(1 for r in tap.results.values() if r["outcome"] == "passed")
        if tap.plan != tests:
            problems.append(f"TAP plan 1..{tap.plan} but {tests} test point(s)")
        if "fail" in tap.counts and tap.counts["fail"] != failing + tap.crashes:
            problems.append(f"ava counted {tap.counts['fail']} failure(s), the points "
                            f"{failing + tap.crashes}")
        if (exit_code == 0) == bool(failing or tap.file_errors):
            problems.append(f"ava exited {exit_code} with {failing} failing test(s) and "
                            f"{len(tap.file_errors)} crashed file(s)")
        if "pass" in tap.counts and tap.counts["pass"] < passing:
            problems.append(f"ava counted {tap.counts['pass']} passing, the points {passing}")
    return {"tests": tap.results, "finished": finished, "problems": problems,
            "timed_out": bool(timed_out), "died_in": None, "culprits": [],
            "duration": duration}


def js_selected(report, select):
    """Without the tests the run did not select that the runner listed as skipped (jest
    and vitest list the tests a name filter left out)."""
    wanted = set(select)
    tests = {t: r for t, r in report["tests"].items()
             if t in wanted or r["outcome"] != "skipped"}
    return dict(report, tests=tests)


def js_check_canary(report, canary):
    """The report without the canary's tests, and a problem for each that did not fail
    (``repogym.toolchains.javascript.canary.Canary.check``)."""
    if not canary:
        return report
    tests = report["tests"]
    wrong = [t for t in canary if t in tests and tests[t]["outcome"] in ("passed", "xpass")]
    missing = [t for t in canary if t not in tests]
    problems = list(report["problems"])
    if wrong:
        problems.append(f"checks that must fail passed ({len(wrong)} of {len(canary)}):"
                        " the code under test neutralised the assertions")
    if missing and report["finished"] and not wrong:
        problems.append(f"{len(missing)} canary check(s) did not run")
    kept = {k: v for k, v in tests.items() if k not in set(canary)}
    return dict(report, tests=kept, problems=problems)


def js_blame_death(report, canary, exit_code):
    """A run that died in a test (not a canary's) that had not reported: that test
    errored (failed, when the run's own limit stopped it: :func:`blame_overrun`)."""
    culprit = report["died_in"]
    if culprit is None or culprit in report["tests"] or culprit in set(canary):
        return report
    tests = dict(report["tests"])
    tests[culprit] = {"outcome": "error", "timed_out": False, "message": (
        f"the test run died while this test ran (exit code {exit_code})")}
    return dict(report, tests=tests)


class JsRunner:
    """Runs listed JavaScript tests as the test user, as the spec's plan says, one fresh
    part at a time (``JavaScriptToolchain.run_tests`` with ``check_runner``)."""

    def __init__(self, spec, user, exitfirst=False):
        self.spec, self.plan, self.user = spec, spec["javascript"], user
        self.exitfirst = exitfirst  # binary grading: the first test that fails ends it
        self.seen = set()  # tests earlier parts reported (excluded from later ones)

    def part(self, todo, timeout):
        """One run of ``todo`` (fresh scratch, canaries, report path and nonce) within
        ``timeout`` seconds; its checked report."""
        scratch = tempfile.mkdtemp(prefix="rg-", dir=SCRATCH_ROOT)
        planted, canary = [], []
        try:
            for path in self.plan["fresh"]:  # emptied as a reset empties them
                _remove_tree(path)
            planted, canary = self._plant(todo)
            select = [*todo, *canary]
            exclude = sorted(self.seen)
            exitfirst = self.exitfirst and not canary  # a canary fails by design
            nonce, cmd, env, report = self._place(scratch, select, exclude, exitfirst)
            tap = os.path.join(scratch, "stdout") if self.plan.get("tap") else None
            code, duration, timed_out = execute(cmd, env, self.spec["repo_dir"], self.user,
                                                timeout, stdout=tap)
            raw = _read_bytes(tap or report, JS_STDOUT_BYTES if tap else None)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
            for path in planted:
                _remove(path)
        code = -9 if timed_out else code  # as a repogym sandbox reports a run it stopped
        if tap:  # ava: the TAP it printed (run_tests reads the exec's stdout)
            report = js_parse_tap(raw.decode("utf-8", errors="replace"), js_files_of(select),
                                  code, timed_out, duration)
        else:
            report = js_parse_report(raw, nonce, code, timed_out, duration)
        report = js_check_canary(js_selected(report, select), canary)
        report = js_blame_death(report, canary, code)
        self.seen.update(report["tests"])
        return report

    def _plant(self, todo):
        """A canary beside each selected test file the plan has one for; ``(paths,
        test ids)``."""
        repo = self.spec["repo_dir"]
        root = os.path.realpath(repo)
        paths, ids = [], []
        for file in sorted({js_split_id(t)[0] for t in todo}):
            template = self.plan["canaries"].get(file)
            if template is None or not os.path.isfile(os.path.join(repo, file)):
                continue
            where, text, tests = js_canary(template)
            full = os.path.join(repo, where)
            folder = os.path.realpath(os.path.dirname(full))
            if folder != root and not folder.startswith(root + os.sep):
                raise GraderError(f"cannot plant a canary beside {file}: its folder leaves "
                                  f"{repo}")
            fd = os.open(full, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            paths.append(full)
            if os.geteuid() == 0:
                os.chown(full, self.user.pw_uid, self.user.pw_gid)
            ids += tests
        return paths, ids

    def _place(self, scratch, select, exclude, exitfirst):
        """The run's files in ``scratch``; ``(nonce, command, environment, report path)``."""
        plan, user = self.plan, self.user
        home, tmp = os.path.join(scratch, "home"), os.path.join(scratch, "tmp")
        os.mkdir(home)
        os.mkdir(tmp)
        nonce = secrets.token_hex(16)
        report = os.path.join(scratch, f"r-{secrets.token_hex(8)}.jsonl")
        config = os.path.join(scratch, f"c-{secrets.token_hex(8)}.json")
        for name, text in plan["reporters"].items():
            _write(os.path.join(scratch, os.path.basename(name)), text)
        with open(config, "w", encoding="utf-8") as fh:
            json.dump({"report": report, "nonce": nonce, "root": self.spec["repo_dir"],
                       "select": sorted(select), "exclude": sorted(exclude),
                       "test_timeout_ms": plan["test_timeout_ms"]}, fh)
        if os.geteuid() == 0:
            subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", scratch],
                           check=True)
        shell = " && ".join([*plan["prefix"],
                             shlex.join(js_command(plan, scratch, select, exclude, exitfirst))])
        env = {k: v for k, v in os.environ.items()
               if k not in DROPPED_ENV + JS_DROPPED_ENV}
        env.update({k: v.replace(JS_SCRATCH, scratch) for k, v in plan["env"].items()})
        env.update({"REPOGYM_JS_CONFIG": config, "HOME": home, "TMPDIR": tmp,
                    "USER": user.pw_name, "LOGNAME": user.pw_name})
        return nonce, ["bash", "-c", shell], env, report


def _read_bytes(path, limit=None):
    try:
        with open(path, "rb") as fh:
            return fh.read(limit if limit is not None else -1)
    except OSError:
        return b""


def _remove(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def _remove_tree(path):
    """``path`` gone, whatever it is (a link is removed, never followed)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        _remove(path)


def _test_env(scratch, config, home):
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    env.update(RUN_ENV)
    env.update({"REPOGYM_PLUGIN_CONFIG": config, "PYTHONPATH": scratch, "HOME": home})
    return env


def _kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


# -- Go: the spec's plan (repogym.toolchains.go and its export module) --------------------------

GO_REPORT_FILE = "repogym_go_report.py"  # repogym.toolchains.plugins.repogym_go_report
# placeholders of the plan (repogym.toolchains.go.export; a parity test keeps them equal)
GO_SCRATCH, GO_NONCE, GO_PACKAGES = "@RG_SCRATCH@", "@RG_NONCE@", "@RG_PACKAGES@"
GO_RUN, GO_SKIP, GO_TIMEOUTS = "@RG_RUN@", "@RG_SKIP@", "@RG_TIMEOUTS@"
GO_DEFAULT_TIMEOUT, GO_SCRIPT, GO_INDEX = "@RG_DEFAULT_TIMEOUT@", "@RG_SCRIPT@", "@RG_INDEX@"
GO_SLOT = re.compile(r"@RG_[A-Z_]+(?::(\d+))?@")
GO_SHELL_SAFE = re.compile(r"[\w@%+=:,./-]+", re.ASCII)  # words shlex.quote leaves as they are
# what would change how bash or the go tool start, or where go looks (the run script sets
# GOFLAGS, GOPROXY, GOSUMDB, GOTOOLCHAIN, GOMODCACHE and GOCACHE itself)
GO_DROPPED_ENV = ("BASH_ENV", "ENV", "PWD", "OLDPWD", "TMPDIR", "XDG_CONFIG_HOME",
                  "XDG_CACHE_HOME", "GOENV", "GOWORK", "GOROOT", "GOPATH", "GOBIN",
                  "GOEXPERIMENT", "GODEBUG", "GOCOVERDIR", "GOTMPDIR", "GOOS", "GOARCH",
                  "GOINSECURE", "GONOPROXY", "GONOSUMDB", "GOPRIVATE", "GOVCS", "GOAUTH",
                  "GOTELEMETRY", "GOTELEMETRYDIR", "CC", "CXX", "CGO_CFLAGS", "CGO_CPPFLAGS",
                  "CGO_CXXFLAGS", "CGO_LDFLAGS", "PKG_CONFIG")


def load_go_report(path):
    """``repogym_go_report.py`` (the reader of a Go run's events, the one repogym's Go
    toolchain reads with) as a module."""
    return load_reader(path, "repogym_go_report")


def load_reader(path, name):
    """A reader of runs (a file of ``repogym/toolchains/plugins``) as the module ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def go_split_id(test):
    """(folder, top-level test, full name) of a test id ``<file>::<Test>[/<sub>...]``
    (``repogym.toolchains.go.split_id``)."""
    path, _, name = test.partition("::")
    return str(PurePosixPath(path).parent), name.split("/", 1)[0], name


def go_id_of(declared, folder, name):
    """``<file>::<name>``: the file declaring ``name``'s top-level test in ``folder``
    (``repogym.toolchains.go.id_of``)."""
    path = declared.get((folder, name.split("/", 1)[0]))
    if path is None:  # a test the files do not show (generated, or a method value)
        path = f"{folder}/_test.go" if folder != "." else "_test.go"
    return f"{path}::{name}"


def go_by_file(select, declared):
    """``select`` with each test file named alone (no ``::``) replaced by its top-level
    tests; a file that declares none stays (its folder then runs whole)
    (``repogym.toolchains.go.by_file``)."""
    out = []
    for item in select:
        if "::" in item:
            out.append(item)
            continue
        tests = sorted(f"{path}::{name}" for (_, name), path in declared.items()
                       if path == item)
        out += tests or [item]
    return list(dict.fromkeys(out))


def go_by_folder(tests):
    out = {}
    for test in tests:
        out.setdefault(go_split_id(test)[0], []).append(test)
    return out


def _go_alternation(names):
    return "^(" + "|".join(re.escape(n) for n in sorted(names)) + ")$"


def go_selection(select, exclude, limits, canary, minimum):
    """``(folders, -test.run patterns, -test.skip patterns, -test.timeout seconds, the
    default one)`` of a run of ``select`` after ``exclude`` ran (per folder;
    ``repogym.toolchains.go.plan``'s rules: a bare file's folder runs whole, the canary
    runs beside the selected tests); ``limits``: the spec's ``time_limits`` with the run's
    limit as ``run``."""
    run_names, skip_names, whole = {}, {}, set()
    for test in select:
        folder, top, _ = go_split_id(test)
        if top:
            run_names.setdefault(folder, set()).add(top)
        else:
            whole.add(folder)
    for test in exclude:
        folder, top, name = go_split_id(test)
        if name == top:
            skip_names.setdefault(folder, set()).add(top)
    dirs = sorted(set(run_names) | whole)
    for folder in whole:
        run_names.pop(folder, None)
    default = float(limits["run"])
    timeouts = {}
    if limits.get("default") is not None:
        tests = limits.get("tests") or {}
        for test in select:
            folder = go_split_id(test)[0]
            timeouts[folder] = timeouts.get(folder, 0.0) + tests.get(test, limits["default"])
        timeouts = {k: min(default, max(minimum, v + limits.get("grace", 1.0)))
                    for k, v in timeouts.items()}
    for names in run_names.values():
        names.add(canary)
    return (dirs, {k: _go_alternation(v) for k, v in run_names.items()},
            {k: _go_alternation(v) for k, v in skip_names.items()}, timeouts,
            max(minimum, default))


def _go_entries(values):
    """A ``declare -A`` array's entries (``[key]=value`` words, by key)."""
    return " ".join(f"[{shlex.quote(k)}]={shlex.quote(v)}" for k, v in sorted(values.items()))


def fill(template, nonce, values):
    """``template`` with its placeholders filled in, in one pass: ``@RG_NONCE:<n>@`` the
    nonce's first ``n`` characters, the others from ``values``."""
    def slot(m):
        if m.group(1) is not None and m.group(0).startswith("@RG_NONCE:"):
            return nonce[:int(m.group(1))]
        if m.group(0) == GO_NONCE:
            return nonce
        if m.group(0) not in values:
            raise GraderError(f"the plan has a placeholder this grader cannot fill: "
                              f"{m.group(0)}")
        return values[m.group(0)]

    return GO_SLOT.sub(slot, template)


go_fill = fill  # the Go plan's placeholders are the shared ones


def go_script(plan, scratch, nonce, selection):
    """The plan's run script for one run in ``scratch`` (a shell-safe path) with
    ``nonce``; ``selection``: :func:`go_selection`'s."""
    if not GO_SHELL_SAFE.fullmatch(scratch) or not re.fullmatch(r"[0-9a-f]+", nonce):
        raise GraderError(f"not a path the Go run script can take as it is: {scratch}")
    dirs, run, skip, timeouts, default = selection
    return go_fill(plan["script"], nonce, {
        GO_SCRATCH: scratch, GO_PACKAGES: " ".join(f"./{d}" if d != "." else "." for d in dirs),
        GO_RUN: _go_entries(run), GO_SKIP: _go_entries(skip),
        GO_TIMEOUTS: _go_entries({k: f"{v:.0f}s" for k, v in timeouts.items()}),
        GO_DEFAULT_TIMEOUT: f"{default:.0f}"})


def go_declared(repo, pattern):
    """(folder, top-level test) -> the ``_test.go`` file declaring it, in the work tree now
    (``GoToolchain._declared``: the files git lists there, tracked or not ignored, in
    order; ``pattern``: the plan's ``test_functions``)."""
    env = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "LANG": "C.UTF-8",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_DIR": os.path.join(repo, ".git"),
           "GIT_WORK_TREE": repo}
    proc = subprocess.run(GIT + ["ls-files", "-z", "-co", "--exclude-standard", "*_test.go"],
                          cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise GraderError(f"cannot list the test files: {proc.stderr.decode(errors='replace')}")
    listed = proc.stdout.decode("utf-8", errors="replace").split("\0")
    functions = re.compile(pattern, re.M)
    out = {}
    for path in sorted(p for p in listed if p.endswith("_test.go")):
        text = _read_bytes(os.path.join(repo, path)).decode("utf-8", errors="replace")
        folder = str(PurePosixPath(path).parent)
        for name in functions.findall(text):
            out.setdefault((folder, name), path)
    return out


class GoRunner:
    """Runs listed Go tests as the test user, as the spec's plan says, one fresh part at a
    time (``GoToolchain.run_tests`` with ``check_runner``: the canary planted); ``reader``:
    the loaded ``repogym_go_report.py``."""

    def __init__(self, spec, user, reader):
        self.spec, self.plan, self.user, self.reader = spec, spec["go"], user, reader
        self.seen = set()  # tests earlier parts reported (skipped by later ones)

    def part(self, todo, timeout):
        """One run of ``todo`` (fresh scratch, nonce and canary) within ``timeout`` seconds;
        its checked report."""
        repo = self.spec["repo_dir"]
        declared = go_declared(repo, self.plan["test_functions"])
        select = go_by_file(todo, declared)
        nonce = secrets.token_hex(16)
        canary = go_fill(self.plan["canary"], nonce, {})
        limits = dict(self.spec["time_limits"], run=run_budget(self.spec))
        selection = go_selection(select, sorted(self.seen), limits, canary,
                                 float(self.plan["min_binary_timeout"]))
        scratch = tempfile.mkdtemp(prefix="rg-", dir=SCRATCH_ROOT)
        try:
            for path in self.plan["fresh"]:  # emptied as a reset empties them
                _remove_tree(path)
            cmd, env, run_dir = self._place(scratch, nonce, selection)
            code, duration, timed_out = execute(cmd, env, repo, self.user, timeout)
            values = {GO_SCRATCH: run_dir}
            raw = _read_bytes(go_fill(self.plan["report"], nonce, values))
            report = raw.decode("utf-8", errors="replace")
            logs = {pkg: _read_bytes(go_fill(self.plan["build_log"], nonce, dict(
                values, **{GO_INDEX: str(index)}))).decode("utf-8", errors="replace")
                for pkg, index in self.reader.failed_builds(report, nonce).items()}
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        parsed = self.reader.read_events(
            report, nonce=nonce, build_logs=logs, expected=go_by_folder(select), canary=canary,
            test_id=lambda folder, name: go_id_of(declared, folder, name))
        wanted = set(select)
        tests = {t: {"outcome": r["outcome"], "timed_out": r["timed_out"],
                     "message": r["message"]}
                 for t, r in parsed["results"].items()
                 if t in wanted or r["outcome"] != "skipped"}
        self.seen.update(tests)
        return {"tests": tests, "finished": parsed["finished"], "problems": parsed["problems"],
                "timed_out": bool(timed_out), "died_in": parsed["died_in"], "culprits": [],
                "duration": duration}

    def _place(self, scratch, nonce, selection):
        """The run's script and folders in ``scratch``; ``(command, environment, the run's
        scratch folder)``."""
        user = self.user
        run_dir = os.path.join(scratch, "run")
        home, tmp = os.path.join(scratch, "home"), os.path.join(scratch, "tmp")
        os.mkdir(home)
        os.mkdir(tmp)
        script = os.path.join(scratch, f"run-{secrets.token_hex(8)}.sh")
        _write(script, go_script(self.plan, run_dir, nonce, selection))
        if os.geteuid() == 0:
            subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", scratch],
                           check=True)
        command = go_fill(self.plan["command"], nonce, {GO_SCRIPT: script})
        env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV + GO_DROPPED_ENV}
        env.update({"HOME": home, "TMPDIR": tmp, "USER": user.pw_name, "LOGNAME": user.pw_name})
        return ["bash", "-c", command], env, run_dir


# -- Rust: the spec's plan (repogym.toolchains.rust and its export module) ----------------------

RUST_REPORT_FILE = "repogym_rust_report.py"  # repogym.toolchains.plugins.repogym_rust_report
# placeholders of the plan (repogym.toolchains.rust.export; a parity test keeps them equal)
RS_SCRATCH, RS_PAYLOAD, RS_SCRIPT = "@RG_SCRATCH@", "@RG_PAYLOAD@", "@RG_SCRIPT@"
# what would change how bash starts (the runner drops cargo's and rustc's own settings)
RUST_DROPPED_ENV = ("BASH_ENV", "ENV", "PWD", "OLDPWD", "TMPDIR", "XDG_CONFIG_HOME",
                    "XDG_CACHE_HOME")
RUST_CLEANUP_TIMEOUT = 60.0


def load_rust_report(path):
    """``repogym_rust_report.py`` (the reader of a Rust run's report, the one repogym's
    Rust toolchain reads with) as a module."""
    return load_reader(path, "repogym_rust_report")


def rust_program(plan):
    """The plan's runner program (the scanner and the runner: standard library only,
    without the call that starts a run) as a module: its ``file_of`` names a test's file,
    its ``test_lines`` the test code of a source file."""
    script = plan["script"]
    head = script[:script.index(RS_PAYLOAD)]
    head = head[:head.rindex("\n")]  # the program, without the line that calls main()
    module = type(sys)("repogym_rust_program")
    # as the runner's loader runs it: without this file's ``from __future__`` flags
    exec(compile(head, "repogym-rust-program", "exec", dont_inherit=True),  # noqa: S102
         module.__dict__)
    for name in ("file_of", "test_lines"):
        if not callable(getattr(module, name, None)):
            raise GraderError(f"the Rust plan's program has no {name}()")
    return module


def rust_payload(plan, nonce, scratch, select, exclude, limits, budget, canary):
    """The runner's plan for one run (``repogym.toolchains.rust.plan`` with a canary, no
    fail-fast; ``limits``: the spec's ``time_limits``)."""
    return {
        "nonce": nonce, "scratch": scratch,
        "report": fill(plan["report"], nonce, {RS_SCRATCH: scratch}), "budget": budget,
        "select": list(dict.fromkeys(select)), "exclude": list(dict.fromkeys(exclude)),
        "collect": sorted({t.partition("::")[0] for t in select}),
        "limits": {"tests": dict(limits.get("tests") or {}), "default": limits.get("default"),
                   "grace": limits["grace"], "run": min(float(limits["run"]), budget)},
        "canary": True, "canary_name": canary, "failfast": False, **plan["payload"]}


def rust_script(plan, payload):
    """The runner's script for one run: the plan's program called with ``payload``
    (``RustRun.script``'s form); its scratch folder a path the shell takes as it is (the
    plan's ``cleanup`` names it unquoted)."""
    if not GO_SHELL_SAFE.fullmatch(payload["scratch"]):
        raise GraderError(f"not a path the Rust run's cleanup can take: {payload['scratch']}")
    return plan["script"].replace(RS_PAYLOAD, json.dumps(json.dumps(payload)), 1)


class RustRunner:
    """Runs listed Rust tests as the test user, as the spec's plan says, one fresh part at
    a time (``RustToolchain.run_tests`` with ``check_runner``: the canary planted);
    ``reader``: the loaded ``repogym_rust_report.py``, ``program``: :func:`rust_program`'s."""

    def __init__(self, spec, user, reader, program):
        self.spec, self.plan, self.user = spec, spec["rust"], user
        self.reader, self.program = reader, program
        self.seen = set()  # tests earlier parts reported (excluded from later ones)

    def part(self, todo, timeout):
        """One run of ``todo`` (fresh scratch, nonce and canary) within ``timeout`` seconds;
        its checked report."""
        nonce = secrets.token_hex(16)
        canary = fill(self.plan["canary"], nonce, {})
        scratch = tempfile.mkdtemp(prefix="rg-", dir=SCRATCH_ROOT)
        try:
            for path in self.plan["fresh"]:  # emptied as a reset empties them
                _remove_tree(path)
            run_dir = os.path.join(scratch, "run")
            payload = rust_payload(self.plan, nonce, run_dir, todo, sorted(self.seen),
                                   self.spec["time_limits"], timeout, canary)
            cmd, env = self._place(scratch, payload)
            repo = self.spec["repo_dir"]
            _, duration, timed_out = execute(cmd, env, repo, self.user, timeout)
            report = _read_bytes(payload["report"]).decode("utf-8", errors="replace")
            cleanup = fill(self.plan["cleanup"], nonce, {RS_SCRATCH: run_dir})
            execute(["bash", "-c", cleanup], env, repo, self.user, RUST_CLEANUP_TIMEOUT)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        parsed = self.reader.read_report(report, nonce=nonce, file_of=self.program.file_of,
                                         expected=tuple(todo), canary=canary)
        wanted = set(todo)
        tests = {t: {"outcome": r["outcome"], "timed_out": r["timed_out"],
                     "message": r["message"]}
                 for t, r in parsed["results"].items()
                 if t in wanted or t.split("::", 1)[0] in wanted or r["outcome"] != "skipped"}
        self.seen.update(tests)
        return {"tests": tests, "finished": parsed["finished"], "problems": parsed["problems"],
                "timed_out": bool(timed_out), "died_in": parsed["died_in"], "culprits": [],
                "duration": duration}

    def _place(self, scratch, payload):
        """The run's script and folders in ``scratch``; ``(command, environment)``."""
        user = self.user
        home, tmp = os.path.join(scratch, "home"), os.path.join(scratch, "tmp")
        os.mkdir(home)
        os.mkdir(tmp)
        script = os.path.join(scratch, f"run-{secrets.token_hex(8)}.py")
        _write(script, rust_script(self.plan, payload))
        if os.geteuid() == 0:
            subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", scratch],
                           check=True)
        command = fill(self.plan["command"], payload["nonce"], {RS_SCRIPT: script})
        env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV + RUST_DROPPED_ENV}
        env.update({"HOME": home, "TMPDIR": tmp, "USER": user.pw_name, "LOGNAME": user.pw_name})
        return ["bash", "-c", command], env


# -- Java: repogym_maven.py (repogym.toolchains.java's run) and the spec's plan -----------------

MAVEN_FILE = "repogym_maven.py"  # repogym.toolchains.plugins.repogym_maven
# what would change how bash, Maven or the JVMs start (the script sets MAVEN_OPTS itself)
JAVA_DROPPED_ENV = ("BASH_ENV", "ENV", "PWD", "OLDPWD", "TMPDIR", "MAVEN_OPTS", "MAVEN_ARGS",
                    "MAVEN_CONFIG", "M2_HOME", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
                    "JDK_JAVA_OPTIONS", "CLASSPATH")


class JavaLimits:
    """The spec's ``time_limits`` as ``repogym_maven.plan`` takes them (the run's limit:
    ``run``)."""

    def __init__(self, limits, run):
        self.tests = dict(limits.get("tests") or {})
        self.default = limits.get("default")
        self.grace = float(limits["grace"])
        self.run = float(run)


def java_listing(repo):
    """The work tree's Java sources and POMs, tracked or not ignored
    (``JavaToolchain._listing``)."""
    env = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "LANG": "C.UTF-8",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_DIR": os.path.join(repo, ".git"),
           "GIT_WORK_TREE": repo}
    proc = subprocess.run(GIT + ["ls-files", "-z", "-co", "--exclude-standard", "--",
                                 "*.java", "*pom.xml"], cwd=repo, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise GraderError(f"cannot list the sources: {proc.stderr.decode(errors='replace')}")
    paths = [p for p in proc.stdout.decode("utf-8", errors="replace").split("\0") if p]
    return ({p for p in paths if p.endswith(".java")},
            {p for p in paths if PurePosixPath(p).name == "pom.xml"})


def java_packages(maven, repo, paths):
    """The package of each file (its folders, or, outside ``src/test/java``, its
    ``package`` line: ``JavaToolchain._packages``)."""
    out = {}
    for path in paths:
        found = maven.package_of(path)
        if not found and f"/{maven.TEST_ROOT}/" not in f"/{path}":
            text = _read_bytes(os.path.join(repo, path)).decode("utf-8", errors="replace")
            found = maven.package_of(path, text or None)
        out[path] = found
    return out


class JavaRunner:
    """Runs listed Java tests as the test user, one fresh part at a time, with the Java
    toolchain's own plan, script and reading (``JavaToolchain.run_tests`` with
    ``check_runner``: the canary planted); ``maven``: the loaded ``repogym_maven.py``."""

    def __init__(self, spec, user, maven):
        self.spec, self.plan, self.user, self.maven = spec, spec["java"], user, maven
        self.seen = set()  # tests earlier parts reported (excluded from later ones)

    def part(self, todo, timeout):
        """One run of ``todo`` (fresh scratch, nonce and canary) within ``timeout`` seconds;
        its checked report."""
        maven, repo = self.maven, self.spec["repo_dir"]
        sources, poms = java_listing(repo)
        exclude = sorted(self.seen)
        packages = java_packages(maven, repo, {maven.split_id(t)[0] for t in [*todo, *exclude]})
        scratch = tempfile.mkdtemp(prefix="rg-", dir=SCRATCH_ROOT)
        try:
            for path in self.plan["fresh"]:
                _remove_tree(path)
            run = maven.plan(todo, exclude, JavaLimits(self.spec["time_limits"],
                                                       run_budget(self.spec)),
                             nonce=secrets.token_hex(16), scratch=os.path.join(scratch, "run"),
                             poms=poms, packages=packages, canary=True)
            cmd, env = self._place(scratch, run)
            code, duration, timed_out = execute(cmd, env, repo, self.user, timeout)
            execute(["bash", "-c", run.collect_command()], env, repo, self.user,
                    float(self.plan["collect_timeout"]))
            events = _read_bytes(run.events).decode("utf-8", errors="replace")
            bundle = _read_bytes(run.bundle)
            log = maven.read_log(events, run.nonce)
            dumps = {name: _read_bytes(os.path.join(run.scratch, os.path.basename(name)))
                     .decode("utf-8", errors="replace")
                     for m in log.modules.values() for name, _ in m.killed}
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        expected = [t for t in todo if t not in set(exclude)]
        parsed = maven.parse_run(
            events, bundle, nonce=run.nonce, namer=maven.Namer(sources), dumps=dumps,
            exit_code=-9 if timed_out else code, expected=expected,
            module_of={f: maven.module_of(f, poms)
                       for f in {maven.split_id(t)[0] for t in expected}})
        wanted = set(todo)
        tests = {t: {"outcome": r["outcome"], "timed_out": r["timed_out"],
                     "message": r["message"]}
                 for t, r in parsed["results"].items()
                 if t in wanted or r["outcome"] != "skipped"}
        self.seen.update(tests)
        return {"tests": tests, "finished": parsed["finished"], "problems": parsed["problems"],
                "timed_out": bool(timed_out), "died_in": parsed["died_in"], "culprits": [],
                "duration": duration}

    def _place(self, scratch, run):
        """The run's script and folders in ``scratch``; ``(command, environment)``."""
        user = self.user
        home, tmp = os.path.join(scratch, "home"), os.path.join(scratch, "tmp")
        os.mkdir(home)
        os.mkdir(tmp)
        script = os.path.join(scratch, f"run-{secrets.token_hex(8)}.sh")
        _write(script, run.script())
        if os.geteuid() == 0:
            subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", scratch],
                           check=True)
        env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV + JAVA_DROPPED_ENV}
        env.update({"HOME": home, "TMPDIR": tmp, "USER": user.pw_name, "LOGNAME": user.pw_name})
        return ["bash", "-c", run.command(script)], env


# -- the whole grade -----------------------------------------------------------------------

def _write(path, text):
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def candidate_patch(tree, patch_file, scratch):
    """The candidate's diff as a file in ``scratch``: ``patch_file``'s bytes, or the
    working tree's changes."""
    if patch_file is None:
        data = tree.working_diff()
    else:
        with open(patch_file, "rb") as fh:
            data = fh.read()
    if data and not data.endswith(b"\n"):
        data += b"\n"
    path = os.path.join(scratch, "candidate.diff")
    with open(path, "wb") as fh:
        fh.write(data)
    return path, bool(data.strip())


def test_code_changed(tree, path, test_lines):
    """Whether the test code of ``path`` (the lines ``test_lines`` gives, stripped, in
    order) differs from the broken commit's (``repogym.grading._test_code_changed``)."""
    shown = tree.git("cat-file", "-p", f"{tree.commit}:{path}", check=False)
    before = shown.stdout.decode("utf-8", errors="replace") if shown.returncode == 0 else ""
    full = os.path.join(tree.repo, path)
    if not os.path.isfile(full):
        return shown.returncode == 0
    now = _read_bytes(full).decode("utf-8", errors="replace")
    return _test_code(test_lines, before) != _test_code(test_lines, now)


def _test_code(test_lines, text):
    lines = text.splitlines()
    return [line.strip() for start, end in test_lines(text) for line in lines[start - 1:end]]


def apply_task_patch(tree, text, scratch, fallbacks, named=(), guarded=()):
    """Apply the task's ``test_patch``; False when it does not apply because the
    candidate's patch (naming ``named``) changed a ``guarded`` source file it adds tests
    to (``grade_in``: the patch scores 0 as one that does not apply).

    Raises:
        GraderError: the test patch does not apply otherwise (the environment is broken).
    """
    if not text.strip():
        return True
    path = os.path.join(scratch, "test.diff")
    _write(path, text if text.endswith("\n") else text + "\n")
    if tree.apply(path, fallbacks) is not None:
        return True
    if set(named) & set(guarded) & tree.named(path, []):
        return False
    raise GraderError("the task's test_patch does not apply")


def prepare_tree(spec, patch_file, scratch, test_lines=None):
    """Steps 2-6: the broken state + the candidate's allowed changes + the test patch
    (``test_lines``: the toolchain's reader of a source file's test code, for the spec's
    ``span_guarded`` files).

    Returns ``(problem or None, discarded paths)``; a problem means reward 0.
    """
    tree = Tree(spec, scratch)
    patch, nonempty = candidate_patch(tree, patch_file, scratch)
    tree.restore()
    discarded = []
    guarded = set(spec.get("span_guarded") or ())
    if guarded and test_lines is None:
        raise GraderError("the spec guards test code inside source files, and no reader of "
                          "that code was given")
    named = set()
    if nonempty:
        flags = tree.apply(patch, spec["apply_fallbacks"])
        if flags is None:
            return "patch does not apply", discarded
        named = tree.named(patch, flags)
        for path, added in sorted(tree.touched(patch, flags).items()):
            if is_protected(path, spec, added) or (
                    path in guarded and test_code_changed(tree, path, test_lines)):
                tree.reset_path(path)
                discarded.append(path)
    if not apply_task_patch(tree, spec["test_patch"], scratch, spec["apply_fallbacks"],
                            named, guarded):
        return "patch does not apply", discarded
    return None, discarded


def grade_container(spec, plugin_path, launcher_path, patch_file=None, partial=False,
                    reader=None):
    """Grade in this container; a result dict (see the module docstring). ``plugin_path``
    and ``launcher_path``: Python tasks' (None for others); ``reader``: a Go, Rust or Java
    task's module of its runs (``repogym_go_report``, ``repogym_rust_report``,
    ``repogym_maven``: :func:`load_reader`)."""
    user = pwd.getpwnam(spec["test_user"])
    kill_strays(user.pw_uid)
    wanted = set(spec["fail_to_pass"]) | set(spec["pass_to_pass"])
    program = rust_program(spec["rust"]) if language_of(spec) == "rust" else None
    scratch = tempfile.mkdtemp(prefix="rg-grade-", dir=SCRATCH_ROOT)
    try:
        problem, discarded = prepare_tree(spec, patch_file, scratch,
                                          program.test_lines if program else None)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    result = {"instance_id": spec["instance_id"], "reward": 0.0, "resolved": False,
              "trusted": False, "outcomes": {}, "problems": [], "discarded": discarded}
    if problem is not None:
        result["problems"] = [problem]
        return result
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", spec["repo_dir"]],
                       check=True)
    if language_of(spec) == "javascript":
        runner = JsRunner(spec, user, exitfirst=not partial)
    elif language_of(spec) in READERS:
        if reader is None:
            raise GraderError(f"a {PLAN_NAMES[language_of(spec)]} task is graded with the "
                              f"module of its runs ({READERS[language_of(spec)][0]})")
        if language_of(spec) == "go":
            runner = GoRunner(spec, user, reader)
        elif language_of(spec) == "rust":
            runner = RustRunner(spec, user, reader, program)
        else:
            runner = JavaRunner(spec, user, reader)
    else:
        runner = Runner(spec, plugin_path, launcher_path, user, exitfirst=not partial)
    report = run_to_end(runner.part, wanted, run_budget(spec), partial)
    result.update(grade(report, wanted, partial))
    return result


def _reward_text(reward):
    return "1" if reward == 1.0 else ("0" if reward == 0.0 else f"{reward:.6f}")


def emit(result, out_dir, language="python"):
    """Print the per-test lines and the reward; write ``reward.txt`` and ``result.json``.

    Python, JavaScript and Java: ``[PASSED] <id>`` or ``[FAILED] <id>`` (ids hold spaces:
    SWE-bench's ``parse_log_jest_json`` reads them whole, its pytest parser would cut them);
    Go: ``--- PASS: <id> (0.00s)`` or ``--- FAIL: <id> (0.00s)`` (``go test -v``'s
    form, which SWE-bench's ``parse_log_gotest`` reads); Rust: ``test <id> ... ok`` or
    ``test <id> ... FAILED`` (libtest's, which ``parse_log_cargo`` reads); anything but a
    trusted pass is a failure."""
    lines = [">>>>> Start Test Output"]
    trusted = result.get("trusted", False)
    for test, outcome in sorted(result["outcomes"].items()):
        passed = trusted and outcome == "passed"
        if language == "go":
            lines.append(f"{'--- PASS:' if passed else '--- FAIL:'} {test} (0.00s)")
        elif language == "rust":
            lines.append(f"test {test} ... {'ok' if passed else 'FAILED'}")
        else:
            lines.append(f"{'[PASSED]' if passed else '[FAILED]'} {test}")
    lines.append(">>>>> End Test Output")
    lines.append(f"REPOGYM_REWARD={_reward_text(result['reward'])}")
    lines.append("REPOGYM_RESULT=" + json.dumps(result, sort_keys=True))
    print("\n".join(lines), flush=True)
    if out_dir:
        _write(os.path.join(out_dir, "result.json"), json.dumps(result, indent=2) + "\n")
        _write(os.path.join(out_dir, "reward.txt"), _reward_text(result["reward"]) + "\n")


def _clear_out(out_dir):
    if not out_dir:
        return
    os.makedirs(out_dir, exist_ok=True)
    for name in ("reward.txt", "reward.json", "result.json"):
        path = os.path.join(out_dir, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)


def _args(argv):
    ap = argparse.ArgumentParser(description="Grade a repogym task in this container.")
    ap.add_argument("--spec", required=True, help="the task's grading spec (JSON)")
    ap.add_argument("--plugin", help="repogym's pytest report plugin (Python tasks)")
    ap.add_argument("--launcher", help="repogym's pytest launcher (default: "
                                       f"{LAUNCHER_FILE} beside --plugin)")
    ap.add_argument("--go-report", help="repogym's reader of Go runs (Go tasks; default: "
                                        f"{GO_REPORT_FILE} beside this grader)")
    ap.add_argument("--rust-report", help="repogym's reader of Rust runs (Rust tasks; "
                                          f"default: {RUST_REPORT_FILE} beside this grader)")
    ap.add_argument("--maven", help="repogym's Maven run: plan, script, reading (Java tasks; "
                                    f"default: {MAVEN_FILE} beside this grader)")
    ap.add_argument("--patch", help="the candidate's diff (default: the working tree's "
                                    "changes to the repository)")
    ap.add_argument("--out", help="directory for reward.txt and result.json")
    ap.add_argument("--partial", action="store_true", help="reward = share of tests passing")
    args = ap.parse_args(argv)
    if args.launcher is None and args.plugin is not None:
        args.launcher = os.path.join(os.path.dirname(args.plugin), LAUNCHER_FILE)
    return args


READERS = {"go": (GO_REPORT_FILE, "--go-report"),  # language -> its runs' module
           "rust": (RUST_REPORT_FILE, "--rust-report"), "java": (MAVEN_FILE, "--maven")}


def _reader(spec, path):
    """A Go, Rust or Java task's module of its runs (None for other tasks); ValueError
    when it cannot be loaded."""
    language = language_of(spec)
    if language not in READERS:
        return None
    name, option = READERS[language]
    path = path or os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    if not os.path.isfile(path):
        raise ValueError(f"a {PLAN_NAMES[language]} task needs {option} (repogym's reader "
                         f"of its runs): no file at {path}")
    try:
        return load_reader(path, name[:-3])
    except (ImportError, SyntaxError) as exc:
        raise ValueError(f"cannot load {path}: {exc}") from exc


def main(argv=None):
    args = _args(argv)
    _clear_out(args.out)
    failed = {"reward": 0.0, "resolved": False, "trusted": False, "outcomes": {},
              "discarded": []}
    language = "python"
    try:
        spec = load_spec(args.spec)
        language = language_of(spec)
        if language == "python" and args.plugin is None:
            raise ValueError("a Python task needs --plugin (repogym's pytest report plugin)")
        for what, path in (("patch", args.patch), ("plugin", args.plugin),
                           ("launcher", args.launcher)):
            if path is not None and not os.path.isfile(path):
                raise ValueError(f"no {what} file at {path}")
        reader = _reader(spec, {"go": args.go_report, "rust": args.rust_report,
                                "java": args.maven}.get(language))
    except (OSError, ValueError, KeyError) as exc:
        emit({**failed, "instance_id": "", "problems": [f"bad input: {exc}"]}, args.out,
             language)
        return EXIT_USAGE
    try:
        result = grade_container(spec, args.plugin, args.launcher, args.patch, args.partial,
                                 reader)
    except (GraderError, OSError, subprocess.SubprocessError, KeyError, TypeError) as exc:
        emit({**failed, "instance_id": spec["instance_id"],
              "problems": [f"environment error: {exc}"]}, args.out, language)
        return EXIT_INFRA
    emit(result, args.out, language)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
