"""``verify_batch`` and verl's batched reward on real tasks (tinycalc, Docker): the same
rewards as ``verify``, in order, FAIL_TO_PASS first and stopping at its first failure,
warm sandboxes shared, and a sandbox failure reported on its item, never as a 0."""

from __future__ import annotations

import json
import math

import pytest

from repogym.config import Settings
from repogym.datasets.exports.verl_reward import (
    close_shared_pool,
    compute_score_batch,
    shared_pool,
)
from repogym.datasets.verify import spec_of, verify, verify_batch
from repogym.errors import InputError
from repogym.sandboxes import get_provider
from repogym.sandboxes.pool import SandboxPool
from tests.exports.conftest import real_tasks  # noqa: F401

pytestmark = pytest.mark.docker


def test_a_batch_gets_verify_s_rewards_in_order_from_warm_sandboxes(real_tasks):  # noqa: F811
    rows = real_tasks.rows * 2
    patches = [rows[0].patch, "", rows[2].patch, rows[3].patch]
    pool = SandboxPool(get_provider("docker", Settings(), namespace="rg-test-batch"),
                       max_size=2)
    import repogym

    items = repogym.verify_batch(rows, patches, workers=2, pool=pool)
    assert [i.instance_id for i in items] == [r.instance_id for r in rows]
    assert [i.reward for i in items] == [1.0, 0.0, 1.0, 1.0]
    assert [i.reward for i in items] == [
        verify(r, p).reward for r, p in zip(rows, patches)]
    empty = items[1].result
    assert empty is not None and set(empty.outcomes) == set(rows[1].FAIL_TO_PASS)  # stopped
    assert pool.stats().opened <= 2 and pool.stats().reused >= 2
    pool.close()
    assert pool.provider.cleanup() == 0


def test_a_broken_sandbox_is_an_error_on_its_item_not_a_zero(real_tasks):  # noqa: F811
    gone = spec_of(real_tasks.synthetic).model_copy(update={"image": "repogym-env/none:0"})
    items = verify_batch([gone, real_tasks.synthetic],
                         [real_tasks.synthetic.patch] * 2, workers=2)
    assert items[0].reward is None and "repogym-env/none:0" in (items[0].error or "")
    assert items[1].reward == 1.0 and items[1].error is None


def test_verl_batched_reward(real_tasks, monkeypatch):  # noqa: F811
    row = real_tasks.synthetic
    truth = spec_of(row).model_dump_json()
    gone = json.loads(truth) | {"image": "repogym-env/none:0"}
    answers = [f"```diff\n{row.patch}```", "I could not find the bug.", row.patch]
    monkeypatch.setenv("REPOGYM_VERIFY_WORKERS", "2")
    scores = compute_score_batch(["repogym"] * 3, answers, [truth, truth, gone])
    assert [s["score"] for s in scores[:2]] == [1.0, 0.0]
    assert math.isnan(scores[2]["score"]) and "none:0" in scores[2]["infra_error"]
    pool = shared_pool(2)
    opened = pool.stats().opened
    again = compute_score_batch(["repogym"], answers[:1], [truth])  # the next training step
    assert again[0]["score"] == 1.0 and shared_pool(2) is pool
    assert pool.stats().opened == opened  # its warm sandboxes carried over
    close_shared_pool()
    assert pool.provider.cleanup() == 0 and shared_pool(1) is not pool
    close_shared_pool()
    with pytest.raises(InputError, match="differ in length"):
        compute_score_batch(["repogym"], answers, [truth])
    with pytest.raises(InputError, match="3 tasks but 1 patches"):
        verify_batch([row] * 3, [""])
