"""The one grading path: :func:`grade_in` grades a patch for a task in an open sandbox.

Trainers (through :func:`repogym.datasets.verify.verify`), the ``repogym verify`` command,
the judge and its anti-gaming probes all grade here, so what the judge measured is what a
policy is rewarded for. It sits below the judges and the datasets, which both use it.

In a sandbox on the task's environment image:

1. reset to the task's ``base_commit`` and apply ``bug_patch``: the broken state;
2. apply the candidate ``patch`` (a patch that does not apply scores 0);
3. discard everything the patch did to files the toolchain protects
   (:meth:`~repogym.toolchains.base.Toolchain.is_protected`; Python: test files and
   conftests, every configuration file any pytest version reads, interpreter start-up
   hooks, install metadata, modules at the root that would shadow the standard library or
   the runner), to the files of the task's test patch and listed tests, and to the plugin
   modules the runner loaded at the clean state (``protected_files``): they are restored
   from the broken state, and files the patch added there are deleted. (A fix cannot need
   new dependencies: the network is off.) A listed test's file that is runtime source
   (Rust's unit tests sit in ``#[cfg(test)]`` modules of the code they test) is guarded by
   its test code only (:meth:`~repogym.toolchains.base.Toolchain.test_spans`): a patch
   that changes those lines has the whole file restored.
4. apply the task's ``test_patch`` (when it does not apply because the patch changed the
   lines next to the tests it adds to a span-guarded source file, the patch scores 0 as
   one that does not apply);
5. run FAIL_TO_PASS + PASS_TO_PASS through the toolchain's structured report (fresh
   process, configuration pinned to the committed tree, unguessable report path, nonce,
   exit code cross-checked, the runner's integrity checked, evidence that each test's body
   ran), each test within the time limit the judge derived from the baseline; a test that
   hangs fails at its limit, and a test that kills its run ends grading at 0 (for partial
   credit, the rest run again); output printed by the code under test is never read;
6. grade: reward 1 only when the report is complete and consistent and every listed test
   *passed* (missing, skipped, xfail, xpass, error and timed out all count as failing).
   With ``partial=True`` the reward is the share of listed tests that passed, and still 0
   when the report cannot be trusted.

A sandbox that breaks raises :class:`~repogym.errors.SandboxError`: it is not a reward.
"""

from __future__ import annotations

import shlex
from typing import Collection

from pydantic import BaseModel, ConfigDict

from repogym.errors import SandboxError
from repogym.limits import TimePolicy, policy_for
from repogym.patches import changed_lines, patch_paths
from repogym.sandboxes.base import Sandbox
from repogym.schemas.records import Outcome, TestRun, TimeLimits
from repogym.toolchains.base import Toolchain, toolchain_for
from repogym.toolchains.resume import run_to_end


class GradingSpec(BaseModel):
    """What grading needs from a task (a dataset row or a judged candidate provides it)."""

    model_config = ConfigDict(frozen=True)

    instance_id: str
    image: str
    language: str = "python"  # the toolchain that grades it (the dataset's language column)
    base_commit: str
    bug_patch: str
    test_patch: str
    FAIL_TO_PASS: tuple[str, ...]
    PASS_TO_PASS: tuple[str, ...]
    # how long each listed test and the whole run may take (None: the policy's ceilings)
    time_limits: TimeLimits | None = None
    runner_changes: tuple[str, ...] = ()  # the environment's own changes to the runner
    protected_files: tuple[str, ...] = ()  # runner plugin modules seen at the clean state


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
                  problems=(problem,), **kw)


def grade_in(sandbox: Sandbox, toolchain: Toolchain, spec: GradingSpec, patch: str, *,
             timeout: float = 600.0, partial: bool = False, early_stop: bool = False,
             policy: TimePolicy | None = None) -> Result:
    """Grade ``patch`` for the task in an open sandbox on the task's environment.

    With ``early_stop`` (binary reward only) FAIL_TO_PASS runs first and a failure there
    ends grading at 0 without running PASS_TO_PASS (outcomes then list only FAIL_TO_PASS).
    ``timeout`` caps the run's limit; the task's own limits come from ``spec.time_limits``
    (else ``policy``'s ceilings).

    Raises:
        SandboxError: the sandbox broke, or the task's own patches do not apply there.
    """
    state = _GradedState(sandbox, toolchain, spec, patch)
    if not state.prepare():
        return _zero(spec, "patch does not apply")
    limits = _limits(spec, timeout, policy)
    wanted = set(spec.FAIL_TO_PASS) | set(spec.PASS_TO_PASS)
    if early_stop and not partial and spec.FAIL_TO_PASS and spec.PASS_TO_PASS:
        first = state.run(sorted(spec.FAIL_TO_PASS), limits, partial=False)
        if not first.trusted or any(first.outcome(t) is not Outcome.passed
                                    for t in spec.FAIL_TO_PASS):
            return _graded(spec, first, set(spec.FAIL_TO_PASS), state.discarded, partial=False)
    run = state.run(sorted(wanted), limits, partial=partial)
    return _graded(spec, run, wanted, state.discarded, partial=partial)


