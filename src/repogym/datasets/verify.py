"""``verify(task, patch) -> Result``: a dataset task graded, the way trainers call it, and
``verify_batch(tasks, patches, workers=N)`` for a trainer's batch of rewards.

Both grade through :func:`repogym.grading.grade_in` (the steps are there), the path the
judge and its probes use too: ``verify`` in a sandbox of its own (or one leased from a
:class:`~repogym.sandboxes.pool.SandboxPool`), ``verify_batch`` in warm sandboxes of a pool,
``workers`` at a time. A binary reward stops at the first failing test (``verify_batch``
runs FAIL_TO_PASS first); ``partial=True`` runs every listed test. A sandbox that breaks is an
infrastructure failure: ``verify`` raises it, ``verify_batch`` reports it on its item
(:attr:`BatchItem.error`), never as a reward of 0.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Sequence

from repogym.config import Settings
from repogym.errors import InputError, SandboxError
from repogym.grading import GradingSpec, Result, grade_in
from repogym.limits import policy_for
from repogym.sandboxes.base import Sandbox
from repogym.schemas.records import Record

if TYPE_CHECKING:
    from repogym.sandboxes.pool import SandboxPool


def verify(task: object, patch: str, *, provider: str = "docker",
           settings: Settings | None = None, partial: bool = False,
           timeout: float = 600.0, pool: SandboxPool | None = None) -> Result:
    """Grade ``patch`` (a unified diff against the broken state) for ``task``.

    Args:
        task: a :class:`GradingSpec`, or anything with the dataset's columns (a ``TaskRow``).
        patch: the policy's changes; changes to test files and runner config are discarded.
        provider: the sandbox provider the task's image belongs to.
        partial: reward = share of listed tests passing (default: 1 only if all pass).
        pool: lease the sandbox from this pool (its provider) instead of opening one.

    Raises:
        SandboxError: the sandbox could not be opened or broke (not a reward of 0).
    """
    spec = task if isinstance(task, GradingSpec) else spec_of(task)
    from repogym.sandboxes import get_provider
    from repogym.toolchains import toolchain_for

    toolchain_for(spec.language)  # before any sandbox: an unknown one is bad input
    settings = settings or Settings()
    if pool is not None:
        with pool.lease(spec.image) as sandbox:
            return grade_task(sandbox, spec, patch, settings=settings, partial=partial,
                              timeout=timeout)
    prov = get_provider(provider, settings)
    with prov.open(prov.env_for(spec.image)) as sandbox:
        return grade_task(sandbox, spec, patch, settings=settings, partial=partial,
                          timeout=timeout)


def grade_task(sandbox: Sandbox, task: object, patch: str, *, settings: Settings,
               partial: bool = False, timeout: float = 600.0,
               early_stop: bool = False) -> Result:
    """Grade ``patch`` for ``task`` in an open sandbox on its image, as :func:`verify`
    does. With ``early_stop`` a binary grade runs FAIL_TO_PASS first and stops at its
    first failing test (outcomes then list FAIL_TO_PASS only).

    Raises:
        SandboxError: the sandbox broke.
    """
    from repogym.toolchains import toolchain_for

    spec = task if isinstance(task, GradingSpec) else spec_of(task)
    policy = policy_for(min(timeout, settings.test_timeout), settings.per_test_timeout)
    return grade_in(sandbox, toolchain_for(spec.language), spec, patch, timeout=timeout,
                    partial=partial, early_stop=early_stop and not partial,
                    policy=policy)


class BatchItem(Record):
    """One reward of a batch: the grade, or the infrastructure failure that stopped it."""

    instance_id: str
    result: Result | None = None
    error: str | None = None  # the sandbox broke: no reward (not a 0)

    @property
    def reward(self) -> float | None:
        return None if self.result is None else self.result.reward


def verify_batch(tasks: Sequence[object], patches: Sequence[str], *, workers: int = 4,
                 pool: SandboxPool | None = None, provider: str = "docker",
                 settings: Settings | None = None, partial: bool = False,
                 timeout: float = 600.0) -> list[BatchItem]:
    """Grade ``patches[i]`` for ``tasks[i]``, ``workers`` at a time, in warm sandboxes of
    ``pool`` (a pool of ``workers`` sandboxes, closed at the end, when none is given).

    Returns one :class:`BatchItem` per task, in order; a sandbox failure is that item's
    ``error``, and the other items are graded all the same.

    Raises:
        InputError: the lists differ in length, or a task's language has no toolchain.
    """
    from repogym.toolchains import toolchain_for

    if len(tasks) != len(patches):
        raise InputError(f"{len(tasks)} tasks but {len(patches)} patches")
    if workers < 1:
        raise InputError("verify_batch needs at least one worker")
    specs = [t if isinstance(t, GradingSpec) else spec_of(t) for t in tasks]
    for spec in specs:
        toolchain_for(spec.language)
    settings = settings or Settings()
    own = pool is None
    if pool is None:
        from repogym.sandboxes import get_provider
        from repogym.sandboxes.pool import SandboxPool

        pool = SandboxPool(get_provider(provider, settings), max_size=workers)
    leased = pool

    def one(item: tuple[GradingSpec, str]) -> BatchItem:
        spec, patch = item
        try:
            with leased.lease(spec.image) as sandbox:
                result = grade_task(sandbox, spec, patch, settings=settings,
                                    partial=partial, timeout=timeout, early_stop=True)
        except SandboxError as exc:
            return BatchItem(instance_id=spec.instance_id, error=str(exc))
        return BatchItem(instance_id=spec.instance_id, result=result)

    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="verify") as ex:
            return list(ex.map(one, zip(specs, patches)))
    finally:
        if own:
            pool.close()


def spec_of(row: object) -> GradingSpec:
    """A GradingSpec from anything with the dataset's columns (a TaskRow, say); the
    optional fields (time limits, runner changes, protected files) when it has them."""
    fields = {name: getattr(row, name) for name in GradingSpec.model_fields
              if hasattr(row, name)}
    return GradingSpec(**fields)


__all__: Sequence[str] = ("BatchItem", "GradingSpec", "Result", "grade_in", "grade_task",
                          "spec_of", "verify", "verify_batch")
