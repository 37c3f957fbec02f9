"""The Prefect flow for one repository: each pipeline stage runs as a Prefect task.

The work is in :func:`repogym.pipeline.run_repo`; this module only decides how stages run
under Prefect (names, retries for the transient ones, tags for concurrency limits).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Callable, TypeVar

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from repogym.config import Settings
from repogym.pipeline import Progress, RunSummary, run_repo
from repogym.schemas.records import RepoSpec

T = TypeVar("T")

RETRIES = {"clone": 2}  # transient: network. Image builds fail for real far more often.
TAGS = {"env": ["docker-build"], "baseline": ["docker"], "judge": ["docker"]}


def prefect_stage(stage: str, fn: Callable[[], T]) -> T:
    """Run one stage as a Prefect task (no result caching: inputs hold live sandboxes)."""
    t = task(fn, name=stage, cache_policy=NO_CACHE, retries=RETRIES.get(stage, 0),
             retry_delay_seconds=5, tags=TAGS.get(stage, []), persist_result=False)
    return t()


# Live progress for whoever started the flow (the CLI); not a flow parameter, since
# Prefect records parameters and a callback is not data.
PROGRESS: ContextVar[Progress | None] = ContextVar("repogym_progress", default=None)


@flow(name="repogym-repo", log_prints=True, persist_result=False)
def repo_flow(spec: RepoSpec, settings: Settings) -> RunSummary:
    """Clone -> env -> baseline -> generate -> judge -> write, for one repository."""
    progress = PROGRESS.get()
    kwargs = {"progress": progress} if progress else {}
    return run_repo(spec, settings, runner=prefect_stage, **kwargs)
