"""The review web app over HTTP (in-process ASGI client): pages, forms, escaping, errors."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

import pytest
from fastapi.testclient import TestClient

from repogym.datasets.review import ReviewQueue, ReviewState
from repogym.datasets.review_web import create_app, task_url
from repogym.datasets.store import DatasetStore
from tests.review.conftest import XSS, write_flagged

FORM = {"content-type": "application/x-www-form-urlencoded"}


@pytest.fixture
def client(queue: ReviewQueue) -> Iterator[TestClient]:
    with TestClient(create_app(queue)) as c:
        yield c


def test_list_shows_pending_first_with_reason_repo_and_age(client: TestClient, queue: ReviewQueue,
                                                           flagged_ids: list[str]) -> None:
    queue.reject(flagged_ids[0], "bob", "no")
    page = client.get("/")
    assert page.status_code == 200
    rows = re.findall(r'<tr class="item" data-id="([^"]+)">', page.text)
    assert rows == [flagged_ids[1], flagged_ids[2], flagged_ids[0]]
    assert "statement_leak" in page.text and "acme__calc" in page.text and ">bob<" in page.text
    assert re.search(r"<td>\d+d</td>", page.text)  # age of a verdict made in 2024
    pending = client.get("/?status=pending").text
    assert flagged_ids[0] not in pending and flagged_ids[1] in pending


def test_detail_shows_everything_a_reviewer_needs(client: TestClient,
                                                  flagged_ids: list[str]) -> None:
    page = client.get(task_url(flagged_ids[1]))
    assert page.status_code == 200
    text = page.text
    assert "add() gives wrong results for case 1." in text
    assert "tests/test_ops.py::test_add_1" in text and "tests/test_ops.py::test_mul" in text
    assert "oracle_runs" in text and "noop_failing" in text
    assert "statement quotes the fix: &#39;a + b + 1&#39;" in text  # detail, escaped
    # both patches, coloured per line by Pygments (gd = deleted line, gi = inserted line)
    assert text.count('<div class="diff">') == 2
    assert '<span class="gd">-    return a + b + 1</span>' in text
    assert '<span class="gi">+    return a - b + 1</span>' in text
    assert ".diff .gi {" in text  # the colours' style sheet
    assert 'id="approve"' in text and 'id="reject"' in text and 'name="reviewer"' in text


def test_test_patch_is_shown_when_there_is_one(dataset: Path, queue: ReviewQueue,
                                               client: TestClient) -> None:
    diff = ("--- a/tests/test_new.py\n+++ b/tests/test_new.py\n@@ -0,0 +1 @@\n"
            "+def test_new(): pass\n")
    [iid] = write_flagged(dataset, 1, start=30, test_patch=diff)
    text = client.get(task_url(iid)).text
    assert "Test patch" in text and text.count('<div class="diff">') == 3


def test_untrusted_text_is_escaped(dataset: Path, client: TestClient) -> None:
    [iid] = write_flagged(dataset, 1, start=40, statement=XSS, reason='<b onmouseover="x">r</b>')
    for text in (client.get(task_url(iid)).text, client.get("/").text):
        assert "<script>window.__xss" not in text and "<img src=x" not in text
        assert '<b onmouseover="x">' not in text
    assert "&lt;script&gt;window.__xss = 1&lt;/script&gt;" in client.get(task_url(iid)).text


def test_approve_redirects_with_a_message_and_writes_the_task(
        client: TestClient, dataset: Path, flagged_ids: list[str]) -> None:
    resp = client.post(f"{task_url(flagged_ids[0])}/approve", headers=FORM,
                       content="reviewer=alice&note=fine+by+me", follow_redirects=False)
    assert resp.status_code == 303
    assert resp.headers["location"] == f"{task_url(flagged_ids[0])}?msg=approved+by+alice"
    page = client.get(resp.headers["location"])
    assert '<p class="message" id="message">approved by alice</p>' in page.text
    assert 'id="decide"' not in page.text and "fine by me" in page.text  # no form once decided
    [row] = [r for r in DatasetStore(dataset).rows("tasks") if r.instance_id == flagged_ids[0]]
    assert row.evidence["review_reviewer"] == "alice"


def test_reject_records_reviewer_and_note(client: TestClient, queue: ReviewQueue,
                                          flagged_ids: list[str]) -> None:
    resp = client.post(f"{task_url(flagged_ids[1])}/reject", headers=FORM,
                       content="reviewer=bob&note=leaks+the+fix")
    assert resp.status_code == 200 and "rejected by bob" in resp.text
    item = queue.get(flagged_ids[1])
    assert (item.state, item.reviewer, item.note) == (ReviewState.rejected, "bob", "leaks the fix")


def test_a_lost_race_shows_the_conflict(client: TestClient, queue: ReviewQueue,
                                        flagged_ids: list[str]) -> None:
    queue.reject(flagged_ids[0], "bob", "no")
    resp = client.post(f"{task_url(flagged_ids[0])}/approve", headers=FORM,
                       content="reviewer=alice&note=")
    assert resp.status_code == 409
    assert re.search(r'id="error">error: \S+: already rejected by bob at .*; your approval '
                     r"was not recorded", resp.text)
    assert queue.get(flagged_ids[0]).reviewer == "bob"


@pytest.mark.parametrize("path, headers, body, code, message", [
    ("/reject", FORM, "reviewer=bob&note=", 400, "note saying why is required"),
    ("/approve", FORM, "note=x", 400, "reviewer name is required"),
    ("/approve", {"content-type": "application/json"}, '{"reviewer": "x"}', 400,
     "expected a form"),
])
def test_bad_form_is_an_error_on_the_page(client: TestClient, queue: ReviewQueue,
                                          flagged_ids: list[str], path: str,
                                          headers: dict[str, str], body: str, code: int,
                                          message: str) -> None:
    resp = client.post(task_url(flagged_ids[0]) + path, headers=headers, content=body)
    assert resp.status_code == code and message in resp.text
    assert queue.get(flagged_ids[0]).state is ReviewState.pending


def test_unknown_task_and_status(client: TestClient) -> None:
    resp = client.get("/tasks/no_such_task")
    assert resp.status_code == 404 and "no_such_task: not in the review queue" in resp.text
    resp = client.post("/tasks/no_such_task/approve", headers=FORM, content="reviewer=a")
    assert resp.status_code == 404
    resp = client.get("/?status=bogus")
    assert resp.status_code == 400 and "unknown status" in resp.text
