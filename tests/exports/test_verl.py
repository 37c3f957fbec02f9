"""verl: the reward module trainers point at, on real tasks in Docker, and its diff extraction."""

from __future__ import annotations

import json

import pytest

from repogym.datasets.exports import export_dataset
from repogym.datasets.exports.verl_reward import compute_score, extract_diff
from repogym.errors import InputError

DIFF = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"


@pytest.mark.parametrize("answer", [
    f"The bug is in m.py.\n\n```diff\n{DIFF}```\n\nThis fixes it.",
    f"```patch\n{DIFF}```",
    f"First try:\n```diff\n{DIFF.replace('2', '3')}```\nBetter:\n```diff\n{DIFF}```\n",
    f"```\n{DIFF}```",
    f"Here you go:\n{DIFF}",
    DIFF,
    f"```python\nprint(1)\n```\n{DIFF}",
])
def test_extract_diff_finds_the_answer(answer):
    assert extract_diff(answer) == DIFF


@pytest.mark.parametrize("answer", ["", "I could not find the bug.", "```python\nx = 1\n```",
                                    "```diff\nno changes needed\n```"])
def test_extract_diff_without_a_diff_is_empty(answer):
    assert extract_diff(answer) == ""


def test_bad_ground_truth_is_a_clear_error():
    with pytest.raises(InputError, match="not a repogym grading spec"):
        compute_score("repogym", DIFF, '{"instance_id": "x"}')
    with pytest.raises(InputError, match="JSON string or a mapping"):
        compute_score("repogym", DIFF, 42)


@pytest.fixture(scope="module")
def verl_rows(real_tasks, tmp_path_factory):
    import pandas as pd

    out = tmp_path_factory.mktemp("verl") / "export"
    export_dataset("verl", out, dataset=real_tasks.store.root)
    frame = pd.read_parquet(out / "train.parquet")
    return {info["instance_id"]: rec for info, rec in
            zip(frame["extra_info"], frame.to_dict("records"), strict=True)}


def score(rec, answer: str) -> float:
    """Called exactly the way verl's reward manager calls a custom reward function."""
    return compute_score(rec["data_source"], answer, rec["reward_model"]["ground_truth"],
                         extra_info=rec["extra_info"])


@pytest.mark.docker
@pytest.mark.parametrize("which", ["synthetic", "mined"])
def test_gold_answer_scores_one(which, real_tasks, verl_rows):
    row = getattr(real_tasks, which)
    answer = f"The fix:\n\n```diff\n{row.patch}```\n"
    assert score(verl_rows[row.instance_id], answer) == 1.0


@pytest.mark.docker
def test_empty_and_hacking_answers_score_zero(real_tasks, verl_rows):
    from repogym.patches import unified_diff
    from tests.exports.conftest import TEST_UNITS

    rec = verl_rows[real_tasks.synthetic.instance_id]
    assert score(rec, "") == 0.0
    assert score(rec, "I am not sure what is wrong.") == 0.0
    hack = unified_diff("tests/test_units.py", TEST_UNITS,
                        TEST_UNITS.replace("== 32", "== -32").replace("== 212", "== 148"))
    assert score(rec, f"```diff\n{hack}```") == 0.0
    spec = json.loads(rec["reward_model"]["ground_truth"])
    assert spec["image"] == real_tasks.image and spec["FAIL_TO_PASS"]
