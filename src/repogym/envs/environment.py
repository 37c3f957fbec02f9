"""The OpenEnv environment: one episode per session, in a sandbox leased from the pool.

:class:`EnvService` is what every session shares (the tasks, the pool, the journal, the
limits); :class:`RepoEnvironment` is one session's environment, made by OpenEnv's server
for each WebSocket session (and for each stateless HTTP call).

An episode: ``reset`` (a ``task_id``, or a ``split`` and ``seed``) leases a sandbox on the
task's image and starts :class:`~repogym.envs.episode.Episode` in it; the observation holds
the statement and the repository's files. Each ``step`` runs one :class:`RepoAction`.
``submit`` -- or the step limit, or the time limit -- ends it: the agent's changes are
graded by :func:`repogym.datasets.verify.grade_task` (the one grading path) in the same
sandbox after its reset, the record is journalled, and the sandbox goes back to the pool.
A sandbox that breaks ends the episode without a reward (``error`` says why; never a 0),
and is replaced, never handed to the next agent.
"""

from __future__ import annotations

import logging
import random
import time
from datetime import datetime, timezone
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from repogym.config import Settings
from repogym.datasets.verify import grade_task
from repogym.envs.episode import Episode
from repogym.envs.journal import EpisodeRecord, Journal, patch_digest
from repogym.envs.models import EndedBy, RepoAction, RepoObservation, RepoState, Tool, truncate
from repogym.errors import InputError, SandboxError
from repogym.grading import Result
from repogym.sandboxes.pool import SandboxPool
from repogym.schemas.arrow import TaskRow
from repogym.schemas.records import Record

log = logging.getLogger(__name__)


class EnvLimits(Record):
    """An episode's limits and the server's output size."""

    max_steps: int = 50
    episode_seconds: float = 1800.0
    run_seconds: float = 120.0  # one ``run`` action, at most (and its default)
    output_chars: int = 16000
    layout_files: int = 2000
    partial: bool = False  # reward: share of listed tests passing instead of all-or-nothing


class EnvService:
    """What every session shares: the tasks (accepted ones, by id), the pool, the journal."""

    def __init__(self, tasks: list[TaskRow], pool: SandboxPool, journal: Journal, *,
                 limits: EnvLimits | None = None, settings: Settings | None = None) -> None:
        if not tasks:
            raise InputError("no accepted task to serve")
        self.tasks = {t.instance_id: t for t in sorted(tasks, key=lambda t: t.instance_id)}
        self.pool, self.journal = pool, journal
        self.limits = limits or EnvLimits()
        self.settings = settings or Settings()

    def splits(self) -> list[str]:
        """``all``, each language and each repository."""
        langs = {t.language for t in self.tasks.values()}
        repos = {t.repo for t in self.tasks.values()}
        return ["all", *sorted(langs), *sorted(repos - langs)]

    def pick(self, task_id: str | None, split: str | None, seed: int | None) -> TaskRow:
        """The task asked for: by id, else one of ``split`` (all tasks by default), chosen
        by ``seed`` (the same seed, the same task) or at random.

        Raises:
            InputError: no such task, or no task in the split.
        """
        if task_id is not None:
            if task_id not in self.tasks:
                raise InputError(f"no task {task_id!r} here ({len(self.tasks)} tasks)")
            return self.tasks[task_id]
        name = split or "all"
        pool = [t for t in self.tasks.values()
                if name == "all" or name in (t.language, t.repo)]
        if not pool:
            raise InputError(f"no task in split {name!r}; splits: {', '.join(self.splits())}")
        return (random.Random(seed) if seed is not None else random.SystemRandom()).choice(pool)


class _Live:
    """The episode in progress and its bookkeeping."""

    def __init__(self, episode_id: str, episode: Episode, limits: EnvLimits) -> None:
        self.episode_id, self.episode = episode_id, episode
        self.started = time.monotonic()
        self.started_at = datetime.now(timezone.utc)
        self.deadline = self.started + limits.episode_seconds
        self.steps = 0

    def seconds_left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())


