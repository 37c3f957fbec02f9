"""``repogym review ...`` through the real CLI app (CliRunner) and, for ``serve``, a process."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from repogym.cli import app
from repogym.datasets.review import ReviewQueue, ReviewState
from repogym.datasets.store import DatasetStore
from tests.review.conftest import write_flagged

WIDE = {"COLUMNS": "200", "NO_COLOR": "1", "REPOGYM_REVIEW_DB_URL": ""}


def cli(*args: str, **env: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["review", *args], env={**WIDE, **env})
    return result.exit_code, result.output


def json_lines(output: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


def test_list_json_and_table(dataset: Path, flagged_ids: list[str]) -> None:
    code, out = cli("list", "--json", "--dataset", str(dataset))
    assert code == 0
    items = json_lines(out)
    assert [i["instance_id"] for i in items] == flagged_ids
    assert {i["state"] for i in items} == {"pending"} and items[0]["reason"] == "statement_leak"
    code, out = cli("list", "--dataset", str(dataset))
    assert code == 0 and "review queue: pending (3)" in out
    assert all(iid in out for iid in flagged_ids)


def test_dataset_defaults_to_repogym_out(dataset: Path, flagged_ids: list[str]) -> None:
    code, out = cli("list", "--json", REPOGYM_OUT=str(dataset))
    assert code == 0 and len(json_lines(out)) == 3


def test_show_renders_every_part_with_diff_colour(dataset: Path,
                                                  flagged_ids: list[str]) -> None:
    diff = "--- a/tests/t.py\n+++ b/tests/t.py\n@@ -0,0 +1 @@\n+def test_new(): pass\n"
    [iid] = write_flagged(dataset, 1, start=7, test_patch=diff,
                          statement="add() is wrong [bold red]not markup[/]")
    code, out = cli("show", iid, "--dataset", str(dataset))
    assert code == 0, out
    for expected in ("add() is wrong [bold red]not markup[/]",  # dataset text is not markup
                     "-    return a + b + 7", "+    return a - b + 7",  # bug_patch
                     "-    return a - b + 7", "+    return a + b + 7",  # gold patch
                     "+def test_new(): pass", "test_patch",
                     "tests/test_ops.py::test_add_7", "tests/test_ops.py::test_mul",
                     "statement_leak", "statement quotes the fix", "oracle_runs", "pending"):
        assert expected in out, expected
    code, coloured = cli("show", iid, "--dataset", str(dataset), NO_COLOR="", FORCE_COLOR="1")
    assert code == 0 and "\x1b[" in coloured  # rich Syntax colours the diff lines


def test_approve_and_reject_then_list_all(dataset: Path, flagged_ids: list[str]) -> None:
    code, out = cli("approve", flagged_ids[0], "--reviewer", "alice", "--note", "ok",
                    "--dataset", str(dataset))
    assert code == 0 and "approved by alice" in out
    code, out = cli("reject", flagged_ids[1], "--reviewer", "bob", "--note", "leaks",
                    "--dataset", str(dataset))
    assert code == 0 and "rejected by bob" in out
    code, out = cli("list", "--status", "all", "--json", "--dataset", str(dataset))
    by_id = {i["instance_id"]: i for i in json_lines(out)}
    assert (by_id[flagged_ids[0]]["state"], by_id[flagged_ids[0]]["reviewer"]) == ("approved",
                                                                                   "alice")
    assert (by_id[flagged_ids[1]]["state"], by_id[flagged_ids[1]]["note"]) == ("rejected",
                                                                               "leaks")
    assert flagged_ids[0] in DatasetStore(dataset).instance_ids("tasks")


def one_error_line(code: int, out: str, expected_code: int, text: str) -> None:
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert code == expected_code and len(lines) == 1, out
    assert lines[0].startswith("error: ") and text in lines[0] and "Traceback" not in out


def test_errors_are_one_line(dataset: Path, flagged_ids: list[str], tmp_path: Path) -> None:
    d = ["--dataset", str(dataset)]
    one_error_line(*cli("list", "--status", "done", *d), 2, "valid: pending, approved")
    one_error_line(*cli("show", "nope", *d), 1, "nope: not in the review queue")
    one_error_line(*cli("reject", flagged_ids[0], "--reviewer", "bob", "--note", " ", *d), 1,
                   "note saying why is required")
    one_error_line(*cli("list", "--dataset", str(tmp_path / "absent")), 1, "no dataset here")
    one_error_line(*cli("list", *d, REPOGYM_REVIEW_DB_URL="nosuchdb://x"), 1, "not usable")
    cli("reject", flagged_ids[0], "--reviewer", "bob", "--note", "no", *d)
    one_error_line(*cli("approve", flagged_ids[0], "--reviewer", "alice", *d), 1,
                   "already rejected by bob")


def test_review_db_url_setting_is_used(dataset: Path, tmp_path: Path,
                                       flagged_ids: list[str]) -> None:
    url = f"sqlite:///{tmp_path / 'shared.sqlite'}"
    code, _ = cli("reject", flagged_ids[2], "--reviewer", "eve", "--note", "x",
                  "--dataset", str(dataset), REPOGYM_REVIEW_DB_URL=url)
    assert code == 0 and (tmp_path / "shared.sqlite").is_file()
    with ReviewQueue(DatasetStore(dataset), url) as queue:
        assert queue.get(flagged_ids[2]).state is ReviewState.rejected
    with ReviewQueue(DatasetStore(dataset)) as default:  # the default database never saw it
        assert default.get(flagged_ids[2]).state is ReviewState.pending


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_serves_the_page(dataset: Path, flagged_ids: list[str]) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "repogym", "review", "serve", "--port",
                             str(port), "--dataset", str(dataset)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        page = _get_when_up(f"http://127.0.0.1:{port}/", proc)
        assert page.status_code == 200 and all(iid in page.text for iid in flagged_ids)
    finally:
        proc.terminate()
        proc.wait(10)


def _get_when_up(url: str, proc: subprocess.Popen[str], timeout: float = 30) -> httpx.Response:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            output = proc.stdout.read() if proc.stdout else ""
            pytest.fail(f"serve exited {proc.returncode}: {output}")
        try:
            return httpx.get(url, timeout=5)
        except httpx.TransportError:
            time.sleep(0.2)
    pytest.fail(f"{url} did not answer within {timeout}s")