def _limits(spec: GradingSpec, timeout: float, policy: TimePolicy | None) -> TimeLimits:
    limits = spec.time_limits or (policy or policy_for(timeout, timeout)).unknown()
    return limits.model_copy(update={"run": min(limits.run, timeout)})


class _GradedState:
    """The state a patch is graded in, made (and, after a lost sandbox, made again)."""

    def __init__(self, sandbox: Sandbox, toolchain: Toolchain, spec: GradingSpec,
                 patch: str) -> None:
        self.sandbox, self.toolchain, self.spec, self.patch = sandbox, toolchain, spec, patch
        self.discarded: list[str] = []

    def prepare(self) -> bool:
        """Broken state + patch, protected files restored, test patch: False when the
        patch does not apply.

        Raises:
            SandboxError: the task's own patches do not apply.
        """
        sb, spec = self.sandbox, self.spec
        sb.reset(commit=spec.base_commit)
        if not sb.apply_patch(spec.bug_patch):
            raise SandboxError(f"{spec.instance_id}: the task's bug_patch does not apply")
        broken = _tree_of(sb)
        if not sb.apply_patch(self.patch):
            return False
        self.discarded = _discard_protected(sb, self.toolchain, broken, protected_paths(spec),
                                            patch_paths(self.patch), span_guarded_paths(spec))
        if not sb.apply_patch(spec.test_patch):
            if patch_paths(self.patch) & span_guarded_paths(spec) & patch_paths(spec.test_patch):
                return False  # the patch changed the code next to the tests it adds
            raise SandboxError(f"{spec.instance_id}: the task's test_patch does not apply")
        return True

    def run(self, tests: list[str], limits: TimeLimits, *, partial: bool) -> TestRun:
        """A fresh run of ``tests``; a test that kills the run ends it at once unless
        ``partial`` (a binary grade is 0 already)."""
        return run_to_end(self.toolchain, self.sandbox, timeout=limits.run, select=tests,
                          limits=limits, allowed_changes=self.spec.runner_changes,
                          restore=self._restore, stop=None if partial else (lambda _r: True),
                          exitfirst=not partial)

    def _restore(self) -> None:
        if not self.prepare():
            raise SandboxError(f"{self.spec.instance_id}: the patch no longer applies")


def _graded(spec: GradingSpec, run: TestRun, wanted: set[str], discarded: list[str], *,
            partial: bool) -> Result:
    """The Result of one run over ``wanted`` (reward 1 only if trusted and all passed)."""
    outcomes = {t: run.outcome(t) for t in sorted(wanted)}
    passed = sum(o is Outcome.passed for o in outcomes.values())
    problems = list(run.problems)
    problems += [f"{t}: {run.results[t].message}" for t in run.culprits if t in run.results]
    if run.timed_out:
        problems.append("the test run timed out")
    elif not run.finished:
        problems.append("the test run ended without a complete report")
    problems += [f"{t} timed out" for t in sorted(wanted)
                 if (r := run.results.get(t)) is not None and r.timed_out
                 and t not in run.culprits]
    resolved = run.trusted and passed == len(wanted) and bool(wanted)
    reward = (1.0 if resolved else 0.0) if not partial else (
        passed / len(wanted) if run.trusted and wanted else 0.0)
    return Result(instance_id=spec.instance_id, reward=reward, resolved=resolved,
                  outcomes=outcomes, problems=tuple(problems), discarded=tuple(discarded),
                  log_tail=run.log_tail[-2000:])


def protected_paths(spec: GradingSpec) -> set[str]:
    """Exact paths a candidate patch may not change: the test patch's files and the files
    of the listed tests (but those :func:`span_guarded_paths` names), the runner's plugin
    modules."""
    toolchain = toolchain_for(spec.language)
    listed = {toolchain.test_file(t) for t in (*spec.FAIL_TO_PASS, *spec.PASS_TO_PASS)}
    whole = set(changed_lines(spec.test_patch)) | listed
    return (whole - span_guarded_paths(spec)) | set(spec.protected_files)