class RepoEnvironment(Environment[RepoAction, RepoObservation, RepoState]):
    """One session's environment (see the module docstring)."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, service: EnvService) -> None:
        super().__init__()
        self.service = service
        self._live: _Live | None = None
        self._state = RepoState()
        self._mcp: Any = None

    @property
    def mcp_server(self) -> Any:
        """The actions as MCP tools (OpenEnv's ``/mcp`` route lists and calls them)."""
        if self._mcp is None:
            from repogym.envs.tools import mcp_tools

            self._mcp = mcp_tools(self)
        return self._mcp

    # -- OpenEnv's interface ---------------------------------------------------------------

    def reset(self, seed: int | None = None, episode_id: str | None = None,
              task_id: str | None = None, split: str | None = None,
              **kwargs: Any) -> RepoObservation:
        """A new episode (an unfinished one is abandoned and its sandbox handed back)."""
        self._abandon()
        task = self.service.pick(task_id, split, seed)
        limits = self.service.limits
        sandbox = self.service.pool.acquire(task.image)
        episode = Episode(sandbox, task)
        try:
            episode.start()
            files, more = episode.layout(limits.layout_files)
        except BaseException:
            self.service.pool.discard(sandbox)
            raise
        eid = episode_id or f"ep-{random.SystemRandom().getrandbits(64):016x}"
        self._live = _Live(eid, episode, limits)
        self._state = RepoState(episode_id=eid, step_count=0, task_id=task.instance_id,
                                language=task.language, max_steps=limits.max_steps)
        return RepoObservation(task_id=task.instance_id, statement=task.problem_statement,
                               files=files, truncated=more, steps_left=limits.max_steps,
                               seconds_left=limits.episode_seconds)

    def step(self, action: RepoAction, timeout_s: float | None = None,
             **kwargs: Any) -> RepoObservation:
        live = self._live
        if live is None:
            done = self._state.done
            return RepoObservation(done=done, error="the episode has ended; reset for another"
                                   if done else "no episode: reset first (episodes keep their "
                                   "state over the WebSocket session, not over HTTP /step)")
        limits = self.service.limits
        if live.seconds_left() <= 0:
            return self._end(live, EndedBy.time_limit, RepoObservation())
        live.steps += 1
        self._state.step_count = live.steps
        if action.tool is Tool.submit:
            return self._end(live, EndedBy.submit, RepoObservation())
        try:
            obs = self._act(live, action, timeout_s)
        except SandboxError as exc:
            return self._broken(live, exc)
        if live.steps >= limits.max_steps:
            return self._end(live, EndedBy.step_limit, obs)
        if live.seconds_left() <= 0:
            return self._end(live, EndedBy.time_limit, obs)
        return obs.model_copy(update={"steps_left": limits.max_steps - live.steps,
                                      "seconds_left": round(live.seconds_left(), 1)})

    @property
    def state(self) -> RepoState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        from repogym import __version__

        return EnvironmentMetadata(
            name="repogym",
            description=(f"Fix a real repository's bug: {len(self.service.tasks)} verified "
                         f"tasks; actions run, read, write, apply, submit; the reward is the "
                         f"task's tests (splits: {', '.join(self.service.splits())})"),
            version=__version__)

    def close(self) -> None:
        self._abandon()

    # -- actions ---------------------------------------------------------------------------

    def _act(self, live: _Live, action: RepoAction, timeout_s: float | None) -> RepoObservation:
        ep, limits = live.episode, self.service.limits
        if action.tool is Tool.run:
            asked = action.timeout_s or timeout_s or limits.run_seconds
            res = ep.run(action.command or "", timeout=min(asked, limits.run_seconds,
                                                           max(1.0, live.seconds_left())))
            text = res.stdout + (f"\n[stderr]\n{res.stderr}" if res.stderr else "")
            if res.timed_out:
                text += "\n[the command was stopped at its time limit]"
            return self._output(text, res.exit_code)
        if action.tool is Tool.read:
            res = ep.read(action.path or "")
            return self._output(res.stdout if res.ok else res.stderr, res.exit_code)
        if action.tool is Tool.write:
            res = ep.write(action.path or "", action.content or "")
            return self._output(res.stderr or f"wrote {action.path}", res.exit_code)
        applied = ep.apply(action.patch or "")
        return self._output("applied" if applied else "the patch does not apply",
                            0 if applied else 1)

    def _output(self, text: str, exit_code: int) -> RepoObservation:
        out, cut = truncate(text, self.service.limits.output_chars)
        return RepoObservation(output=out, truncated=cut, exit_code=exit_code)

    # -- the end of an episode -------------------------------------------------------------

    def _end(self, live: _Live, why: EndedBy, last: RepoObservation) -> RepoObservation:
        """Grade the agent's changes, journal the record, hand the sandbox back."""
        ep = live.episode
        try:
            patch = ep.patch()
            ep.finish()
            result = grade_task(ep.sandbox, ep.task, patch, settings=self.service.settings,
                                partial=self.service.limits.partial,
                                timeout=self.service.settings.test_timeout, early_stop=True)
        except SandboxError as exc:
            return self._broken(live, exc, why)
        self._record(live, why, patch, result=result)
        self._live = None
        self.service.pool.release(ep.sandbox)
        self._state = self._state.model_copy(update={
            "done": True, "reward": result.reward, "ended_by": why})
        return last.model_copy(update={
            "done": True, "reward": result.reward, "ended_by": why, "steps_left": 0,
            "metadata": _grade_summary(result)})

    def _broken(self, live: _Live, exc: SandboxError,
                why: EndedBy | None = None) -> RepoObservation:
        """The sandbox broke: the episode ends ungraded (no reward, not a 0)."""
        log.warning("episode %s: the sandbox broke: %s", live.episode_id, exc)
        self._record(live, why, "", error=str(exc))
        self._live = None
        self.service.pool.discard(live.episode.sandbox)
        self._state = self._state.model_copy(update={"done": True, "ended_by": why})
        return RepoObservation(done=True, reward=None, ended_by=why,
                               error=f"infrastructure: {exc}")

    def _abandon(self) -> None:
        """Hand back the sandbox of an unfinished episode (journalled, ungraded)."""
        live, self._live = self._live, None
        if live is None:
            return
        self._record(live, None, "")
        try:
            live.episode.finish()
        except SandboxError as exc:
            log.warning("episode %s: %s", live.episode_id, exc)
            self.service.pool.discard(live.episode.sandbox)
            return
        self.service.pool.release(live.episode.sandbox)

    def _record(self, live: _Live, why: EndedBy | None, patch: str, *,
                result: Result | None = None, error: str | None = None) -> None:
        task = live.episode.task
        self.service.journal.append(EpisodeRecord(
            episode_id=live.episode_id, task_id=task.instance_id, language=task.language,
            ended_by=why, reward=result.reward if result else None,
            resolved=bool(result and result.resolved),
            outcomes={t: o.value if o else None for t, o in result.outcomes.items()}
            if result else {},
            problems=result.problems if result else (), error=error, steps=live.steps,
            seconds=round(time.monotonic() - live.started, 3), patch=patch,
            patch_sha256=patch_digest(patch), started_at=live.started_at,
            ended_at=datetime.now(timezone.utc)))


def _grade_summary(result: Result, shown: int = 20) -> dict[str, Any]:
    """What the agent hears of its grade: the tests run, and the first that did not pass."""
    failing = [t for t, o in result.outcomes.items() if o is None or not o.ok]
    return {"resolved": result.resolved, "problems": list(result.problems),
            "tests_run": len(result.outcomes), "not_passing": failing[:shown],
            "not_passing_count": len(failing)}


__all__ = ["EnvLimits", "EnvService", "RepoEnvironment"]
