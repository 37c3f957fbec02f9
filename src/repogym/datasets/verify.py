"""The one grading path: ``verify(task, patch) -> Result``.

Trainers, the ``repogym verify`` command and the judge's anti-gaming probes all grade
through :func:`grade_in`, so what the judge measured is what a policy is rewarded for.

In a sandbox on the task's environment image:

1. reset to the task's ``base_commit`` and apply ``bug_patch``: the broken state;
2. apply the candidate ``patch`` (a patch that does not apply scores 0);
3. discard everything the patch did to test files, to the test runner's configuration
   (``conftest.py`` anywhere, ``pytest.ini``, ``tox.ini``, ``setup.cfg``, ``pyproject.toml``,
   files of the task's test patch) and to interpreter start-up hooks (``sitecustomize.py``,
   ``usercustomize.py``, ``*.pth``): they are restored from the broken state, and files the
   patch added there are deleted. (A fix cannot need new dependencies: the network is off.)
4. apply the task's ``test_patch``;
5. run FAIL_TO_PASS + PASS_TO_PASS through the toolchain's structured report (fresh,
   unguessable report path, nonce, exit code cross-checked); output printed by the code
   under test is never read as results;
6. grade: reward 1 only when the report is complete and consistent and every listed test
   *passed* (missing, skipped, xfail, xpass and error all count as failing). With
   ``partial=True`` the reward is the share of listed tests that passed, and still 0 when
   the report cannot be trusted.

A sandbox that breaks raises :class:`~repogym.errors.SandboxError`: it is not a reward.
"""

from __future__ import annotations

import shlex
from typing import Sequence

from pydantic import BaseModel, ConfigDict

from repogym.config import Settings
from repogym.errors import SandboxError
from repogym.generators.diffs import changed_lines, patch_paths
from repogym.sandboxes.base import Sandbox
from repogym.schemas.records import Outcome, TestRun
from repogym.toolchains.base import Toolchain

RUNNER_CONFIG = ("pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", ".pytest.ini")
# files the interpreter runs before pytest starts, wherever they sit on sys.path
STARTUP_HOOKS = ("sitecustomize.py", "usercustomize.py", ".pth")


class GradingSpec(BaseModel):
    """What grading needs from a task (a dataset row or a judged candidate provides it)."""

    model_config = ConfigDict(frozen=True)

    instance_id: str
    image: str
    base_commit: str
    bug_patch: str
    test_patch: str
    FAIL_TO_PASS: tuple[str, ...]
    PASS_TO_PASS: tuple[str, ...]


class Result(BaseModel):
    """A grade: the reward, every listed test's outcome, and why the reward is what it is."""

    model_config = ConfigDict(frozen=True)

    instance_id: str
    reward: float
    resolved: bool
    outcomes: dict[str, Outcome | None]
    problems: tuple[str, ...] = ()
    discarded: tuple[str, ...] = ()  # test / runner files whose changes were thrown away
    log_tail: str = ""


def _zero(spec: GradingSpec, problem: str, **kw: object) -> Result:
    return Result(instance_id=spec.instance_id, reward=0.0, resolved=False, outcomes={},
                  problems=(problem,), **kw)  # type: ignore[arg-type]


def grade_in(sandbox: Sandbox, toolchain: Toolchain, spec: GradingSpec, patch: str, *,
             timeout: float = 600.0, partial: bool = False, early_stop: bool = False) -> Result:
    """Grade ``patch`` for the task in an open sandbox on the task's environment.

    With ``early_stop`` (binary reward only) FAIL_TO_PASS runs first and a failure there
    ends grading at 0 without running PASS_TO_PASS (outcomes then list only FAIL_TO_PASS).

    Raises:
        SandboxError: the sandbox broke, or the task's own patches do not apply there.
    """
    sandbox.reset(commit=spec.base_commit)
    if not sandbox.apply_patch(spec.bug_patch):
        raise SandboxError(f"{spec.instance_id}: the task's bug_patch does not apply")
    protected = _protected_paths(sandbox, toolchain, spec)
    if not sandbox.apply_patch(patch):
        return _zero(spec, "patch does not apply")
    discarded = _discard_test_changes(sandbox, toolchain, protected, patch_paths(patch))
    if not sandbox.apply_patch(spec.test_patch):
        raise SandboxError(f"{spec.instance_id}: the task's test_patch does not apply")
    wanted = set(spec.FAIL_TO_PASS) | set(spec.PASS_TO_PASS)
    if early_stop and not partial and spec.FAIL_TO_PASS and spec.PASS_TO_PASS:
        first = toolchain.run_tests(sandbox, timeout=timeout, select=sorted(spec.FAIL_TO_PASS))
        if not first.trusted or any(first.outcome(t) is not Outcome.passed
                                    for t in spec.FAIL_TO_PASS):
            return _graded(spec, first, set(spec.FAIL_TO_PASS), discarded, partial=False)
    run = toolchain.run_tests(sandbox, timeout=timeout, select=sorted(wanted))
    return _graded(spec, run, wanted, discarded, partial=partial)