def span_guarded_paths(spec: GradingSpec) -> set[str]:
    """The listed tests' files and the test patch's files that are runtime source (the
    toolchain's unit tests sit in the code they test; a mined fix's test patch changes
    only their test code): a patch may change them, but not their test code
    (:meth:`~repogym.toolchains.base.Toolchain.test_spans`)."""
    toolchain = toolchain_for(spec.language)
    if not toolchain.unit_tests_in_sources:
        return set()
    files = {toolchain.test_file(t) for t in (*spec.FAIL_TO_PASS, *spec.PASS_TO_PASS)}
    files |= set(changed_lines(spec.test_patch))
    return {p for p in files - set(spec.protected_files) if toolchain.is_runtime_source(p)}


def _discard_protected(sandbox: Sandbox, toolchain: Toolchain, broken: str,
                       protected: set[str], named: set[str],
                       spans: Collection[str] = ()) -> list[str]:
    """Put every protected file the patch touched back as it is in the broken state
    (``broken``: its tree, :func:`_tree_of`); delete the ones it added. A file of
    ``spans`` counts as protected when the patch changed its test code.

    Touched = what differs from the broken state's tree plus every path the patch names: a
    file the patch also lists in ``.gitignore`` is invisible to git but still loaded by
    pytest. (Against the broken state, not ``HEAD``: the bug's own changes stay.)
    """
    touched = _changes_since(sandbox, broken)
    touched += [("?", path) for path in sorted(named - {p for _, p in touched})]
    out = []
    for status, path in touched:
        added = status == "A" or (status == "?" and not _in_tree(sandbox, broken, path))
        if (path in protected or toolchain.is_protected(path, added=added)
                or (path in spans and _test_code_changed(sandbox, toolchain, broken, path))):
            out.append(path)
            _restore(sandbox, broken, path, added)
    return out


def _test_code_changed(sandbox: Sandbox, toolchain: Toolchain, tree: str, path: str) -> bool:
    """Whether the test code of ``path`` (its ``test_spans``' lines, in order) differs
    from what it is in ``tree``."""
    copy = sandbox.scratch_path(".rs")  # read as a file: an exec's output is capped
    shown = sandbox.exec(f"git cat-file -p {shlex.quote(f'{tree}:{path}')} > {copy}",
                         timeout=60)
    try:
        before = sandbox.read_file(copy).decode("utf-8", errors="replace") if shown.ok else ""
        now = sandbox.read_file(path).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return shown.ok
    finally:
        sandbox.exec(["rm", "-f", copy], timeout=60)
    return _test_code(toolchain, path, before) != _test_code(toolchain, path, now)


def _test_code(toolchain: Toolchain, path: str, text: str) -> list[str]:
    lines = text.splitlines()
    return [line.strip() for start, end in toolchain.test_spans(path, text)
            for line in lines[start - 1:end]]


def _tree_of(sandbox: Sandbox) -> str:
    """The work tree as git would commit it now (a tree object, through a private index:
    the repository's own index and history are untouched)."""
    index = sandbox.scratch_path(".index")
    res = sandbox.exec(f"export GIT_INDEX_FILE={index}; git add -A && git write-tree; "
                       f"rc=$?; rm -f {index}; exit $rc", timeout=120)
    if not res.ok or not res.stdout.strip():
        raise SandboxError(f"cannot snapshot the work tree: {res.stderr.strip()[-300:]}")
    return res.stdout.strip().splitlines()[-1]


def _changes_since(sandbox: Sandbox, tree: str) -> list[tuple[str, str]]:
    """(A|M|D|T, path) of every path that differs from ``tree``."""
    index = sandbox.scratch_path(".index")
    res = sandbox.exec(f"export GIT_INDEX_FILE={index}; git add -A && git diff --cached "
                       f"--no-renames --name-status -z {tree}; rc=$?; rm -f {index}; exit $rc",
                       timeout=120)
    if not res.ok:
        raise SandboxError(f"cannot list the patch's changes: {res.stderr.strip()[-300:]}")
    fields = res.stdout.split("\0")
    return [(fields[i][:1], fields[i + 1]) for i in range(0, len(fields) - 1, 2) if fields[i]]


def _in_tree(sandbox: Sandbox, tree: str, path: str) -> bool:
    return sandbox.exec(["git", "cat-file", "-e", f"{tree}:{path}"], timeout=60).ok


def _restore(sandbox: Sandbox, tree: str, path: str, added: bool) -> None:
    quoted = shlex.quote(path)
    index = sandbox.scratch_path(".index")
    cmd = (f"rm -rf -- {quoted}" if added else
           f"rm -rf -- {quoted}; export GIT_INDEX_FILE={index}; git read-tree {tree} && "
           f"git checkout-index -f -- {quoted}; rc=$?; rm -f {index}; exit $rc")
    if not sandbox.exec(cmd, timeout=60).ok:
        raise SandboxError(f"cannot restore {path}")


__all__ = ("GradingSpec", "Result", "grade_in", "protected_paths", "span_guarded_paths")
