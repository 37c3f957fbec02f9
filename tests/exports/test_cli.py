"""``repogym export`` through the real CLI app (typer's CliRunner), on real files."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from repogym.cli import app
from repogym.commands.export import FORMATS_HELP
from repogym.datasets.exports import EXPORTERS, read_manifest
from repogym.datasets.snapshots import create_snapshot
from tests.exports.conftest import make_judged


def cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["export", *args], env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def one_error(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


def test_help_names_every_format():
    assert FORMATS_HELP == f"Export format: {', '.join(EXPORTERS.names()[:-1])} or " \
                           f"{EXPORTERS.names()[-1]}."


def test_export_prints_a_report_and_reexport_is_a_noop(judged_rows, tmp_path):
    store, rows = judged_rows
    out = tmp_path / "v"
    code, stdout, stderr = cli("--format", "verl", "--out", str(out), "--dataset", str(store.root))
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["tasks"] == len(rows) and report["format"] == "verl" and not report["unchanged"]
    code, stdout, _ = cli("-f", "verl", "-o", str(out), "--dataset", str(store.root))
    assert code == 0 and json.loads(stdout)["unchanged"]


def test_dataset_defaults_to_repogym_out(judged_rows, tmp_path):
    store, rows = judged_rows
    code, stdout, stderr = cli("--format", "hf", "--out", str(tmp_path / "hf"),
                               env={"REPOGYM_OUT": str(store.root)})
    assert code == 0, stderr
    assert json.loads(stdout)["tasks"] == len(rows)


def test_snapshot_exports_the_frozen_tasks_only(judged_rows, tmp_path):
    store, rows = judged_rows
    create_snapshot(store.root, "v1")
    store.write([make_judged(7)])  # after the snapshot
    code, _, stderr = cli("--format", "swebench", "--out", str(tmp_path / "s"),
                          "--dataset", str(store.root), "--snapshot", "v1")
    assert code == 0, stderr
    manifest = read_manifest(tmp_path / "s")
    assert manifest is not None and "snapshot v1" in manifest.source
    assert sorted(manifest.instance_ids) == sorted(r.instance_id for r in rows)
    code, _, stderr = cli("--format", "swebench", "--out", str(tmp_path / "s2"),
                          "--dataset", str(store.root), "--snapshot", "nope")
    assert code == 1 and "unknown snapshot 'nope'" in one_error(stderr)


@pytest.mark.parametrize("args, message", [
    (["--format", "csv"], "error: unknown export format 'csv'; valid names: harbor, hf, "
                          "swebench, verl"),
    (["--format", "hf", "--dataset", "/no/such/dir"],
     "error: /no/such/dir: no such dataset folder"),
])
def test_bad_input_is_one_line_and_exit_2(args, message, judged_rows, tmp_path):
    store, _ = judged_rows
    full = [*args, "--out", str(tmp_path / "o")]
    if "--dataset" not in args:
        full += ["--dataset", str(store.root)]
    code, stdout, stderr = cli(*full)
    assert code == 2 and one_error(stderr) == message and stdout == ""
    assert not (tmp_path / "o").exists()


def test_occupied_out_needs_overwrite(judged_rows, tmp_path):
    store, _ = judged_rows
    out = tmp_path / "o"
    out.mkdir()
    (out / "mine.txt").write_text("x")
    code, _, stderr = cli("--format", "harbor", "--out", str(out), "--dataset", str(store.root))
    assert code == 2 and "--overwrite" in one_error(stderr)
    code, _, stderr = cli("--format", "harbor", "--out", str(out), "--dataset", str(store.root),
                          "--overwrite")
    assert code == 0, stderr
    assert not (out / "mine.txt").exists() and read_manifest(out) is not None
