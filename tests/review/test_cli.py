"""``repogym review ...`` through the real CLI app (CliRunner) over a real SQLite queue and
dataset and, for ``serve``, a process: identity (open mode, tokens), claims, decisions with
labels, mending (the leak check, re-verification), double review, stats and filters."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import Result
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from repogym.cli import app
from repogym.datasets.review import Recheck, ReviewQueue, ReviewState
from repogym.datasets.store import DatasetStore
from repogym.schemas.records import utcnow
from tests.review.conftest import judged, write_flagged

WIDE = {"COLUMNS": "200", "NO_COLOR": "1", "REPOGYM_REVIEW_DB_URL": ""}
LEAKY = "add() is wrong; fix it so that it does return a + b + 0 again."
CLEAN = "add() returns the wrong sum for some inputs."


@pytest.fixture(autouse=True)
def review_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No review setting of the caller's environment leaks into a test."""
    for name in ("REPOGYM_REVIEW_TOKEN", "REPOGYM_REVIEW_CLAIM_MINUTES",
                 "REPOGYM_REVIEW_DOUBLE_FRACTION", "REPOGYM_PROVIDER"):
        monkeypatch.delenv(name, raising=False)


def invoke(*args: str, **env: str) -> Result:
    return CliRunner().invoke(app, ["review", *args], env={**WIDE, **env})


def cli(*args: str, **env: str) -> tuple[int, str]:
    result = invoke(*args, **env)
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
    base = f"http://127.0.0.1:{port}"
    try:
        first = _get_when_up(f"{base}/", proc)
        assert first.status_code == 303 and first.headers["location"] == "/signin"
        with httpx.Client(base_url=base, timeout=5) as client:  # open mode: a name signs in
            form = client.get("/signin")
            assert "open queue" in form.text and 'name="token"' not in form.text
            csrf = re.search(r'name="csrf"\s+value="([^"]+)"', form.text)
            assert csrf is not None
            client.post("/signin", data={"csrf": csrf.group(1), "name": "alice"})
            page = client.get("/")
        assert page.status_code == 200 and "alice" in page.text
        assert all(iid in page.text for iid in flagged_ids)
    finally:
        proc.terminate()
        proc.wait(10)


def test_serve_off_loopback_requires_sign_in(dataset: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    served: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda asgi, **kw: served.update(app=asgi, **kw))
    code, out = cli("serve", "--host", "0.0.0.0", "--dataset", str(dataset))
    assert code == 0, out
    assert served["host"] == "0.0.0.0"
    with TestClient(served["app"]) as client:  # the page knows its address: a token is asked
        form = client.get("/signin").text
    assert 'name="token"' in form and "sign-in required" in form


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


# -- identity ------------------------------------------------------------------------------

def items_by_id(dataset: Path, status: str = "all") -> dict[str, dict[str, Any]]:
    code, out = cli("list", "--status", status, "--json", "--dataset", str(dataset))
    assert code == 0, out
    return {str(i["instance_id"]): i for i in json_lines(out)}


def test_open_queue_acts_by_name(dataset: Path, flagged_ids: list[str]) -> None:
    d = ["--dataset", str(dataset)]
    code, out = cli("claim", flagged_ids[0], "--reviewer", "alice", *d)
    assert code == 0 and f"{flagged_ids[0]}: claimed by alice until" in out
    one_error_line(*cli("claim", flagged_ids[1], *d), 2, "--reviewer NAME is required")
    one_error_line(*cli("list", "--mine", *d), 2, "--reviewer NAME is required")
    code, out = cli("list", "--mine", "--reviewer", "alice", "--json", *d)
    assert [i["instance_id"] for i in json_lines(out)] == [flagged_ids[0]]
    assert json_lines(out)[0]["claimed"] == "alice"
    code, out = cli("list", *d)
    assert "alice until" in out and all(c in out for c in ("claimed", "reviews", "language"))
    code, out = cli("show", flagged_ids[0], *d)
    assert code == 0 and "alice until" in out and "0 of 1 review recorded" in out
    # a token, even on an open queue, is checked: nobody has one here
    one_error_line(*cli("claim", flagged_ids[1], "--token", "rgr_forged", *d), 1,
                   "unknown or revoked reviewer token (from --token)")
    code, out = cli("release", flagged_ids[0], "--reviewer", "alice", *d)
    assert code == 0 and "released by alice" in out
    assert items_by_id(dataset)[flagged_ids[0]]["claimed"] == ""


