"""End to end in a real browser: headless Chromium (Playwright) drives the review page served
by uvicorn, on SQLite and on a real PostgreSQL (``db_url``). Two reviewers sign in with
their tokens in separate browser contexts; a task claimed by one cannot be decided by the
other; a leaking statement of a real task is mended and approved (re-verified in its local
environment); a forged form without the CSRF token is refused; the keyboard works; the
decisions land in the dataset and show in the CLI."""

from __future__ import annotations

import json
import shutil
import socket
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import pytest
import uvicorn
from typer.testing import CliRunner

from repogym.cli import app as cli_app
from repogym.datasets.review import ReviewQueue, ReviewState
from repogym.datasets.review.auth import Reviewers
from repogym.datasets.review.verifier import sandbox_verifier
from repogym.datasets.review.web import create_app, task_url
from repogym.datasets.store import DatasetStore
from repogym.schemas.records import Status
from tests.review.conftest import XSS, write_flagged
from tests.review.real import RealReview, real_review  # noqa: F401

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

CHROMIUM = "/usr/bin/chromium"


class Served:
    """A review page served by uvicorn in a thread over a copy of a dataset."""

    def __init__(self, root: Path, queue: ReviewQueue) -> None:
        self.root, self.queue = root, queue
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.base = f"http://127.0.0.1:{port}"
        self.server = uvicorn.Server(uvicorn.Config(create_app(queue), host="127.0.0.1",
                                                    port=port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        for _ in range(200):
            if self.server.started:
                break
            self.thread.join(0.05)
        assert self.server.started, "uvicorn did not start"
        people = Reviewers(queue.engine, queue.url)
        self.tokens = {name: people.add(name) for name in ("alice", "bob")}

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.queue.close()


@pytest.fixture
def served(tmp_path: Path, real_review: RealReview,  # noqa: F811
           db_url: str | None) -> Iterator[Served]:
    """Real flagged tasks (leaking statements) plus synthetic ones, one with an XSS payload."""
    root = tmp_path / "data"
    shutil.copytree(real_review.root, root)
    write_flagged(root, 2, start=0)
    write_flagged(root, 1, start=5, statement=XSS)
    queue = ReviewQueue(DatasetStore(root), db_url,
                        verifier=sandbox_verifier(real_review.settings))
    s = Served(root, queue)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"{CHROMIUM} is missing (scripts/setup installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
        yield b
        b.close()


def signed_in(browser: Browser, served: Served, name: str) -> tuple[BrowserContext, Page]:
    """A browser context (its own cookies) signed in as ``name`` with their token."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(served.base + "/")
    page.wait_for_url("**/signin")
    page.fill('input[name="token"]', served.tokens[name])
    page.click("#signin-button")
    page.wait_for_selector("#who")
    assert page.inner_text("#who") == f"signed in as {name}"
    return context, page


def test_two_reviewers_a_claim_holds_and_a_forged_form_is_refused(
        browser: Browser, served: Served) -> None:
    pending = [it.instance_id for it in served.queue.list("pending")]
    iid = next(i for i in pending if i.startswith("acme__calc.00000000"))
    ctx_a, alice = signed_in(browser, served, "alice")
    ctx_b, bob = signed_in(browser, served, "bob")
    bob.goto(served.base + task_url(iid))  # bob opens the task while it is free
    assert bob.locator("#claim-button").count() == 1

    alice.goto(served.base + "/")
    rows = alice.locator("tr.item")
    index = [rows.nth(i).get_attribute("data-id") for i in range(rows.count())].index(iid)
    for _ in range(index):
        alice.keyboard.press("j")  # the keyboard: move to the task, claim it
    assert alice.locator("tr.item.selected").get_attribute("data-id") == iid
    alice.keyboard.press("c")
    alice.wait_for_selector("#message")
    assert alice.inner_text("#message").startswith("claimed by alice until")

    bob.click("#claim-button")  # too late: alice holds it
    bob.wait_for_selector("#error")
    assert "claimed by alice until" in bob.inner_text("#error")
    assert bob.locator("#approve").count() == 0 and bob.locator("#reject").count() == 0
    csrf = bob.get_attribute('input[name="csrf"]', "value") or ""
    status = _submit(bob, f"{task_url(iid)}/reject",  # bob's own valid form, all the same
                     {"csrf": csrf, "note": "mine now", "label": "trivial",
                      "severity": "major"})
    assert status == 409 and "claimed by alice" in bob.inner_text("#error")
    status = _submit(bob, f"{task_url(iid)}/release", {})  # a forged form: no CSRF token
    assert status == 403 and "CSRF token is missing or wrong" in bob.inner_text("#error")

    alice.goto(served.base + task_url(iid))
    alice.select_option("#label", "statement_leak")
    alice.select_option("#severity", "minor")
    alice.fill("#note-input", "only names the function")
    alice.click("#approve")
    alice.wait_for_selector("#message")
    assert alice.inner_text("#message") == "approved by alice"
    assert served.queue.get(iid).state is ReviewState.approved

    alice.goto(served.base + "/?status=all")  # an XSS payload in a statement stays text
    hostile = next(i for i in (it.instance_id for it in served.queue.list("pending"))
                   if i.startswith("acme__calc.00000005"))
    dialogs: list[str] = []
    alice.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    alice.goto(served.base + task_url(hostile))
    assert alice.inner_text("#statement") == XSS
    assert alice.evaluate("window.__xss") is None and not dialogs
    ctx_a.close()
    ctx_b.close()
    _check_store_and_cli(served, iid)


def _submit(page: Page, action: str, fields: dict[str, str]) -> int:
    """Build and submit a form in ``page`` (as a hostile page script would); the status."""
    with page.expect_navigation() as nav:
        page.evaluate("""([action, fields]) => {
            const f = document.createElement('form');
            f.method = 'post'; f.action = action;
            for (const [k, v] of Object.entries(fields)) {
                const i = document.createElement('input');
                i.type = 'hidden'; i.name = k; i.value = v; f.appendChild(i);
            }
            document.body.appendChild(f); f.submit();
        }""", [action, fields])
    response = nav.value
    assert response is not None
    return response.status


def test_mend_a_leaking_statement_then_approve_it(browser: Browser, served: Served,
                                                  real_review: RealReview) -> None:  # noqa: F811
    task = real_review.leaky
    iid = task.instance_id
    flagged = served.queue.get(iid).task.problem_statement
    ctx, alice = signed_in(browser, served, "alice")
    alice.goto(served.base + task_url(iid))
    assert alice.locator("mark.quoted").count() >= 2  # the quoted fix: statement and diff
    alice.click("#claim-button")
    alice.wait_for_selector("#message")
    alice.keyboard.press("e")  # the keyboard opens the editor
    assert alice.evaluate("document.activeElement.id") == "statement-input"

    alice.fill("#statement-input", task.clean + "\n\nThe fix: " + task.fragment)
    alice.click("#save-mend")  # still leaking: refused, the draft kept
    alice.wait_for_selector("#error")
    assert "still gives the fix away" in alice.inner_text("#error")
    assert served.queue.get(iid).version == 0

    alice.fill("#statement-input", task.clean)
    alice.click("#save-mend")
    alice.wait_for_selector("#message")
    assert alice.inner_text("#message").startswith("saved version 1 (statement edited")
    assert alice.locator("#versions").count() == 1
    alice.select_option("#label", "mended")
    alice.click("#approve")  # re-verified in its local environment first
    alice.wait_for_selector("#message", timeout=120_000)
    assert alice.inner_text("#message") == "approved by alice"
    ctx.close()

    item = served.queue.get(iid)
    assert item.versions[0].verified == "held", item.versions
    [row] = [r for r in DatasetStore(served.root).rows("tasks") if r.instance_id == iid]
    assert row.problem_statement == task.clean and task.fragment not in row.problem_statement
    assert row.evidence["review_original_statement"] == flagged
    assert row.evidence["review_version"] == "1" and row.evidence["review_label"] == "mended"


def _check_store_and_cli(served: Served, approved: str) -> None:
    [row] = [r for r in DatasetStore(served.root).rows("tasks") if r.instance_id == approved]
    assert row.status is Status.accept and row.evidence["review_reviewer"] == "alice"
    assert row.evidence["review_note"] == "only names the function"
    env = {"REPOGYM_REVIEW_DB_URL": served.queue.url, "REPOGYM_REVIEW_TOKEN": ""}
    result = CliRunner().invoke(cli_app, ["review", "list", "--status", "all", "--json",
                                          "--dataset", str(served.root)], env=env)
    assert result.exit_code == 0, result.output
    by_id = {i["instance_id"]: i for i in map(json.loads, result.output.splitlines())}
    assert (by_id[approved]["state"], by_id[approved]["reviewer"]) == ("approved", "alice")
