"""The Prefect flow for one repository: each pipeline stage runs as a Prefect task.

The work is in :func:`repogym.pipeline.run_repo`; this module only decides how stages run
under Prefect (names, retries for the transient ones, tags for concurrency limits).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Callable, Collection, TypeVar

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.states import Failed, State

from repogym.config import Settings
from repogym.errors import RepogymError
from repogym.pipeline import Progress, RunSummary, run_repo
from repogym.schemas.records import RepoSpec

T = TypeVar("T")

TAGS = {"env": ["docker-build"], "baseline": ["docker"], "coverage": ["docker"],
        "judge": ["docker"]}


def prefect_stage(stage: str, fn: Callable[[], T], *, retries: int = 0,
                  retry_if: Callable[[RepogymError], bool] | None = None,
                  retry_delay: float = 0.0) -> T:
    """Run one stage as a Prefect task (no result caching: inputs hold live sandboxes).

    See :func:`stage_state`; the stage's RepogymError is raised again here for the flow to
    report, and the last one if every attempt failed.
    """
    state, caught = stage_state(stage, fn, retries=retries, retry_if=retry_if,
                                retry_delay=retry_delay, tags=TAGS.get(stage, []),
                                cache_policy=NO_CACHE, persist_result=False)
    if state.is_failed() and caught:
        raise caught[-1]
    return state.result()


def stage_state(stage: str, fn: Callable[[], T], *, retries: int = 0,
                retry_if: Callable[[RepogymError], bool] | None = None,
                retry_delay: float = 0.0, tags: Collection[str] = (),
                **task_options: Any) -> tuple[State, list[RepogymError]]:
    """Run ``fn`` as a Prefect task named ``stage``: its final state, and the RepogymErrors
    its attempts raised (oldest first).

    A RepogymError (bad input, failed install, broken sandbox) ends the task run as Failed
    with its one-line message, not as a crash with a traceback in the logs. With
    ``retries``, a failure for which ``retry_if`` holds (a transient one) is retried by
    Prefect up to that many times, ``retry_delay`` seconds apart. ``task_options`` go to
    Prefect's ``task`` (caching, result storage).
    """
    caught: list[RepogymError] = []

    def body() -> T | State:
        try:
            return fn()
        except RepogymError as exc:
            caught.append(exc)
            return Failed(message=one_line(exc))

    def transient(_task: object, _run: object, _state: State) -> bool:
        return bool(caught) and retry_if is not None and retry_if(caught[-1])

    t = task(body, name=stage, tags=list(tags), retries=retries,  # type: ignore[call-overload]
             retry_delay_seconds=retry_delay,
             retry_condition_fn=transient if retries else None, **task_options)
    return t(return_state=True), caught


# Live progress for whoever started the flow (the CLI); not a flow parameter, since
# Prefect records parameters and a callback is not data.
PROGRESS: ContextVar[Progress | None] = ContextVar("repogym_progress", default=None)


@flow(name="repogym-repo", log_prints=True, persist_result=False)
def repo_flow(spec: RepoSpec, settings: Settings) -> RunSummary | State:
    """Clone -> env -> baseline -> generate -> judge -> write, for one repository.

    Bad input and infrastructure failures end the flow run as Failed with a one-line
    message naming the repository and the cause (no traceback: they are not bugs).
    """
    progress = PROGRESS.get()
    try:
        if progress is None:
            return run_repo(spec, settings, runner=prefect_stage)
        return run_repo(spec, settings, progress, runner=prefect_stage)
    except RepogymError as exc:
        message = one_line(exc)
        if spec.source not in message and (spec.name or "\0") not in message:
            message = f"{spec.source}: {message}"
        return Failed(message=message)


def one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