def _graded(spec: GradingSpec, run: TestRun, wanted: set[str], discarded: list[str], *,
            partial: bool) -> Result:
    """The Result of one run over ``wanted`` (reward 1 only if trusted and all passed)."""
    outcomes = {t: run.outcome(t) for t in sorted(wanted)}
    passed = sum(o is Outcome.passed for o in outcomes.values())
    problems = list(run.problems)
    if run.timed_out:
        problems.append("the test run timed out")
    elif not run.finished:
        problems.append("the test run ended without a complete report")
    resolved = run.trusted and passed == len(wanted) and bool(wanted)
    reward = (1.0 if resolved else 0.0) if not partial else (
        passed / len(wanted) if run.trusted and wanted else 0.0)
    return Result(instance_id=spec.instance_id, reward=reward, resolved=resolved,
                  outcomes=outcomes, problems=tuple(problems), discarded=tuple(discarded),
                  log_tail=run.log_tail[-2000:])


def _protected_paths(sandbox: Sandbox, toolchain: Toolchain, spec: GradingSpec) -> set[str]:
    """Files a candidate patch may not change: tests, runner config, the test patch's files."""
    return set(RUNNER_CONFIG) | set(changed_lines(spec.test_patch)) | {
        t.split("::")[0] for t in (*spec.FAIL_TO_PASS, *spec.PASS_TO_PASS)}


def _discard_test_changes(sandbox: Sandbox, toolchain: Toolchain,
                          protected: set[str], named: set[str]) -> list[str]:
    """Restore every protected or test file the patch touched; delete ones it added.

    Touched = what ``git status`` shows plus every path the patch names: a file the patch
    also lists in ``.gitignore`` is invisible to ``git status`` but still loaded by pytest.
    """
    res = sandbox.exec("git status --porcelain=v1 -z --untracked-files=all", timeout=60)
    if not res.ok:
        raise SandboxError(f"git status failed: {res.stderr.strip()[-300:]}")
    touched = _porcelain_paths(res.stdout)
    seen = {path for _, path in touched}
    touched += [("?", path) for path in sorted(named - seen)]
    out = []
    for status, path in touched:
        if (path in protected or toolchain.is_test_file(path)
                or path.endswith(RUNNER_CONFIG) or path.endswith(STARTUP_HOOKS)):
            out.append(path)
            cmd = (f"rm -rf -- {shlex.quote(path)}" if status == "??"
                   else f"git checkout -q HEAD -- {shlex.quote(path)} 2>/dev/null "
                        f"|| rm -f -- {shlex.quote(path)}")
            if not sandbox.exec(cmd, timeout=60).ok:
                raise SandboxError(f"cannot restore {path}")
    return out


def _porcelain_paths(stdout: str) -> list[tuple[str, str]]:
    """(status, path) pairs of ``git status --porcelain -z`` (renames give both paths)."""
    out: list[tuple[str, str]] = []
    entries = stdout.split("\0")
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        status, path = entry[:2], entry[3:]
        out.append((status.strip() or status, path))
        if status[0] in "RC" and i < len(entries):  # the source path follows
            out.append((status, entries[i]))
            i += 1
    return out


def verify(task: object, patch: str, *, provider: str = "docker",
           settings: Settings | None = None, partial: bool = False,
           timeout: float = 600.0) -> Result:
    """Grade ``patch`` (a unified diff against the broken state) for ``task``.

    Args:
        task: a :class:`GradingSpec`, or anything with the dataset's columns (a ``TaskRow``).
        patch: the policy's changes; changes to test files and runner config are discarded.
        provider: the sandbox provider the task's image belongs to.
        partial: reward = share of listed tests passing (default: 1 only if all pass).

    Raises:
        SandboxError: the sandbox could not be opened or broke (not a reward of 0).
    """
    spec = task if isinstance(task, GradingSpec) else spec_of(task)
    from repogym.sandboxes import get_provider
    from repogym.toolchains import PythonToolchain

    prov = get_provider(provider, settings or Settings())
    with prov.open(prov.env_for(spec.image)) as sandbox:
        return grade_in(sandbox, PythonToolchain(), spec, patch, timeout=timeout,
                        partial=partial)


def spec_of(row: object) -> GradingSpec:
    """A GradingSpec from anything with the dataset's columns (a TaskRow, say)."""
    fields = GradingSpec.model_fields
    return GradingSpec(**{name: getattr(row, name) for name in fields})


__all__: Sequence[str] = ("GradingSpec", "Result", "grade_in", "spec_of", "verify")
