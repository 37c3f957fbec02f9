"""repogym's in-container grader: the rules of :mod:`repogym.datasets.verify`, stdlib only.

Exported tasks (``harbor``'s ``tests/test.sh``, ``swebench``'s ``eval_script``) copy this file
into the task's container and run it with ``python3 -I -S`` (no site-packages, no
``PYTHONPATH``), so nothing the solver planted in the environment is imported. It needs
the stdlib, ``git``, ``timeout`` and (as root) ``setpriv``; pytest runs in the
environment's own Python.

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
   ``/repo`` in place; ``/repo/.git`` is never trusted or used; files the solver's
   ``.gitignore`` ignores and nested repositories are left out, as no patch carries them);
3. ``/repo`` is wiped (all but ``.git``) and checked out again from the anchor, then the
   post-install files are restored: the broken state, whatever the solver did to it;
4. the candidate's diff is applied (``git apply`` with repogym's fallbacks); a diff that
   does not apply scores 0;
5. every file it touched (named in the diff, or shown by ``git status``) that is a test
   file, runner configuration, interpreter start-up hook or listed in ``protected`` is
   restored from the broken commit (deleted if new);
6. the task's ``test_patch`` is applied;
7. FAIL_TO_PASS + PASS_TO_PASS run as the test user under pytest with repogym's report
   plugin, copied in under a random module name, with a fresh report path and nonce;
8. reward 1 only when the report is complete, consistent with the exit code, and every
   listed test passed (``--partial``: the share that passed, 0 when untrusted).

Outputs (``--out DIR``): ``reward.txt`` (``1``/``0``, or a float with ``--partial``) and
``result.json``; any ``reward.txt``/``reward.json`` already there is deleted first. On
stdout: one ``<STATUS> <nodeid>`` line per listed test between SWE-bench's
``>>>>> Start Test Output`` / ``>>>>> End Test Output`` markers, then
``REPOGYM_REWARD=<reward>`` and ``REPOGYM_RESULT=<json>``. pytest's own output is never
echoed: code under test cannot print a verdict.

Exit status: 0 graded (whatever the reward), 2 bad arguments or spec, 3 the environment
is broken (e.g. the task's own test patch does not apply). A reward of 0 is written in
every case.

The spec (``--spec FILE``, JSON) holds ``instance_id``, ``fail_to_pass``, ``pass_to_pass``,
``test_patch``, ``protected`` (exact paths), ``runner_config``, ``startup_hooks``,
``test_dir_names``, ``apply_fallbacks``, ``repo_dir``, ``anchor``, ``test_user`` and
``timeout``: see :class:`repogym.datasets.exports.grading.ContainerSpec`, which writes it.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import secrets
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
EXIT_OK, EXIT_USAGE, EXIT_INFRA = 0, 2, 3


class GraderError(Exception):
    """The environment cannot be graded (not a verdict on the candidate)."""


# -- the spec -------------------------------------------------------------------------------

REQUIRED = ("instance_id", "fail_to_pass", "pass_to_pass", "test_patch", "protected",
            "runner_config", "startup_hooks", "test_dir_names", "apply_fallbacks",
            "repo_dir", "anchor", "test_user", "timeout")


def load_spec(path):
    """The spec as a dict; ValueError naming the first problem."""
    with open(path, encoding="utf-8") as fh:
        spec = json.load(fh)
    missing = [k for k in REQUIRED if k not in spec]
    if missing:
        raise ValueError(f"spec {path} lacks {', '.join(missing)}")
    if not spec["fail_to_pass"]:
        raise ValueError(f"spec {path} has no FAIL_TO_PASS test")
    return spec


def is_test_file(path, test_dir_names):
    """The Python toolchain's rule: conftest.py, test_*.py, *_test.py, or under a test dir."""
    p = PurePosixPath(path)
    if p.name == "conftest.py" or p.name.startswith("test_") or p.stem.endswith("_test"):
        return True
    return bool(set(test_dir_names).intersection(p.parts[:-1]))


