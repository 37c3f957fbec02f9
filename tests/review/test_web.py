"""The review web app over HTTP (in-process ASGI client): sign-in, sessions and CSRF, claims,
decisions with labels, mending, filters, escaping, errors. The browser tests
(test_browser.py) drive the same app in Chromium."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

import pytest
from fastapi.testclient import TestClient

from repogym.datasets.review import ReviewQueue, ReviewState
from repogym.datasets.review.auth import COOKIE, Reviewers
from repogym.datasets.review.web import create_app, diff_html, marked, task_url
from repogym.datasets.store import DatasetStore
from tests.review.conftest import XSS, sqlite_only, write_flagged

FORM = {"content-type": "application/x-www-form-urlencoded"}
CSRF = re.compile(r'name="csrf"\s+value="([^"]+)"')


def csrf_of(client: TestClient, path: str = "/signin") -> str:
    match = CSRF.search(client.get(path).text)
    assert match, f"no CSRF token on {path}"
    return match.group(1)


def sign_in(client: TestClient, name: str = "", token: str = "",
            queue: ReviewQueue | None = None) -> None:
    """Sign in by name (open mode) or by token; given the queue, a queue that requires
    sign-in (PostgreSQL) gets ``name`` added as a reviewer and its token used."""
    page = csrf_of(client)
    if not token and queue is not None and 'name="token"' in client.get("/signin").text:
        token = Reviewers(queue.engine, queue.url).add(name)
    body = {"csrf": page} | ({"token": token} if token else {"name": name})
    resp = client.post("/signin", data=body, follow_redirects=False)
    assert resp.status_code == 303 and resp.headers["location"] == "/", resp.text


def post(client: TestClient, iid: str, action: str, **fields: str) -> object:
    fields.setdefault("csrf", csrf_of(client, task_url(iid)))
    return client.post(f"{task_url(iid)}/{action}", data=fields, follow_redirects=False)


@pytest.fixture
def app(queue: ReviewQueue):  # type: ignore[no-untyped-def]
    return create_app(queue)


@pytest.fixture
def client(app) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    with TestClient(app) as c:
        yield c


@pytest.fixture
def alice(client: TestClient, queue: ReviewQueue) -> TestClient:
    sign_in(client, "alice", queue=queue)
    return client


# -- open mode ----------------------------------------------------------------------------

@sqlite_only
def test_open_mode_says_so_and_asks_only_for_a_name(client: TestClient) -> None:
    resp = client.get("/", follow_redirects=False)
    assert resp.status_code == 303 and resp.headers["location"] == "/signin"
    page = client.get("/signin").text
    assert "open queue: no sign-in" in page and 'name="name"' in page and 'name="token"' not in page
    sign_in(client, "alice")
    assert "signed in as <b>alice</b>" in client.get("/").text


def test_list_shows_pending_first_with_claims_and_age(alice: TestClient, queue: ReviewQueue,
                                                      flagged_ids: list[str]) -> None:
    queue.reject(flagged_ids[0], "bob", "no", label="statement_leak")
    queue.claim(flagged_ids[2], "carol")
    page = alice.get("/?status=all").text
    rows = re.findall(r'<tr class="item" data-id="([^"]+)"', page)
    assert rows == [flagged_ids[1], flagged_ids[2], flagged_ids[0]]
    assert '<td class="claim">carol</td>' in page and "acme__calc" in page and ">bob<" in page
    assert re.search(r"<td>\d+d</td>", page)  # age of a verdict made in 2024
    pending = alice.get("/").text  # pending by default
    assert flagged_ids[0] not in pending and flagged_ids[1] in pending


def test_filters_by_repo_language_reason_and_age(alice: TestClient, dataset: Path,
                                                 flagged_ids: list[str]) -> None:
    [other] = write_flagged(dataset, 1, start=60, repo="acme__other", reason="underspecified")
    ids = lambda q: re.findall(r'<tr class="item" data-id="([^"]+)"', alice.get(q).text)  # noqa: E731
    assert ids("/?repo=acme__other") == [other]
    assert ids("/?reason=underspecified") == [other]
    assert set(ids("/?reason=statement_leak")) == set(flagged_ids)
    assert ids("/?language=go") == [] and len(ids("/?language=python")) == 4
    assert len(ids("/?older=24")) == 4 and ids("/?newer=24") == []  # flagged in 2024
    page = alice.get("/").text
    assert "<option>acme__other</option>" in page  # the menus offer what the queue holds
    assert "older: a number of hours" in alice.get("/?older=soon").text


def test_detail_marks_what_the_statement_quotes_from_the_fix(alice: TestClient, dataset: Path
                                                             ) -> None:
    [iid] = write_flagged(dataset, 1, start=7, statement=(
        "add() is broken; it should say `return a + b + 7` instead."))
    page = alice.get(task_url(iid)).text
    assert page.count('<mark class="quoted">return a + b + 7</mark>') >= 2  # statement, diff
    assert 'id="quoted"' in page
    assert '<div class="add">+    <mark class="quoted">return a + b + 7</mark></div>' in page
    assert "tests/test_ops.py::test_add_7" in page and "oracle_runs" in page


def test_marked_and_diff_escape_everything() -> None:
    assert marked("<b>x</b> and x", ["x"]) == (
        '&lt;b&gt;<mark class="quoted">x</mark>&lt;/b&gt; and <mark class="quoted">x</mark>')
    html = diff_html("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-<script>\n+ok\n", ["ok"])
    assert "<script>" not in html and '<div class="del">-&lt;script&gt;</div>' in html
    assert '<div class="add">+<mark class="quoted">ok</mark></div>' in html


def test_untrusted_text_is_escaped_and_scripts_need_the_nonce(alice: TestClient,
                                                              dataset: Path) -> None:
    [iid] = write_flagged(dataset, 1, start=40, statement=XSS, reason='<b onmouseover="x">r</b>')
    resp = alice.get(task_url(iid))
    for text in (resp.text, alice.get("/").text):
        assert "<script>window.__xss" not in text and "<img src=x" not in text
        assert '<b onmouseover="x">' not in text
    assert "&lt;script&gt;window.__xss = 1&lt;/script&gt;" in resp.text
    policy = resp.headers["content-security-policy"]
    nonce = re.search(r"script-src 'nonce-([^']+)'", policy).group(1)  # type: ignore[union-attr]
    assert f'<script nonce="{nonce}">' in resp.text and "default-src 'none'" in policy


# -- claims and decisions -------------------------------------------------------------------

def test_claim_then_approve_with_a_label_writes_the_task(alice: TestClient, dataset: Path,
                                                         flagged_ids: list[str]) -> None:
    iid = flagged_ids[0]
    assert 'id="approve"' not in alice.get(task_url(iid)).text  # claim first
    resp = post(alice, iid, "claim")
    assert resp.status_code == 303  # type: ignore[attr-defined]
    page = alice.get(task_url(iid)).text
    assert re.search(r'id="claim">alice until \d\d:\d\d UTC', page) and 'id="approve"' in page
    resp = post(alice, iid, "approve", label="statement_leak", severity="minor",
                note="only the name")
    assert resp.headers["location"] == f"{task_url(iid)}?msg=approved+by+alice"  # type: ignore[attr-defined]
    page = alice.get(resp.headers["location"]).text  # type: ignore[attr-defined]
    assert '<p class="message" id="message">approved by alice</p>' in page
    assert 'id="decide"' not in page and "only the name" in page
    [row] = [r for r in DatasetStore(dataset).rows("tasks") if r.instance_id == iid]
    assert (row.evidence["review_reviewer"], row.evidence["review_label"],
            row.evidence["review_severity"]) == ("alice", "statement_leak", "minor")


def test_a_claimed_task_cannot_be_decided_by_another(client: TestClient, app,  # type: ignore[no-untyped-def]
                                                     queue: ReviewQueue,
                                                     flagged_ids: list[str]) -> None:
    iid = flagged_ids[1]
    sign_in(client, "alice", queue=queue)
    post(client, iid, "claim")
    with TestClient(app) as bob:
        sign_in(bob, "bob", queue=queue)
        page = bob.get(task_url(iid)).text
        assert "alice until" in page and 'id="claim-button"' not in page
        resp = post(bob, iid, "reject", note="no", label="trivial", severity="major")
        assert resp.status_code == 409  # type: ignore[attr-defined]
        assert "claimed by alice until" in resp.text  # type: ignore[attr-defined]
    assert queue.get(iid).state is ReviewState.pending


def test_a_label_breaking_the_rules_is_refused(alice: TestClient, queue: ReviewQueue,
                                               flagged_ids: list[str]) -> None:
    iid = flagged_ids[0]
    post(alice, iid, "claim")
    resp = post(alice, iid, "approve", label="sound", severity="severe")
    assert resp.status_code == 400 and "severity is none or minor" in resp.text  # type: ignore[attr-defined]
    resp = post(alice, iid, "reject", label="sound", severity="major", note="x")
    assert resp.status_code == 400 and "needs the problem as its reason" in resp.text  # type: ignore[attr-defined]
    resp = post(alice, iid, "reject", label="nonsense", severity="major", note="x")
    assert resp.status_code == 400 and "unknown reason &#39;nonsense&#39;" in resp.text  # type: ignore[attr-defined]
    assert queue.get(iid).state is ReviewState.pending


def test_a_lost_race_shows_the_conflict(alice: TestClient, queue: ReviewQueue,
                                        flagged_ids: list[str]) -> None:
    queue.reject(flagged_ids[0], "bob", "no")
    resp = post(alice, flagged_ids[0], "approve")
    assert resp.status_code == 409  # type: ignore[attr-defined]
    assert re.search(r'id="error">error: \S+: already rejected by bob at .*; your approval '
                     r"was not recorded", resp.text)  # type: ignore[attr-defined]


def test_mend_refuses_a_statement_that_still_leaks(alice: TestClient, queue: ReviewQueue,
                                                   flagged_ids: list[str]) -> None:
    iid = flagged_ids[0]
    post(alice, iid, "claim")
    resp = post(alice, iid, "mend", statement="Use `return a + b + 0` in add.")
    assert resp.status_code == 400  # type: ignore[attr-defined]
    assert "still gives the fix away" in resp.text  # type: ignore[attr-defined]
    assert "Use `return a + b + 0` in add.</textarea>" in resp.text  # type: ignore[attr-defined]  # draft kept
    assert queue.get(iid).version == 0
    resp = post(alice, iid, "mend", statement="Adding two numbers gives a wrong total.",
                drop="tests/test_ops.py::test_mul")
    assert resp.status_code == 303  # type: ignore[attr-defined]
    item = queue.get(iid)
    assert item.version == 1 and item.task.problem_statement.startswith("Adding two")
    assert "tests/test_ops.py::test_mul" not in item.task.PASS_TO_PASS
    assert item.original is not None and item.original.problem_statement.startswith("add()")
    page = alice.get(task_url(iid)).text
    assert 'id="versions"' in page and "statement edited; dropped tests/test_ops.py::test_mul" in page


# -- CSRF and sign-in -------------------------------------------------------------------------

@pytest.mark.parametrize("csrf", ["", "forged-token"])
def test_a_form_without_the_session_s_csrf_token_is_refused(alice: TestClient,
                                                            queue: ReviewQueue,
                                                            flagged_ids: list[str],
                                                            csrf: str) -> None:
    resp = post(alice, flagged_ids[0], "claim", csrf=csrf)
    assert resp.status_code == 403 and "CSRF token is missing or wrong" in resp.text  # type: ignore[attr-defined]
    assert queue.get(flagged_ids[0]).claimed_by == ""


def test_a_form_from_a_stranger_without_a_session_is_refused(client: TestClient,
                                                             queue: ReviewQueue,
                                                             flagged_ids: list[str]) -> None:
    client.cookies.clear()
    resp = client.post(f"{task_url(flagged_ids[0])}/approve", headers=FORM,
                       content="reviewer=mallory&csrf=x")
    assert resp.status_code == 403
    assert queue.get(flagged_ids[0]).state is ReviewState.pending


def test_with_a_reviewer_added_sign_in_needs_a_token(client: TestClient, queue: ReviewQueue,
                                                     flagged_ids: list[str]) -> None:
    token = Reviewers(queue.engine, queue.url).add("alice")
    page = client.get("/signin").text
    assert 'name="token"' in page and "sign-in required" in page
    resp = client.post("/signin", data={"csrf": csrf_of(client), "token": "rgr_wrong"})
    assert resp.status_code == 401 and "unknown or revoked reviewer token" in resp.text
    resp = client.post("/signin", data={"csrf": csrf_of(client), "name": "alice"})
    assert resp.status_code == 401  # a name alone signs nobody in
    before = client.cookies.get(COOKIE)
    sign_in(client, token=token)
    assert client.cookies.get(COOKIE) != before  # a fresh session on sign-in
    post(client, flagged_ids[0], "claim")
    assert queue.get(flagged_ids[0]).claimed_by == "alice"  # the name came from the token
    client.post("/signout", data={"csrf": csrf_of(client, "/")})
    assert client.get("/", follow_redirects=False).status_code == 303


@sqlite_only
def test_a_shared_address_requires_sign_in_even_on_sqlite(queue: ReviewQueue) -> None:
    with TestClient(create_app(queue, host="0.0.0.0")) as c:
        assert 'name="token"' in c.get("/signin").text


def test_stats_page_shows_agreement(alice: TestClient, queue: ReviewQueue,
                                    flagged_ids: list[str]) -> None:
    queue.require_two([flagged_ids[0]])
    queue.approve(flagged_ids[0], "bob")
    queue.reject(flagged_ids[0], "carol", "leaks", label="statement_leak")
    page = alice.get("/stats").text
    assert "agreement [statement_leak] over 1 pair(s): action 0%" in page
    assert "1 decision(s)" not in page and "(1 disputed)" in page


def test_unknown_task_and_status(alice: TestClient) -> None:
    resp = alice.get("/tasks/no_such_task")
    assert resp.status_code == 404 and "no_such_task: not in the review queue" in resp.text
    resp = post(alice, "no_such_task", "approve", csrf=csrf_of(alice, "/"))
    assert resp.status_code == 404  # type: ignore[attr-defined]
    resp = alice.get("/?status=bogus")
    assert resp.status_code == 400 and "unknown status" in resp.text


@pytest.mark.parametrize("https", [False, True])
def test_the_session_cookie_is_httponly_strict_and_secure_behind_tls(queue: ReviewQueue,
                                                                     https: bool) -> None:
    with TestClient(create_app(queue, https=https)) as c:
        cookie = c.get("/signin").headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert ("secure" in cookie.replace("samesite", "")) == https


def test_the_list_shows_at_most_a_page_and_says_how_many_match(
        alice: TestClient, dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import repogym.datasets.review.web as web

    monkeypatch.setattr(web, "PAGE_ITEMS", 2)
    page = alice.get("/").text
    assert len(re.findall(r'<tr class="item"', page)) == 2
    assert "3 item(s), the first 2 shown" in page
