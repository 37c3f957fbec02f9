"""Splits and decontamination (``repogym dataset split``).

The corpus test runs the pipeline (mined and procedural tasks, Docker) on two repositories:
the realistic ``shopcart`` history of tests/histories.py and a fork of it under another name
(the same commits: every task of one has a near-duplicate in the other, as forks give real
corpora), snapshots them, and splits with a time cutoff and a reference set holding a
planted near-copy of one eval task's statement.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from repogym.cli import app
from repogym.datasets.overlap import (
    Doc,
    jaccard,
    load_reference,
    near_pairs,
    patch_shingles,
    statement_shingles,
)
from repogym.datasets.snapshots import create_snapshot, read_snapshot_rows, snapshots_dir
from repogym.datasets.splits import EVAL, GroupBy, Split, group_keys, read_plan
from repogym.errors import InputError
from repogym.schemas.records import CandidateKind
from tests.exports.conftest import real_tasks  # noqa: F401
from tests.histories import build_realistic_history

CUTOFF = "2024-01-06T00:00:00+00:00"  # between the dependency change and the later fixes


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, base_image) -> Path:
    from repogym.config import Settings
    from repogym.pipeline import run_repo
    from repogym.schemas.records import RepoSpec

    root = tmp_path_factory.mktemp("split-corpus")
    history = build_realistic_history(root / "shopcart")
    shutil.copytree(history.root, root / "shopfork")
    settings = Settings(out=root / "out", generators=("mined", "procedural"), max_candidates=3,
                        baseline_runs=1, oracle_runs=1, max_combined=0, probes=0)
    for name in ("shopcart", "shopfork"):
        run_repo(RepoSpec(source=str(root / name)), settings)
    create_snapshot(settings.out, "s1")
    return settings.out


def similarity(a, b) -> float:
    return max(jaccard(statement_shingles(a.problem_statement),
                       statement_shingles(b.problem_statement)),
               jaccard(patch_shingles(a.patch), patch_shingles(b.patch)))


@pytest.mark.docker
@pytest.mark.slow
def test_a_time_split_of_two_repos_keeps_duplicates_and_the_reference_out_of_eval(
        corpus, tmp_path):
    rows = {r.instance_id: r for r in read_snapshot_rows(corpus, "s1")}
    assert {r.repo for r in rows.values()} == {"shopcart", "shopfork"}
    late = [r for r in rows.values() if r.kind is CandidateKind.mined
            and r.provenance["author_date"] > CUTOFF and r.repo == "shopcart"]
    assert len(late) >= 2, sorted(rows)
    planted = late[0]
    reference = tmp_path / "reference.jsonl"
    reference.write_text("\n".join(json.dumps(x) for x in [
        {"id": "bench-1", "statement": planted.problem_statement.replace("\n", " ") + " Thanks!",
         "patch": ""},
        {"instance_id": "bench-2", "problem_statement": "The parser drops the last byte of "
                                                       "a chunked HTTP response."},
    ]) + "\n")
    result = CliRunner().invoke(app, [
        "dataset", "split", "time", "--snapshot", "s1", "--dataset", str(corpus),
        "--cutoff", CUTOFF, "--reference", str(reference)])
    assert result.exit_code == 0, result.output
    assert "2 suspect(s) kept out of eval" in result.output  # the task and its fork's copy
    plan = read_plan(snapshots_dir(corpus) / "s1", "time")
    where = {t.instance_id: t for t in plan.tasks}
    assert set(where) == set(rows)
    evals = [i for i, t in where.items() if t.split in EVAL]
    train = [i for i, t in where.items() if t.split is Split.train]
    assert evals, plan.counts
    for i in evals:  # eval: only mined fixes authored after the cutoff
        assert rows[i].kind is CandidateKind.mined
        assert datetime.fromisoformat(rows[i].provenance["author_date"]) > \
            datetime.fromisoformat(CUTOFF)
    worst = max((similarity(rows[e], rows[t]), e, t) for e in evals for t in train)
    assert worst[0] < plan.settings.threshold, worst  # no near-duplicate across the line
    # the fork's copy of each mined task is a near-duplicate, in the same split
    for row in (r for r in rows.values() if r.kind is CandidateKind.mined):
        twin = [r for r in rows.values() if r.repo != row.repo and r.patch == row.patch]
        assert twin and all(where[t.instance_id].split is where[row.instance_id].split
                            for t in twin)
        assert where[row.instance_id].max_overlap >= plan.settings.threshold
    # the planted reference copy: flagged, named, kept out of eval with its group
    flagged = where[planted.instance_id]
    assert flagged.suspect and flagged.split is Split.train
    assert flagged.reference_with == "bench-1" and flagged.reference_overlap >= 0.5
    assert plan.suspects == sum(1 for t in plan.tasks if t.group == flagged.group)
    assert plan.near_duplicate_rate > 0


@pytest.mark.docker
@pytest.mark.slow
def test_without_a_cutoff_a_share_of_groups_goes_to_eval(corpus):
    result = CliRunner().invoke(app, [
        "dataset", "split", "share", "--snapshot", "s1", "--dataset", str(corpus),
        "--eval-fraction", "0.5", "--group-by", "repo"])
    assert result.exit_code == 0, result.output
    plan = read_plan(snapshots_dir(corpus) / "s1", "share")
    # by repo, and the fork's tasks duplicate the original's: one group, one split
    assert len({t.group for t in plan.tasks}) == 1
    assert len({t.split for t in plan.tasks}) == 1
    bad = CliRunner().invoke(app, ["dataset", "split", "x", "--snapshot", "s1", "--dataset",
                                   str(corpus), "--group-by", "module"])
    assert bad.exit_code == 2 and "group-by" in bad.output


def test_overlap_is_exact_jaccard_of_shingles():
    a = Doc(key="a", statement="`pricing.round_money(2.675)` returns 2.67; it should "
                               "return 2.68.", patch="-    return x\n+    return y\n")
    b = Doc(key="b", statement="pricing.round_money(2.675) returns 2.67; it should return "
                               "2.68 instead.", patch="+    return y\n")
    c = Doc(key="c", statement="Cart.total ignores the bulk discount.", patch="+pass\n")
    pairs = near_pairs([a, b, c], 0.5)
    assert [(p.a, p.b) for p in pairs] == [("a", "b")]
    assert pairs[0].statement == round(jaccard(statement_shingles(a.statement),
                                               statement_shingles(b.statement)), 4)
    assert pairs[0].patch == 0.5  # {-return x, +return y} vs {+return y}
    assert near_pairs([c], 0.5, against=[a]) == []
    with pytest.raises(InputError, match="threshold"):
        near_pairs([a], 0.0)


def test_a_bad_reference_file_is_refused(tmp_path):
    bad = tmp_path / "ref.jsonl"
    bad.write_text('{"statement": "no id"}\n')
    with pytest.raises(InputError, match="ref.jsonl:1: not a reference item"):
        load_reference(bad)
    with pytest.raises(InputError, match="no reference set"):
        load_reference(tmp_path / "missing.jsonl")


@pytest.mark.docker
def test_group_keys(real_tasks):  # noqa: F811
    syn, mined = real_tasks.synthetic, real_tasks.mined
    assert group_keys(syn, GroupBy.file) == ["file:tinycalc:tinycalc/units.py"]
    assert group_keys(mined, GroupBy.function) == [
        f"commit:tinycalc:{mined.provenance['commit']}"]
    assert group_keys(syn, GroupBy.repo) == group_keys(mined, GroupBy.repo)

