"""End to end in a real browser: headless Chromium (Playwright) drives the review page served
by uvicorn; the decisions must land in the dataset and the queue, and show in the CLI."""

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
from repogym.datasets.review_web import create_app, task_url
from repogym.datasets.store import DatasetStore
from repogym.schemas.records import Status
from tests.review.conftest import XSS, write_flagged

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, list[str]]]:
    """(base URL, dataset root, flagged ids) with uvicorn serving the page in a thread."""
    root = tmp_path_factory.mktemp("browser") / "data"
    ids = write_flagged(root, 2) + write_flagged(root, 1, start=5, statement=XSS)
    queue = ReviewQueue(DatasetStore(root))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(queue), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        thread.join(0.05)
    assert server.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}", root, ids
    server.should_exit = True
    thread.join(10)
    queue.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"{CHROMIUM} is missing (scripts/setup installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
        yield b
        b.close()


def decide(page: Page, base: str, iid: str, reviewer: str, note: str, button: str) -> None:
    """From the list, open the task, fill the form and press Approve or Reject."""
    page.goto(base + "/")
    page.click(f'a[href="{task_url(iid)}"]')
    page.wait_for_url(f"**{task_url(iid)}")
    page.fill('input[name="reviewer"]', reviewer)
    page.fill('textarea[name="note"]', note)
    page.click(f"#{button}")
    page.wait_for_selector("#message")


def test_review_in_a_browser(served: tuple[str, Path, list[str]], browser: Browser) -> None:
    base, root, (first, second, hostile) = served
    page = browser.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(base + "/")
    assert page.locator("tr.item").count() == 3
    assert page.locator(f'tr.item[data-id="{first}"] td').nth(1).inner_text() == "pending"

    stale = browser.new_page()  # a second reviewer opens the first task before it is decided
    stale.goto(base + task_url(first))

    decide(page, base, first, "alice", "leak is harmless", "approve")
    assert page.inner_text("#message") == "approved by alice"
    assert page.inner_text("#state").startswith("approved by alice")
    decide(page, base, second, "bob", "statement gives the fix away", "reject")
    assert page.inner_text("#message") == "rejected by bob"

    stale.fill('input[name="reviewer"]', "mallory")
    stale.fill('textarea[name="note"]', "too late")
    stale.click("#reject")
    stale.wait_for_selector("#error")
    assert "already approved by alice" in stale.inner_text("#error")

    page.goto(base + task_url(hostile))  # an XSS payload in the statement stays text
    assert page.inner_text("#statement") == XSS
    assert page.evaluate("window.__xss") is None and not dialogs
    assert page.locator("#statement script, #statement img").count() == 0

    _check_store_and_cli(root, first, second)


def _check_store_and_cli(root: Path, first: str, second: str) -> None:
    [row] = [r for r in DatasetStore(root).rows("tasks") if r.instance_id == first]
    assert row.status is Status.accept and row.evidence["review_reviewer"] == "alice"
    assert row.evidence["review_note"] == "leak is harmless"
    assert second not in DatasetStore(root).instance_ids("tasks")
    with ReviewQueue(DatasetStore(root)) as queue:
        rejected = queue.get(second)
    assert (rejected.state, rejected.reviewer, rejected.note) == (
        ReviewState.rejected, "bob", "statement gives the fix away")
    result = CliRunner().invoke(cli_app, ["review", "list", "--status", "all", "--json",
                                          "--dataset", str(root)],
                                env={"REPOGYM_REVIEW_DB_URL": ""})
    assert result.exit_code == 0, result.output
    by_id = {i["instance_id"]: i for i in map(json.loads, result.output.splitlines())}
    assert (by_id[first]["state"], by_id[first]["reviewer"]) == ("approved", "alice")
    assert (by_id[second]["state"], by_id[second]["reviewer"], by_id[second]["note"]) == (
        "rejected", "bob", "statement gives the fix away")
    table = CliRunner().invoke(cli_app, ["review", "list", "--status", "all", "--dataset",
                                         str(root)], env={"COLUMNS": "200",
                                                          "REPOGYM_REVIEW_DB_URL": ""})
    assert table.exit_code == 0 and "alice" in table.output and "bob" in table.output