def is_protected(path, spec):
    """Whether a candidate's change to ``path`` is thrown away (verify's rules)."""
    return (path in set(spec["protected"]) or is_test_file(path, spec["test_dir_names"])
            or path.endswith(tuple(spec["runner_config"]))
            or path.endswith(tuple(spec["startup_hooks"])))


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
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": scratch, "LANG": "C.UTF-8",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_DIR": self.git_dir, "GIT_WORK_TREE": self.repo,
            "GIT_INDEX_FILE": os.path.join(scratch, "index"),
            "GIT_OBJECT_DIRECTORY": objects,
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": os.path.join(self.git_dir, "objects"),
            "GIT_TERMINAL_PROMPT": "0",
        }

    def git(self, *args, check=True, data=None):
        proc = subprocess.run(GIT + list(args), cwd=self.repo, env=self.env, input=data,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
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
        """Wipe the working tree (all but ``.git``) and check the broken state out again."""
        subprocess.run(["chmod", "-R", "u+rwX", "--", self.repo], stderr=subprocess.DEVNULL)
        for name in os.listdir(self.repo):
            if name != ".git":
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
        """Paths the patch names (both sides of renames) plus what ``git status`` shows."""
        paths = set()
        out = self.git("apply", "--numstat", "-z", *flags, patch_path, check=False).stdout
        fields = out.decode("utf-8", errors="surrogateescape").split("\0")
        i = 0
        while i < len(fields):
            entry = fields[i]
            i += 1
            parts = entry.split("\t")
            if len(parts) == 3 and parts[2]:
                paths.add(parts[2])
            elif len(parts) == 3:  # a rename: the two paths follow
                paths.update(p for p in fields[i:i + 2] if p)
                i += 2
        status = self.git("status", "--porcelain=v1", "-z", "--untracked-files=all",
                          "--ignored=no", "--no-renames").stdout
        for entry in status.decode("utf-8", errors="surrogateescape").split("\0"):
            if len(entry) > 3:
                paths.add(entry[3:])
        return sorted(paths)

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


# -- the report (a port of repogym.toolchains.python.parse_report) ----------------------------

class _Acc:
    """Folds the setup/call/teardown reports of one test into one outcome."""

    def __init__(self):
        self.outcome = None

    def add(self, ev):
        when, out, xf = ev.get("when"), ev.get("outcome"), bool(ev.get("wasxfail"))
        if out == "failed":
            if when == "call":
                self.outcome = "failed"
            elif self.outcome != "failed":
                self.outcome = "error"
        elif out == "skipped" and when in ("setup", "call") and self.outcome is None:
            self.outcome = "xfail" if xf else "skipped"
        elif out == "passed" and when == "call" and self.outcome is None:
            self.outcome = "xpass" if xf else "passed"


def _events(raw):
    for line in raw.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict):
            yield ev


def parse_report(raw, nonce, exit_code, timed_out):
    """``{"results": {nodeid: outcome}, "finished": bool, "problems": [...]}``."""
    accs, errors, problems, finish = {}, [], [], None
    for ev in _events(raw):
        kind = ev.get("event")
        if kind == "test":
            accs.setdefault(str(ev.get("nodeid")), _Acc()).add(ev)
        elif kind == "collect_error":
            errors.append(str(ev.get("nodeid")))
        elif kind == "tamper":
            problems.append(f"pytest internals were replaced: {ev.get('what')}")
        elif kind == "finish":
            if ev.get("nonce") != nonce:
                problems.append("report finish event carries a foreign nonce")
            elif finish is not None:
                problems.append("report has two finish events")
            else:
                finish = int(ev.get("exitstatus", -1))
    results = {n: (a.outcome or "error") for n, a in accs.items()}
    for nodeid in errors:
        results.setdefault(nodeid, "error")
    problems += _cross_check(results, finish, exit_code, timed_out)
    return {"results": results, "finished": finish is not None, "problems": problems}


def _cross_check(results, finish, exit_code, timed_out):
    if timed_out or finish is None:
        return []
    problems = []
    if finish != exit_code:
        problems.append(f"pytest exit code {exit_code} disagrees with the report's {finish}")
    bad = any(o in ("failed", "error") for o in results.values())
    if exit_code == 0 and bad:
        problems.append("exit code 0 but the report has failures")
    if exit_code == 1 and not bad:
        problems.append("exit code 1 but the report has no failure")
    return problems


def grade(report, wanted, timed_out, partial=False):
    """``(reward, resolved, outcomes, problems)`` of one parsed report over ``wanted``."""
    outcomes = {t: report["results"].get(t) for t in sorted(wanted)}
    passed = sum(o == "passed" for o in outcomes.values())
    problems = list(report["problems"])
    if timed_out:
        problems.append("the test run timed out")
    elif not report["finished"]:
        problems.append("the test run ended without a complete report")
    trusted = report["finished"] and not timed_out and not report["problems"]
    resolved = bool(trusted and wanted and passed == len(wanted))
    if partial:
        reward = passed / len(wanted) if trusted and wanted else 0.0
    else:
        reward = 1.0 if resolved else 0.0
    return reward, resolved, outcomes, problems


# -- running pytest ------------------------------------------------------------------------

def _test_env(scratch, config, home):
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    env.update({"REPOGYM_PLUGIN_CONFIG": config, "PYTHONPATH": scratch,
                "PYTHONDONTWRITEBYTECODE": "1", "HOME": home})
    return env


