"""Re-verification: do the dataset's tasks still hold in their environments?

A task holds when its gold patch still scores 1 and an empty patch still scores 0 in the
task's image as it is now (an image rebuilt with newer dependencies can break either). Each
task is graded both ways through :func:`~repogym.datasets.verify.verify_batch`; a gold grade
below 1 is graded again before it counts (one failing run may be chance). What follows:

* held: the row stays in ``tasks``, its evidence counting one more re-verification (its
  ``confidence`` rises, :mod:`repogym.schemas.confidence`);
* no longer holds: the row moves to the ``retired`` table with ``retired:oracle`` (the fix
  no longer passes) or ``retired:no_op`` (nothing fails without the fix) and the grade's
  account in ``detail`` (:meth:`~repogym.datasets.store.DatasetStore.retire`);
* a sandbox that broke: nothing is decided about that task (an infrastructure failure is
  never a verdict); it is reported and stays as it was.

:func:`decide` is the rule; :func:`reverify` grades and applies it.
"""

from __future__ import annotations

import time
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

from repogym.config import Settings
from repogym.datasets.store import DatasetStore
from repogym.datasets.verify import BatchItem, verify_batch
from repogym.schemas.arrow import TaskRow
from repogym.schemas.confidence import REVERIFIED_AT_KEY, REVERIFIED_KEY
from repogym.schemas.reasons import Reason
from repogym.schemas.records import Record, Status, utcnow

if TYPE_CHECKING:
    from repogym.sandboxes.pool import SandboxPool


class RetireWhy(str, Enum):
    """Why a task no longer holds."""

    oracle = "oracle"  # the gold patch no longer scores 1 (twice)
    no_op = "no_op"  # the empty patch scores 1: nothing fails without the fix


class Recheck(Record):
    """One task re-verified: its grades, and what follows."""

    instance_id: str
    gold: float | None = None  # None: not graded (the sandbox broke)
    empty: float | None = None
    retire: RetireWhy | None = None
    detail: str = ""
    error: str = ""  # the infrastructure failure that left it undecided

    @property
    def held(self) -> bool:
        return not self.error and self.retire is None


class ReverifyReport(Record):
    """What :func:`reverify` found and did."""

    checked: int
    held: tuple[str, ...]
    retired: tuple[Recheck, ...]
    undecided: tuple[Recheck, ...]  # infrastructure failures: nothing changed
    seconds: float

    def lines(self) -> list[str]:
        out = [f"{self.checked} task(s) re-verified in {self.seconds:.0f}s: {len(self.held)} "
               f"held, {len(self.retired)} retired, {len(self.undecided)} undecided (infra)"]
        out += [f"  retired {r.instance_id}: {r.retire.value if r.retire else ''}: {r.detail}"
                for r in self.retired]
        out += [f"  undecided {r.instance_id}: {r.error[:200]}" for r in self.undecided]
        return out


def decide(instance_id: str, gold: BatchItem, empty: BatchItem,
           gold_again: BatchItem | None = None) -> Recheck:
    """The rule: an infrastructure error decides nothing; gold below 1 in both its grades
    retires as ``oracle``; the empty patch at 1 retires as ``no_op``; else it holds."""
    error = next((i.error for i in (gold, empty, gold_again) if i is not None and i.error), "")
    if error or gold.result is None or empty.result is None:
        return Recheck(instance_id=instance_id, error=error or "not graded")
    rewards = [gold.result.reward] + ([gold_again.result.reward]
                                      if gold_again is not None and gold_again.result else [])
    base = Recheck(instance_id=instance_id, gold=max(rewards), empty=empty.result.reward)
    if max(rewards) < 1.0 and len(rewards) > 1:
        failing = [t for t, o in gold.result.outcomes.items() if o is None or not o.ok]
        return base.model_copy(update={"retire": RetireWhy.oracle, "detail": (
            "with the gold patch, " + (", ".join(failing[:5]) or "the tests")
            + " no longer pass " + "; ".join(gold.result.problems[:2])).strip()})
    if empty.result.reward >= 1.0:
        return base.model_copy(update={"retire": RetireWhy.no_op, "detail": (
            "without any fix every listed test passes: the bug no longer shows")})
    return base


