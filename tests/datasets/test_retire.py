"""Retirement: tasks that no longer hold leave ``tasks`` for ``retired``, never deleted;
snapshots keep what they froze; the rule of re-verification on real grade records."""

from __future__ import annotations

from pathlib import Path

import pytest

from repogym.datasets import DatasetStore
from repogym.datasets.reverify import RetireWhy, decide
from repogym.datasets.snapshots import create_snapshot, read_snapshot_rows
from repogym.datasets.verify import BatchItem
from repogym.grading import Result
from repogym.schemas import Status
from repogym.schemas.reasons import Reason
from repogym.schemas.records import Outcome
from tests.datasets.test_schema import make_judged


@pytest.fixture
def store(tmp_path: Path) -> DatasetStore:
    s = DatasetStore(tmp_path / "data")
    s.write([make_judged(i) for i in range(4)] + [make_judged(9, repo="other")])
    s.write([make_judged(5)])  # a second part file in acme__calc's partition
    return s


def test_retired_rows_move_to_their_table_and_held_rows_are_rewritten(store: DatasetStore,
                                                                     tmp_path: Path) -> None:
    create_snapshot(store.root, "before")
    rows = {r.instance_id: r for r in store.rows()}
    ids = sorted(r.instance_id for r in rows.values() if r.repo == "acme__calc")
    gone, kept = rows[ids[0]], rows[ids[1]]
    retired = gone.with_evidence({}, status=Status.reject,
                                 reason=Reason.retired.code("no_op"), detail="why")
    held = kept.with_evidence({"reverified": "1"})
    result = store.retire([retired], [held])
    assert (result.retired, result.removed, result.updated) == (1, 1, 1)
    now = {r.instance_id: r for r in store.rows()}
    assert gone.instance_id not in now and len(now) == len(rows) - 1
    assert now[kept.instance_id].confidence_record.reverified == 1
    (moved,) = store.rows("retired")
    assert moved.instance_id == gone.instance_id and moved.reason == "retired:no_op"
    assert moved.patch == gone.patch  # the task itself is kept whole
    assert store.manifest() is not None and store.manifest().tables["retired"].rows == 1
    # the other repo's partition was not rewritten; the snapshot still has every task
    assert len(store.part_files("tasks", "other")) == 1
    assert len(store.part_files("tasks", "acme__calc")) == 1
    assert {r.instance_id for r in read_snapshot_rows(store.root, "before")} == set(rows)
    assert not (store.root / ".compaction.json").exists()
    # a retired task keeps its verdict: no run judges that candidate again
    assert gone.instance_id in store.verdict_ids()
    # again: nothing more to do, and the retired row is not written twice
    assert store.retire([retired]).retired == 0 and len(store.rows("retired")) == 1


def test_a_partition_whose_every_task_is_retired_is_left_empty(store: DatasetStore) -> None:
    (only,) = store.rows("tasks", "other")
    out = only.with_evidence({}, status=Status.reject, reason=Reason.retired.code("oracle"))
    assert store.retire([out]).removed == 1
    assert store.rows("tasks", "other") == [] and store.part_files("tasks", "other") == []


def test_bad_input_is_refused_before_anything_is_written(store: DatasetStore) -> None:
    row = store.rows()[0]
    with pytest.raises(ValueError, match="retired and updated at once"):
        store.retire([row], [row])
    foreign = make_judged(77)
    from repogym.schemas import TaskRow

    with pytest.raises(ValueError, match="not in tasks"):
        store.retire([], [TaskRow.from_judged(foreign)])
    assert store.rows("retired") == []


def _item(reward: float | None, error: str = "", failing: str = "") -> BatchItem:
    if reward is None:
        return BatchItem(instance_id="t", error=error or "sandbox broke")
    outcomes = {"t::a": Outcome.passed, **({failing: Outcome.failed} if failing else {})}
    return BatchItem(instance_id="t", result=Result(instance_id="t", reward=reward,
                                                    resolved=reward == 1, outcomes=outcomes))


def test_the_rule_of_reverification() -> None:
    assert decide("t", _item(1), _item(0)).held
    chance = decide("t", _item(0, failing="t::b"), _item(0), _item(1))
    assert chance.held  # one failing gold run, then a passing one: chance, not retired
    broken = decide("t", _item(0, failing="t::b"), _item(0), _item(0, failing="t::b"))
    assert broken.retire is RetireWhy.oracle and "t::b" in broken.detail
    assert decide("t", _item(1), _item(1)).retire is RetireWhy.no_op
    infra = decide("t", _item(None, "docker died"), _item(0))
    assert infra.error == "docker died" and not infra.held and infra.retire is None


def _rows_in(images: dict[str, str]) -> list:
    from repogym.schemas import TaskRow

    return [TaskRow.from_judged(make_judged(n)).model_copy(update={"image": ref})
            for n, ref in enumerate(images)]


def test_changed_images_picks_the_tasks_of_a_rebuilt_environment_only() -> None:
    from repogym.datasets.reverify import changed_images

    rows = _rows_in({"img:a": "", "img:b": "", "img:c": "", "img:gone": ""})
    ids = {r.image: r.instance_id for r in rows}
    images = {r.instance_id: r.image for r in rows}
    now = {"img:a": "sha256:1", "img:b": "sha256:new", "img:c": "sha256:3"}
    recorded = {"img:a": "sha256:1", "img:b": "sha256:old"}  # img:c never recorded
    check = changed_images(images, recorded, now.get)
    assert check.stale == {"img:b": (ids["img:b"],)} and check.missing == ("img:gone",)
    assert check.now == now
    # a task judged by this very run is not re-verified
    assert changed_images(images, recorded, now.get, [ids["img:b"]]).stale_ids == []


def test_what_is_recorded_after_a_reverification() -> None:
    from repogym.datasets.reverify import ImageCheck, Recheck, ReverifyReport

    check = ImageCheck(now={"img:a": "1", "img:b": "new", "img:c": "3"},
                       stale={"img:b": ("t1", "t2")})
    before = {"img:b": "old", "img:old": "x"}
    clean = ReverifyReport(checked=2, held=("t1",), retired=(Recheck(instance_id="t2"),),
                           undecided=(), seconds=1.0)
    assert check.recorded(before, clean) == {"img:a": "1", "img:b": "new", "img:c": "3",
                                             "img:old": "x"}
    # a task left undecided (the sandbox broke): the old identity stays, tried again next run
    broke = clean.model_copy(update={"held": (), "undecided": (
        Recheck(instance_id="t1", error="sandbox"),)})
    assert check.recorded(before, broke)["img:b"] == "old"
    assert check.recorded(before, None)["img:b"] == "old"


def test_one_column_is_read_per_instance(store: DatasetStore) -> None:
    rows = store.rows("tasks", "acme__calc")
    assert store.column("image", "tasks", "acme__calc") == {r.instance_id: r.image for r in rows}
    assert store.column("repo", "retired") == {}