def test_after_a_reviewer_is_added_the_token_names_who_acts(
        dataset: Path, flagged_ids: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    d = ["--dataset", str(dataset)]
    added = invoke("reviewer", "add", "alice", *d)
    assert added.exit_code == 0, added.output
    token = added.stdout.strip()  # the token alone on stdout; the advice on stderr
    assert re.fullmatch(r"rgr_[\w-]{40,}", token) and "not shown again" in added.stderr
    code, out = cli("reviewer", "list", *d)
    assert code == 0 and "alice" in out and "sign-in required" in out and token not in out
    one_error_line(*cli("claim", flagged_ids[0], "--reviewer", "alice", *d), 1,
                   "this queue requires sign-in")
    one_error_line(*cli("reviewer", "add", "alice", *d), 1, "reviewer 'alice' exists")
    code, out = cli("claim", flagged_ids[0], "--token", token, *d)
    assert code == 0 and "claimed by alice" in out
    monkeypatch.setenv("REPOGYM_REVIEW_TOKEN", token)  # the variable, as a reviewer sets it
    one_error_line(*cli("approve", flagged_ids[0], "--reviewer", "mallory", *d), 1,
                   "the reviewer name comes from the token")
    code, out = cli("approve", flagged_ids[0], "--reviewer", "alice", *d)  # the same: fine
    assert code == 0 and "approved by alice; added to tasks" in out
    code, out = cli("reject", flagged_ids[1], "--note", "leaks", "--reason", "statement_leak",
                    *d)
    assert code == 0 and "rejected by alice" in out
    by_id = items_by_id(dataset)
    assert by_id[flagged_ids[0]]["reviewer"] == by_id[flagged_ids[1]]["reviewer"] == "alice"
    # rotating replaces the token; disabling stops the new one too
    rotated = invoke("reviewer", "rotate", "alice", *d)
    new = rotated.stdout.strip()
    assert rotated.exit_code == 0 and new.startswith("rgr_") and new != token
    one_error_line(*cli("claim", flagged_ids[2], *d), 1, "unknown or revoked reviewer token "
                                                         "(from REPOGYM_REVIEW_TOKEN)")
    code, out = cli("claim", flagged_ids[2], *d, REPOGYM_REVIEW_TOKEN=new)
    assert code == 0 and "claimed by alice" in out
    code, out = cli("reviewer", "disable", "alice", *d)
    assert code == 0 and "alice disabled" in out
    one_error_line(*cli("release", flagged_ids[2], *d, REPOGYM_REVIEW_TOKEN=new), 1,
                   "unknown or revoked reviewer token")
    code, out = cli("reviewer", "list", *d)
    assert "no (disabled)" in out and "sign-in required" in out  # still not open again
    one_error_line(*cli("reviewer", "disable", "nobody", *d), 1, "no reviewer named 'nobody'")


def test_a_claim_keeps_others_from_deciding(dataset: Path, flagged_ids: list[str]) -> None:
    d = ["--dataset", str(dataset)]
    iid = flagged_ids[0]
    assert cli("claim", iid, "--reviewer", "alice", *d)[0] == 0
    one_error_line(*cli("approve", iid, "--reviewer", "bob", *d), 1, "claimed by alice until")
    one_error_line(*cli("claim", iid, "--reviewer", "bob", *d), 1, "claimed by alice until")
    one_error_line(*cli("release", iid, "--reviewer", "bob", *d), 1,
                   "claimed by alice, not by you (bob); nothing released")
    assert items_by_id(dataset)[iid]["state"] == "pending"
    code, out = cli("release", iid, "--reviewer", "alice", *d)
    assert code == 0 and "released by alice" in out
    code, out = cli("release", iid, "--reviewer", "alice", *d)
    assert code == 0 and "nothing to release" in out
    code, out = cli("approve", iid, "--reviewer", "bob", *d)
    assert code == 0 and "approved by bob" in out


# -- decisions -----------------------------------------------------------------------------

def test_labels_and_severities_are_checked_before_anything_is_recorded(
        dataset: Path, flagged_ids: list[str]) -> None:
    d, iid = ["--dataset", str(dataset)], flagged_ids[0]
    one_error_line(*cli("approve", iid, "--reviewer", "a", "--reason", "fine", *d), 2,
                   "unknown reason 'fine'; valid: sound, mended, statement_leak")
    one_error_line(*cli("reject", iid, "--reviewer", "a", "--note", "x", "--severity", "huge",
                        *d), 2, "unknown severity 'huge'; valid: none, minor, major, severe")
    one_error_line(*cli("approve", iid, "--reviewer", "a", "--severity", "major", *d), 2,
                   "an approval's severity is none or minor")
    one_error_line(*cli("approve", iid, "--reviewer", "a", "--reason", "trivial", *d), 2,
                   "an approval cannot carry the reason 'trivial'")
    one_error_line(*cli("reject", iid, "--reviewer", "a", "--note", "x", "--reason", "sound",
                        *d), 2, "a rejection needs the problem as its reason")
    one_error_line(*cli("reject", iid, "--reviewer", "a", "--note", "x", "--severity", "none",
                        *d), 2, "a rejection needs a severity above none")
    assert items_by_id(dataset)[iid]["state"] == "pending"
    code, out = cli("reject", iid, "--reviewer", "a", "--note", "quotes the fix", "--reason",
                    "statement_leak", "--severity", "severe", *d)
    assert code == 0 and "rejected by a" in out
    item = items_by_id(dataset)[iid]
    assert (item["label"], item["severity"], item["note"]) == ("statement_leak", "severe",
                                                               "quotes the fix")
    code, out = cli("approve", flagged_ids[1], "--reviewer", "b", "--reason", "underspecified",
                    "--severity", "minor", *d)
    assert code == 0 and "approved by b" in out
    code, out = cli("show", iid, *d)
    assert "rejected by a (statement_leak, severe)" in out and "decisions (1)" in out


# -- mending -------------------------------------------------------------------------------

def test_mend_refuses_a_leaking_statement_and_saves_nothing(dataset: Path,
                                                            flagged_ids: list[str]) -> None:
    d, iid = ["--dataset", str(dataset)], flagged_ids[0]
    one_error_line(*cli("mend", iid, "--reviewer", "alice", "--statement", CLEAN, *d), 1,
                   "claim it before mending it")
    one_error_line(*cli("mend", iid, "--reviewer", "alice", *d), 2, "nothing to mend")
    one_error_line(*cli("mend", iid, "--reviewer", "alice", "--statement", CLEAN,
                        "--statement-file", str(dataset / "x.txt"), *d), 2, "not both")
    one_error_line(*cli("mend", iid, "--reviewer", "alice", "--statement-file",
                        str(dataset / "absent.txt"), *d), 2, "--statement-file: cannot read")
    assert cli("claim", iid, "--reviewer", "alice", *d)[0] == 0
    code, out = cli("mend", iid, "--reviewer", "alice", "--statement", LEAKY, *d)
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert code == 1 and "Traceback" not in out
    assert "still gives the fix away" in lines[0]
    assert "  return a + b + 0" in lines  # the fragment, in full, on a line of its own
    assert lines[-1].startswith("error: ") and "the edit was not saved" in lines[-1]
    with ReviewQueue(DatasetStore(dataset)) as queue:
        item = queue.get(iid)
    assert item.version == 0 and item.versions == () and item.original is None
    one_error_line(*cli("mend", iid, "--reviewer", "alice", "--drop-test",
                        "tests/test_ops.py::nope", *d), 1, "not a listed test")


def test_mended_task_is_re_verified_before_approval(dataset: Path, flagged_ids: list[str],
                                                    tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    d, iid = ["--dataset", str(dataset)], flagged_ids[0]
    assert cli("claim", iid, "--reviewer", "alice", *d)[0] == 0
    statement = tmp_path / "statement.md"
    statement.write_text(CLEAN + "\n", encoding="utf-8")
    code, out = cli("mend", iid, "--reviewer", "alice", "--statement-file", str(statement),
                    "--drop-test", "tests/test_ops.py::test_mul", *d)
    assert code == 0, out
    assert (f"{iid}: saved version 1 (statement edited; dropped tests/test_ops.py::test_mul)"
            in out)
    code, out = cli("show", iid, *d)
    for expected in ("statement as flagged (version 0)", "add() gives wrong results for case 0",
                     "statement, version 1 (current)", CLEAN, "by alice at",
                     "not re-verified yet", "PASS_TO_PASS (1)", "1 (mended)"):
        assert expected in out, expected
    # the task's environment is missing (as with Docker and an image never built: "No such
    # image"): a clear error, nothing approved, nothing recorded -- fast with the local
    # provider, which needs no Docker
    monkeypatch.setenv("REPOGYM_PROVIDER", "local")
    one_error_line(*cli("approve", iid, "--reviewer", "alice", "--reason", "mended", *d), 1,
                   "re-verifying the mended task failed in its sandbox")
    _, out = cli("approve", iid, "--reviewer", "alice", *d)
    assert "not a complete local environment" in out and "nothing was decided" in out
    with ReviewQueue(DatasetStore(dataset)) as queue:
        item = queue.get(iid)
    assert item.state is ReviewState.pending and item.decisions == ()
    assert item.versions[0].verified == "" and iid not in DatasetStore(dataset).instance_ids(
        "tasks")
    # a version that does not hold is refused, and remembered
    import repogym.datasets.review.verifier as verifier

    monkeypatch.setattr(verifier, "sandbox_verifier", lambda settings: lambda row: Recheck(
        held=False, detail="no_op: without any fix every listed test passes"))
    one_error_line(*cli("approve", iid, "--reviewer", "alice", *d), 1,
                   "version 1 does not hold when re-verified (no_op: without any fix")
    _, out = cli("show", iid, *d)
    assert "re-verified: does not hold" in out

    held: list[str] = []

    def holds(settings: object) -> Any:
        def check(row: Any) -> Recheck:
            held.append(row.problem_statement)
            return Recheck(held=True, detail="gold patch 1, empty patch 0")
        return check

    assert cli("claim", flagged_ids[1], "--reviewer", "alice", *d)[0] == 0
    assert cli("mend", flagged_ids[1], "--reviewer", "alice", "--statement", CLEAN, *d)[0] == 0
    monkeypatch.setattr(verifier, "sandbox_verifier", holds)
    code, out = cli("approve", flagged_ids[1], "--reviewer", "alice", "--reason", "mended", *d)
    assert code == 0 and "approved by alice (version 1, re-verified); added to tasks" in out
    assert held == [CLEAN]  # the mended row was re-verified, once
    [row] = [r for r in DatasetStore(dataset).rows("tasks") if r.instance_id == flagged_ids[1]]
    assert row.problem_statement == CLEAN and row.evidence["review_version"] == "1"
    _, out = cli("show", flagged_ids[1], *d)
    assert "re-verified: held (gold patch 1, empty patch 0)" in out


# -- double review and stats ---------------------------------------------------------------

def test_double_review_agreeing_reviewers_approve(dataset: Path,
                                                  flagged_ids: list[str]) -> None:
    d = ["--dataset", str(dataset)]
    first, second = flagged_ids[:2]
    code, out = cli("double", first, second, "nope", first, *d)
    assert code == 0 and "2 of 3 task(s) now need two reviewers; 1 unchanged" in out
    code, out = cli("approve", first, "--reviewer", "alice", "--note", "fine", *d)
    assert code == 0 and "your approval is recorded; it waits for another reviewer (1 of 2" in out
    code, out = cli("show", first, *d)
    assert "1 of 2 reviews recorded" in out
    assert "alice" not in out and "fine" not in out  # blind: the first decision is hidden
    listed = items_by_id(dataset, "pending")[first]
    assert listed["reviews"] == 1 and "decisions" not in listed
    one_error_line(*cli("approve", first, "--reviewer", "alice", *d), 1,
                   "you (alice) already reviewed it")
    code, out = cli("approve", first, "--reviewer", "bob", *d)
    assert code == 0 and f"{first}: approved by bob; added to tasks" in out
    assert first in DatasetStore(dataset).instance_ids("tasks")
    code, out = cli("show", first, *d)
    assert "decisions (2)" in out and "alice" in out and "bob" in out
    assert [x["reviewer"] for x in items_by_id(dataset)[first]["decisions"]] == ["alice", "bob"]
    # disagreeing reviewers leave the task disputed for a third
    assert cli("approve", second, "--reviewer", "alice", *d)[0] == 0
    code, out = cli("reject", second, "--reviewer", "bob", "--note", "leaks", "--reason",
                    "statement_leak", *d)
    assert code == 0 and "the reviewers disagree; a third reviewer's decision is final" in out
    code, out = cli("list", *d)
    assert "pending (disputed)" in out and "2/3" in out

    result = invoke("stats", "--json", *d)
    assert result.exit_code == 0, result.output
    stats = json.loads(result.stdout)
    assert stats["decisions"] == 4 and stats["pending"] == 2 and stats["disputed"] == 1
    assert {r["reviewer"]: (r["approved"], r["rejected"]) for r in stats["reviewers"]} == {
        "alice": (2, 0), "bob": (1, 1)}
    [leak, overall] = stats["agreement"]
    assert (leak["reason"], leak["pairs"], leak["action"]) == ("statement_leak", 2, 0.5)
    assert overall["reason"] == "all"
    code, out = cli("stats", "--days", "7", *d)
    assert code == 0 and "4 decision(s) since" in out and "bob: 2 (1 approved, 1 rejected)" in out
    one_error_line(*cli("stats", "--days", "0", *d), 2, "--days: a number of days above 0")


def test_double_fraction_setting_samples_at_import(dataset: Path,
                                                   flagged_ids: list[str]) -> None:
    items = items_by_id(dataset, "pending")  # imported with the default fraction 0: none
    assert {i["reviews_needed"] for i in items.values()} == {1}
    [new] = write_flagged(dataset, 1, start=20)
    code, out = cli("list", "--json", "--dataset", str(dataset),
                    REPOGYM_REVIEW_DOUBLE_FRACTION="1")
    assert code == 0 and {i["instance_id"]: i["reviews_needed"]
                          for i in json_lines(out)}[new] == 2
    code, out = cli("claim", new, "--reviewer", "a", "--dataset", str(dataset),
                    REPOGYM_REVIEW_CLAIM_MINUTES="0")
    one_error_line(code, out, 1, "claim_minutes must be positive")


# -- filters -------------------------------------------------------------------------------

def test_list_filters_by_reason_age_repo_and_language(dataset: Path,
                                                      flagged_ids: list[str]) -> None:
    recent = judged(30).model_copy(update={"created_at": utcnow() - timedelta(hours=1)})
    DatasetStore(dataset).write([recent, judged(31, reason="underspecified"),
                                 judged(32, reason="probe:empty_patch"),
                                 judged(33, repo="other__lib")])

    def ids(*args: str) -> list[str]:
        code, out = cli("list", "--json", "--dataset", str(dataset), *args)
        assert code == 0, out
        return [str(i["instance_id"]) for i in json_lines(out)]

    old_leaks = ids("--reason", "statement_leak", "--older-than", "1d", "--repo", "acme__calc")
    assert old_leaks == flagged_ids  # not the recent one, nor the other reasons
    assert recent.candidate.instance_id in ids("--reason", "statement_leak")
    assert ids("--newer-than", "2h") == [recent.candidate.instance_id]
    assert ids("--reason", "probe:") == [judged(32).candidate.instance_id]
    assert ids("--repo", "other__lib") == [judged(33, repo="other__lib").candidate.instance_id]
    assert ids("--language", "javascript") == []
    assert len(ids("--older-than", "45m")) == 7
    for bad in ("2x", "-3d", "d", "99999999d"):
        one_error_line(*cli("list", "--older-than", bad, "--dataset", str(dataset)), 2,
                       "--older-than: a duration such as 45m, 2h, 3d or 1w")