def reverify(store: DatasetStore, *, repo: str | None = None,
             ids: Sequence[str] | None = None, workers: int = 2,
             pool: SandboxPool | None = None, provider: str = "docker",
             settings: Settings | None = None, now: datetime | None = None) -> ReverifyReport:
    """Re-verify the tasks of ``store`` (one repo's, or ``ids``), retire those that no
    longer hold and count one more re-verification on those that do.

    Raises:
        InputError: a task's language has no toolchain.
        DatasetError: a part file is unreadable.
    """
    start = time.monotonic()
    wanted = None if ids is None else set(ids)
    rows = [r for r in store.rows("tasks", repo) if wanted is None or r.instance_id in wanted]
    if not rows:  # no sandbox opened for nothing
        return ReverifyReport(checked=0, held=(), retired=(), undecided=(), seconds=0.0)

    def batch(tasks: Sequence[TaskRow], patches: Sequence[str]) -> list[BatchItem]:
        return verify_batch(tasks, patches, workers=workers, pool=pool, provider=provider,
                            settings=settings)

    golds = batch(rows, [r.patch for r in rows])
    empties = batch(rows, ["" for _ in rows])
    doubtful = [i for i, g in enumerate(golds) if g.result is not None and g.result.reward < 1]
    again = dict(zip(doubtful, batch([rows[i] for i in doubtful],
                                     [rows[i].patch for i in doubtful])))
    checks = [decide(r.instance_id, g, e, again.get(i))
              for i, (r, g, e) in enumerate(zip(rows, golds, empties))]
    when = now or utcnow()
    by_id = {r.instance_id: r for r in rows}
    retired = [_retired_row(by_id[c.instance_id], c, when) for c in checks if c.retire]
    held = [_held_row(by_id[c.instance_id], when) for c in checks if c.held]
    if retired or held:
        store.retire(retired, held)
    return ReverifyReport(checked=len(rows), held=tuple(r.instance_id for r in held),
                          retired=tuple(c for c in checks if c.retire),
                          undecided=tuple(c for c in checks if c.error),
                          seconds=round(time.monotonic() - start, 3))


class ImageCheck(Record):
    """A repository's environments as they are now against those its tasks were checked in.

    Attributes:
        now: ref -> identity now, for every task's environment that exists.
        missing: refs with no environment now (nothing can be re-verified there).
        stale: ref -> the tasks to re-verify in it, for each ref whose identity differs
            from the recorded one (tasks judged by this very run left out).
    """

    now: dict[str, str]
    missing: tuple[str, ...] = ()
    stale: dict[str, tuple[str, ...]] = {}

    @property
    def stale_ids(self) -> list[str]:
        return [i for ids in self.stale.values() for i in ids]

    def recorded(self, before: Mapping[str, str],
                 report: ReverifyReport | None) -> dict[str, str]:
        """What to record once ``report`` (the re-verification of :attr:`stale`) is done:
        every environment as it is now, except a changed one where a task stayed undecided
        (an infrastructure failure) or that was not re-verified (``report`` None): it keeps
        its old identity, so the next run tries again."""
        undecided = ({r.instance_id for r in report.undecided} if report is not None
                     else set(self.stale_ids))
        keep = {ref for ref, ids in self.stale.items() if undecided & set(ids)}
        return {**before, **{ref: ident for ref, ident in self.now.items() if ref not in keep}}


def changed_images(images: Mapping[str, str], recorded: Mapping[str, str],
                   identity: Callable[[str], str | None],
                   just_judged: Iterable[str] = ()) -> ImageCheck:
    """Which tasks to re-verify, of ``images`` (instance id -> its environment's ref, e.g.
    ``DatasetStore.column("image")``): those whose environment now differs from the one
    ``recorded`` for its ref. A ref never recorded is taken as it is (its tasks were judged
    in it, or predate the record); a task judged by this very run is not re-verified."""
    skip = set(just_judged)
    by_ref: dict[str, list[str]] = {}
    for instance_id, ref in images.items():
        by_ref.setdefault(ref, []).append(instance_id)
    now = {ref: ident for ref in by_ref if (ident := identity(ref)) is not None}
    stale = {ref: tuple(i for i in by_ref[ref] if i not in skip)
             for ref, ident in sorted(now.items()) if recorded.get(ref, ident) != ident}
    return ImageCheck(now=now, missing=tuple(sorted(set(by_ref) - set(now))),
                      stale={ref: ids for ref, ids in stale.items() if ids})


def _retired_row(row: TaskRow, check: Recheck, when: datetime) -> TaskRow:
    why = check.retire.value if check.retire else ""
    return row.with_evidence(
        {"retired_from": row.reason or "accept", "retired_detail": row.detail,
         "retired_gold": f"{check.gold}", "retired_empty": f"{check.empty}"},
        status=Status.reject, reason=Reason.retired.code(why), detail=check.detail,
        created_at=when)


def _held_row(row: TaskRow, when: datetime) -> TaskRow:
    count = row.confidence_record.reverified + 1
    return row.with_evidence({REVERIFIED_KEY: str(count), REVERIFIED_AT_KEY: when.isoformat()})


__all__ = ["ImageCheck", "Recheck", "RetireWhy", "ReverifyReport", "changed_images", "decide",
           "reverify"]