def run_tests(spec, plugin_path, wanted, user):
    """Run the listed tests as ``user`` with the report plugin; the parsed report and
    whether the run timed out."""
    scratch = tempfile.mkdtemp(prefix="rg-", dir=SCRATCH_ROOT)
    home = os.path.join(scratch, "home")
    os.mkdir(home)
    nonce, module = secrets.token_hex(16), f"rg_{secrets.token_hex(8)}"
    report = os.path.join(scratch, f"r-{secrets.token_hex(8)}.jsonl")
    config = os.path.join(scratch, "config.json")
    shutil.copyfile(plugin_path, os.path.join(scratch, f"{module}.py"))
    with open(config, "w", encoding="utf-8") as fh:
        json.dump({"report": report, "nonce": nonce, "select": sorted(wanted)}, fh)
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", scratch], check=True)
    timeout = float(spec["timeout"])
    cmd = ["timeout", "-s", "KILL", f"{timeout:.3f}", "python", "-m", "pytest", "-p", module,
           "-p", "no:cacheprovider", "--continue-on-collection-errors", "-q", "-rN",
           "--color=no"]
    if os.geteuid() == 0 and user.pw_uid != 0:
        cmd = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}",
               "--init-groups", "--no-new-privs", "--"] + cmd
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=spec["repo_dir"], env=_test_env(scratch, config, home),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
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
    timed_out = hung or (code in (124, 137, -9) and duration >= timeout)
    raw = _read(report)
    shutil.rmtree(scratch, ignore_errors=True)
    return parse_report(raw, nonce, code, timed_out), timed_out


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


def apply_task_patch(tree, text, scratch, fallbacks):
    if not text.strip():
        return
    path = os.path.join(scratch, "test.diff")
    _write(path, text if text.endswith("\n") else text + "\n")
    if tree.apply(path, fallbacks) is None:
        raise GraderError("the task's test_patch does not apply")


def prepare_tree(spec, patch_file, scratch):
    """Steps 2-6: the broken state + the candidate's allowed changes + the test patch.

    Returns ``(problem or None, discarded paths)``; a problem means reward 0.
    """
    tree = Tree(spec, scratch)
    patch, nonempty = candidate_patch(tree, patch_file, scratch)
    tree.restore()
    discarded = []
    if nonempty:
        flags = tree.apply(patch, spec["apply_fallbacks"])
        if flags is None:
            return "patch does not apply", discarded
        for path in tree.touched(patch, flags):
            if is_protected(path, spec):
                tree.reset_path(path)
                discarded.append(path)
    apply_task_patch(tree, spec["test_patch"], scratch, spec["apply_fallbacks"])
    return None, discarded


def grade_container(spec, plugin_path, patch_file=None, partial=False):
    """Grade in this container; a result dict (see the module docstring)."""
    user = pwd.getpwnam(spec["test_user"])
    kill_strays(user.pw_uid)
    wanted = set(spec["fail_to_pass"]) | set(spec["pass_to_pass"])
    scratch = tempfile.mkdtemp(prefix="rg-grade-", dir=SCRATCH_ROOT)
    try:
        problem, discarded = prepare_tree(spec, patch_file, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    result = {"instance_id": spec["instance_id"], "reward": 0.0, "resolved": False,
              "outcomes": {}, "problems": [], "discarded": discarded}
    if problem is not None:
        result["problems"] = [problem]
        return result
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", spec["repo_dir"]],
                       check=True)
    report, timed_out = run_tests(spec, plugin_path, wanted, user)
    reward, resolved, outcomes, problems = grade(report, wanted, timed_out, partial)
    result.update(reward=reward, resolved=resolved, outcomes=outcomes, problems=problems)
    return result


def _reward_text(reward):
    return "1" if reward == 1.0 else ("0" if reward == 0.0 else f"{reward:.6f}")


def emit(result, out_dir):
    """Print the per-test lines and the reward; write ``reward.txt`` and ``result.json``."""
    lines = [">>>>> Start Test Output"]
    trusted = not result["problems"]
    for test, outcome in sorted(result["outcomes"].items()):
        status = outcome.upper() if (trusted and outcome) else "FAILED"
        lines.append(f"{status} {test}")
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
    ap.add_argument("--plugin", required=True, help="repogym's pytest report plugin")
    ap.add_argument("--patch", help="the candidate's diff (default: the working tree's "
                                    "changes to the repository)")
    ap.add_argument("--out", help="directory for reward.txt and result.json")
    ap.add_argument("--partial", action="store_true", help="reward = share of tests passing")
    return ap.parse_args(argv)


def main(argv=None):
    args = _args(argv)
    _clear_out(args.out)
    failed = {"reward": 0.0, "resolved": False, "outcomes": {}, "discarded": []}
    try:
        spec = load_spec(args.spec)
        if args.patch is not None and not os.path.isfile(args.patch):
            raise ValueError(f"no patch file at {args.patch}")
    except (OSError, ValueError, KeyError) as exc:
        emit({**failed, "instance_id": "", "problems": [f"bad input: {exc}"]}, args.out)
        return EXIT_USAGE
    try:
        result = grade_container(spec, args.plugin, args.patch, args.partial)
    except (GraderError, OSError, subprocess.SubprocessError, KeyError) as exc:
        emit({**failed, "instance_id": spec["instance_id"],
              "problems": [f"environment error: {exc}"]}, args.out)
        return EXIT_INFRA
    emit(result, args.out)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
