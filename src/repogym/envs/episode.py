"""One task's episode in one leased sandbox: what the agent sees, what it may do, and the
patch its work amounts to.

:meth:`Episode.start` builds the broken state (the task's ``base_commit`` plus its
``bug_patch``) and then hides everything that could tell the fix:

* the repository's history goes to a root-only folder; the agent gets a fresh repository
  holding the broken state as **one commit** (no later history, no remote, no reflog, no
  stash, no other branch);
* the environment's restore data (``STATE``: the pinned commit, its untracked files) is
  made root-only for the episode;
* the task's ``test_patch`` and gold ``patch`` never enter the sandbox before grading; the
  network is off (the pool's sandboxes have no network).

The agent's commands run as the sandbox's unprivileged user, in the repository; reads and
writes go through that user too (a path it cannot read, it cannot read here either).

:meth:`Episode.patch` is the agent's work as a unified diff against the broken state,
computed by the hidden repository (the agent's own ``.git`` may say anything). At the end
:meth:`Episode.finish` puts the history back, and grading (:func:`repogym.grading.grade_in`)
runs in the same sandbox: its reset kills every process the agent left and restores every
place the agent could write.
"""

from __future__ import annotations

from repogym.errors import SandboxError
from repogym.layout import REPO_DIR, STATE, USER
from repogym.sandboxes.base import ExecResult, Sandbox
from repogym.schemas.arrow import TaskRow

HIDDEN = f"{STATE}/episode"  # root-only while an episode runs
GIT = "git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c safe.directory=*"

KILL_AGENT = f"""for i in $(seq 40); do p=$(pgrep -u {USER} || true); [ -z "$p" ] && break
kill -9 $p 2>/dev/null; sleep 0.05; done"""

HIDE = f"""set -e
cd {REPO_DIR}
mkdir -p {HIDDEN}
chmod 700 {STATE}
GIT_INDEX_FILE={HIDDEN}/broken.index {GIT} add -A
GIT_INDEX_FILE={HIDDEN}/broken.index {GIT} write-tree > {HIDDEN}/broken.tree
mv .git {HIDDEN}/git
{GIT} init -q -b main
{GIT} add -A
{GIT} -c user.name=repogym -c user.email=repogym@localhost commit -q --no-verify \\
    -m "the repository" --date=2000-01-01T00:00:00Z
chown -R {USER}:{USER} .git
"""

UNHIDE = f"""set -e
{KILL_AGENT}
cd {REPO_DIR}
rm -rf .git
mv {HIDDEN}/git .git
rm -rf {HIDDEN}
chmod 755 {STATE}
"""

PATCH = f"""set -e
{KILL_AGENT}
cd {REPO_DIR}
export GIT_DIR={HIDDEN}/git GIT_WORK_TREE={REPO_DIR} GIT_INDEX_FILE={HIDDEN}/submit.index
rm -f "$GIT_INDEX_FILE"
{GIT} read-tree "$(cat {HIDDEN}/broken.tree)"
{GIT} add -A
{GIT} diff --cached --binary --no-color --no-ext-diff "$(cat {HIDDEN}/broken.tree)"
"""


class Episode:
    """A task's broken state in a leased sandbox, as the agent sees and changes it."""

    def __init__(self, sandbox: Sandbox, task: TaskRow) -> None:
        self.sandbox, self.task = sandbox, task
        self.hidden = False

    def start(self) -> None:
        """The broken state, history hidden (see the module docstring).

        Raises:
            SandboxError: the sandbox broke, or the task's ``bug_patch`` does not apply.
        """
        sb = self.sandbox
        sb.reset(commit=self.task.base_commit)
        if not sb.apply_patch(self.task.bug_patch):
            raise SandboxError(f"{self.task.instance_id}: the task's bug_patch does not apply")
        self._root(HIDE, "hiding the history")
        self.hidden = True

    def run(self, command: str, timeout: float) -> ExecResult:
        """A shell command as the agent, in the repository."""
        return self.sandbox.exec(command, timeout=timeout, workdir=".")

    def read(self, path: str, timeout: float = 30.0) -> ExecResult:
        """A file's text as the agent may read it (relative paths: from the repository)."""
        return self.sandbox.exec(["cat", "--", path], timeout=timeout, workdir=".")

    def write(self, path: str, content: str, timeout: float = 30.0) -> ExecResult:
        """Write a file as the agent (parents made); relative paths: in the repository."""
        staged = self.sandbox.scratch_path(".write")
        self.sandbox.write_file(staged, content)
        script = ('set -e; mkdir -p -- "$(dirname -- "$1")"; cat -- "$2" > "$1"; '
                  'rm -f -- "$2"')
        return self.sandbox.exec(["sh", "-c", script, "write", path, staged],
                                 timeout=timeout, workdir=".")

    def apply(self, patch: str) -> bool:
        """Apply a unified diff to the working copy as the agent (git apply, fallbacks)."""
        return self.sandbox.apply_patch(patch)

    def layout(self, limit: int) -> tuple[list[str], bool]:
        """The repository's files (as committed for the agent), at most ``limit``."""
        res = self.sandbox.exec(f"{GIT} ls-files -z | head -z -n {limit + 1}", timeout=60,
                                workdir=".")
        if not res.ok:
            raise SandboxError(f"cannot list the repository: {res.stderr.strip()[-300:]}")
        files = [f for f in res.stdout.split("\0") if f]
        return files[:limit], len(files) > limit

    def patch(self) -> str:
        """The agent's changes as a diff against the broken state (the agent's processes
        are stopped first, so nothing changes under it)."""
        res = self._root(PATCH, "reading the agent's changes")
        return res.stdout

    def finish(self) -> None:
        """Put the history back (the sandbox is then ready for grading or a reset).
        Idempotent."""
        if self.hidden:
            self._root(UNHIDE, "restoring the history")
            self.hidden = False

    def _root(self, script: str, what: str) -> ExecResult:
        res = self.sandbox.exec(script, timeout=120, user="root")
        if not res.ok:
            raise SandboxError(f"{what} failed (exit {res.exit_code}): "
                               f"{(res.stderr or res.stdout).strip()[-300:]}")
        return res


__all__ = ["Episode"]
