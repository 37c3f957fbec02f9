"""The stages without Prefect, on the tiny repo with the local provider (fast)."""

from __future__ import annotations

import pytest

from repogym.config import Settings
from repogym.datasets import DatasetStore
from repogym.pipeline import run_repo
from repogym.schemas.records import RepoSpec, Status


def test_run_repo_generates_judges_combines_and_reruns_nothing(tiny_repo, tmp_path):
    settings = Settings(out=tmp_path / "out", provider="local", max_candidates=12,
                        max_combined=3, baseline_runs=1, oracle_runs=1, probes=0,
                        test_timeout=60)  # the probe set: tests/judges
    first = run_repo(RepoSpec(source=str(tiny_repo)), settings)
    assert first.accepted >= 3, first
    assert {"coverage", "combine", "judge"} <= set(first.stage_seconds)
    assert "procedural" in first.per_generator
    assert first.per_generator.get("combined", {}).get("candidates", 0) >= 1, first
    store = DatasetStore(settings.out)
    rows = store.judged_rows()
    # coverage targeting: every line mutated is executed by some test
    assert all(r.lines for r in rows)
    assert all(r.status is not Status.infra_error for r in rows), [r.detail for r in rows]
    again = run_repo(RepoSpec(source=str(tiny_repo)), settings)
    assert again.skipped_seen == again.candidates and again.accepted == 0
    assert len(store.rows("tasks")) == first.accepted


CLAMP_REWRITE = """```python
def clamp(x, lo, hi):
    if x < lo:
        return hi
    if x > hi:
        return hi
    return x
```"""


def test_llm_rewrite_candidates_flow_through_the_judge(tiny_repo, tmp_path, monkeypatch):
    """litellm's mock_response stands in for the model; only `clamp` has a 3-statement body."""
    monkeypatch.setenv("REPOGYM_LLM_MODEL", "openai/gpt-4o-mini")
    monkeypatch.setenv("REPOGYM_LLM_MOCK_RESPONSE", CLAMP_REWRITE)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    settings = Settings(out=tmp_path / "out", provider="local", generators=("llm_rewrite",),
                        max_candidates=2, max_combined=0, baseline_runs=1, oracle_runs=1,
                        probes=0, test_timeout=60)
    summary = run_repo(RepoSpec(source=str(tiny_repo)), settings)
    assert summary.per_generator == {"llm_rewrite": {"candidates": 1, "accepted": 1}}, summary
    [row] = DatasetStore(settings.out).rows("tasks")
    assert row.generator == "llm_rewrite"
    assert row.FAIL_TO_PASS == ("tests/test_ops.py::test_clamp_low",)
    assert "return hi" not in row.problem_statement  # the model's text leaked: offline writer


@pytest.mark.docker
def test_parallel_workers_give_the_same_verdicts(tiny_repo, tmp_path, base_image):
    verdicts = {}
    for workers in (1, 2):
        settings = Settings(out=tmp_path / f"out{workers}", workers=workers, max_candidates=6,
                            max_combined=0, baseline_runs=1, oracle_runs=1, probes=0,
                            base_image=base_image, test_timeout=60)
        run_repo(RepoSpec(source=str(tiny_repo)), settings)
        store = DatasetStore(settings.out)
        verdicts[workers] = {(r.instance_id, r.status.value, r.FAIL_TO_PASS)
                             for r in store.judged_rows()}
    assert verdicts[1] == verdicts[2] and len(verdicts[1]) >= 6
