"""Every registered export format: exports N tasks, reads back with its consumer's own loader,
is idempotent on re-export, refuses to clobber other content, and fails clearly on bad input.

No Docker here: the Docker round trips (rewards 1 and 0 through each format's own grading)
are in test_harbor.py, test_swebench.py and test_verl.py.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Callable

import pytest

from repogym.datasets.exports import (
    EXPORTERS,
    export_dataset,
    export_rows,
    read_manifest,
)
from repogym.errors import InputError, UnknownPluginError
from repogym.schemas.arrow import TASK_SCHEMA, TaskRow
from repogym.schemas.records import CandidateKind


def load_swebench(out: Path) -> list[str]:
    lines = (out / "instances.jsonl").read_text(encoding="utf-8").splitlines()
    instances = [json.loads(line) for line in lines]
    for inst in instances:
        for key in ("instance_id", "repo", "base_commit", "patch", "test_patch",
                    "problem_statement", "FAIL_TO_PASS", "PASS_TO_PASS", "version",
                    "created_at", "environment_setup_commit", "image_name", "eval_script",
                    "image", "log_parser", "eval_type"):
            assert key in inst, key
        assert (out / "images" / inst["instance_id"] / "Dockerfile").is_file()
        assert isinstance(json.loads(inst["FAIL_TO_PASS"]), list)
        assert inst["eval_script"].startswith("#!/bin/bash")
    assert (out / "build_images.sh").is_file()
    return [i["instance_id"] for i in instances]


def load_harbor(out: Path) -> list[str]:
    ids = []
    for task in sorted(p for p in out.iterdir() if p.is_dir()):
        config = tomllib.loads((task / "task.toml").read_text(encoding="utf-8"))
        for rel in ("instruction.md", "environment/Dockerfile", "tests/test.sh",
                    "tests/grader.py", "tests/repogym_report.py", "tests/spec.json",
                    "solution/solve.sh", "solution/gold.patch"):
            assert (task / rel).is_file(), rel
        assert (task / "tests/test.sh").stat().st_mode & 0o111
        ids.append(config["metadata"]["instance_id"])
    return ids


def load_verl(out: Path) -> list[str]:
    import pandas as pd

    frame = pd.read_parquet(out / "train.parquet")
    assert list(frame.columns) == ["data_source", "prompt", "ability", "reward_model",
                                   "extra_info"]
    return [info["instance_id"] for info in frame["extra_info"]]


def load_hf(out: Path) -> list[str]:
    import datasets

    data = datasets.load_from_disk(str(out))
    assert list(data.features) == TASK_SCHEMA.names
    return list(data["instance_id"])


LOADERS: dict[str, Callable[[Path], list[str]]] = {
    "swebench": load_swebench, "harbor": load_harbor, "verl": load_verl, "hf": load_hf}


def test_every_registered_format_has_a_consumer_loader_here():
    assert sorted(LOADERS) == EXPORTERS.names()


@pytest.fixture(params=EXPORTERS.names())
def fmt(request) -> str:
    return request.param


def test_exports_every_accepted_task_and_reads_back(fmt, judged_rows, tmp_path):
    store, rows = judged_rows
    out = tmp_path / "export"
    report = export_dataset(fmt, out, dataset=store.root)
    expected = sorted(r.instance_id for r in rows)
    assert report.tasks == len(rows) == 5 and report.files >= 2 and report.bytes > 0
    assert sorted(LOADERS[fmt](out)) == expected
    manifest = read_manifest(out)
    assert manifest is not None and manifest.format == fmt
    assert list(manifest.instance_ids) == expected  # rejected rows are never exported


def test_reexport_of_the_same_rows_is_a_noop(fmt, judged_rows, tmp_path):
    store, _ = judged_rows
    out = tmp_path / "export"
    export_dataset(fmt, out, dataset=store.root)
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    again = export_dataset(fmt, out, dataset=store.root)
    assert again.unchanged and again.tasks == 5
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before


def test_export_into_a_directory_holding_something_else_is_refused(fmt, judged_rows, tmp_path):
    _, rows = judged_rows
    out = tmp_path / "export"
    export_rows(fmt, rows, out)
    with pytest.raises(InputError, match="--overwrite"):
        export_rows(fmt, rows[:2], out)
    assert sorted(LOADERS[fmt](out)) == sorted(r.instance_id for r in rows)  # untouched
    replaced = export_rows(fmt, rows[:2], out, overwrite=True)
    assert replaced.tasks == 2 and sorted(LOADERS[fmt](out)) == sorted(
        r.instance_id for r in rows[:2])
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no leftovers


def test_foreign_files_are_never_clobbered(fmt, judged_rows, tmp_path):
    _, rows = judged_rows
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    with pytest.raises(InputError, match="not a repogym export"):
        export_rows(fmt, rows, out)
    assert (out / "notes.txt").read_text() == "keep me" and len(list(out.iterdir())) == 1


def test_unknown_format_lists_the_valid_ones(judged_rows, tmp_path):
    store, _ = judged_rows
    with pytest.raises(UnknownPluginError) as err:
        export_dataset("parquetish", tmp_path / "x", dataset=store.root)
    assert str(err.value) == ("unknown export format 'parquetish'; valid names: "
                              "harbor, hf, swebench, verl")
    assert not (tmp_path / "x").exists()


def test_empty_or_missing_dataset_is_a_clear_error(fmt, tmp_path):
    with pytest.raises(InputError, match="no such dataset folder"):
        export_dataset(fmt, tmp_path / "out", dataset=tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no accepted tasks"):
        export_dataset(fmt, tmp_path / "out", dataset=tmp_path / "empty")
    assert not (tmp_path / "out").exists()


def test_failed_export_leaves_nothing(judged_rows, tmp_path):
    """A row the format cannot take (a local-provider env dir) fails the whole export."""
    _, rows = judged_rows
    bad = rows[0].model_copy(update={"image": "/srv/envs/acme"})
    for fmt in ("harbor", "swebench"):
        with pytest.raises(InputError, match="needs Docker environment images"):
            export_rows(fmt, [bad, *rows[1:]], tmp_path / fmt)
        assert not (tmp_path / fmt).exists()
    assert [p.name for p in tmp_path.iterdir()] == ["data"]  # no temp dir either


# -- per-format content -----------------------------------------------------------------------

def test_swebench_fields_follow_swebench(judged_rows, tmp_path):
    _, rows = judged_rows
    export_rows("swebench", rows, tmp_path / "s")
    inst = {json.loads(x)["instance_id"]: json.loads(x)
            for x in (tmp_path / "s/instances.jsonl").read_text().splitlines()}
    row = rows[0]
    got = inst[row.instance_id]
    assert got["repo"] == "acme/widgets" and got["patch"] == row.patch
    assert json.loads(got["FAIL_TO_PASS"]) == list(row.FAIL_TO_PASS)
    assert json.loads(got["PASS_TO_PASS"]) == list(row.PASS_TO_PASS)
    assert got["image_name"] == row.image and got["version"] == "0123456789abcdef"
    assert got["bug_patch"] == row.bug_patch and got["problem_statement"] == row.problem_statement


def test_harbor_task_toml_and_files(judged_rows, tmp_path):
    _, rows = judged_rows
    mined = next(r for r in rows if r.kind is CandidateKind.mined)
    export_rows("harbor", [mined], tmp_path / "h")
    task = tmp_path / "h" / mined.instance_id
    config = tomllib.loads((task / "task.toml").read_text())
    assert config["task"]["name"] == f"repogym/{mined.instance_id}"
    assert config["agent"]["user"] == "repogym" and config["verifier"]["user"] == "root"
    assert isinstance(config["environment"]["cpus"], int)
    assert (task / "instruction.md").read_text().startswith(mined.problem_statement)
    docker = (task / "environment/Dockerfile").read_text()
    assert f"FROM {mined.image}\n" in docker and mined.base_commit in docker
    assert (task / "solution/gold.patch").read_text() == mined.patch
    spec = json.loads((task / "tests/spec.json").read_text())
    assert spec["test_patch"] == mined.test_patch
    assert "tests/test_mod_3.py" in spec["protected"]


def test_verl_rows_carry_a_grading_spec(judged_rows, tmp_path):
    import datasets

    from repogym.datasets.verify import GradingSpec, spec_of

    _, rows = judged_rows
    export_rows("verl", rows, tmp_path / "v")
    data = datasets.load_dataset("parquet", data_files=str(tmp_path / "v/train.parquet"),
                                 split="train")
    by_id = {r.instance_id: r for r in rows}
    for item in data:
        row = by_id[item["extra_info"]["instance_id"]]
        assert item["reward_model"]["style"] == "rule"
        assert GradingSpec.model_validate_json(item["reward_model"]["ground_truth"]) == spec_of(row)
        assert [m["role"] for m in item["prompt"]] == ["system", "user"]
        assert row.problem_statement in item["prompt"][1]["content"]
        assert item["extra_info"]["image"] == row.image


def test_hf_features_are_explicit_and_values_round_trip(judged_rows, tmp_path):
    import datasets

    from repogym.datasets.exports.hf import features

    _, rows = judged_rows
    export_rows("hf", rows, tmp_path / "d")
    data = datasets.load_from_disk(str(tmp_path / "d"))
    assert data.features == features()
    assert data.features["created_at"].dtype == "timestamp[us, tz=UTC]"
    back = {r["instance_id"]: TaskRow.from_arrow_row(r) for r in data}
    assert back == {r.instance_id: r for r in rows}
