"""``repogym review ...``: the queue of tasks the judge flagged for a human decision.

    repogym review list [--status pending|approved|rejected|all] [--json]
    repogym review show ID
    repogym review approve ID --reviewer NAME [--note TEXT]
    repogym review reject ID --reviewer NAME --note TEXT
    repogym review serve [--host 127.0.0.1] [--port 8765]

Every command takes ``--dataset DIR`` (default ``REPOGYM_OUT``); the queue's database is
``REPOGYM_REVIEW_DB_URL`` (default SQLite in the dataset folder). See
:mod:`repogym.datasets.review` for the queue's semantics. Errors end in one line
``error: ...`` and a non-zero exit code (1; 2 for a bad option value).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

import typer
from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from repogym.errors import RepogymError

if TYPE_CHECKING:
    from repogym.datasets.review import ReviewItem, ReviewQueue

app = typer.Typer(help="review", no_args_is_help=True)

DATASET_HELP = "Dataset folder (default: REPOGYM_OUT)."


def _fail(message: str, code: int = 1) -> typer.Exit:
    Console(stderr=True).print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True,
                               markup=True)
    return typer.Exit(code)


def _error(exc: RepogymError) -> typer.Exit:
    """An error as one line (its message's first line; markup in it is shown as text)."""
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return _fail(escape(first))


def _queue(dataset: Optional[Path]) -> ReviewQueue:
    from repogym.config import Settings
    from repogym.datasets.review import ReviewQueue
    from repogym.datasets.store import DatasetStore

    settings = Settings()
    return ReviewQueue(DatasetStore(dataset or settings.out), settings.review_db_url)


@app.command("list")
def list_(
    status: str = typer.Option("pending", help="pending, approved, rejected or all."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per item."),
    dataset: Optional[Path] = typer.Option(None, help=DATASET_HELP),
) -> None:
    """List the queue (pending first), importing newly flagged tasks."""
    from repogym.datasets.review import STATUS_FILTERS

    if status not in STATUS_FILTERS:
        raise _fail(f"unknown status {status!r}; valid: {', '.join(STATUS_FILTERS)}", 2)
    try:
        with _queue(dataset) as queue:
            items = queue.list(status)
    except RepogymError as exc:
        raise _error(exc) from None
    if as_json:
        for item in items:
            typer.echo(json.dumps(_summary(item)))
        return
    Console().print(_list_table(items, status))


def _summary(item: ReviewItem) -> dict[str, object]:
    data = item.model_dump(mode="json", exclude={"task"})
    data["detail"] = item.detail
    return data


def _list_table(items: list[ReviewItem], status: str) -> Table:
    from repogym.datasets.review import age_text

    table = Table(title=f"review queue: {status} ({len(items)})")
    for name in ("id", "state", "reason", "age", "reviewer", "note"):
        table.add_column(name, overflow="fold")
    for it in items:
        table.add_row(Text(it.instance_id), it.state.value, Text(it.reason),
                      age_text(it.flagged_at), Text(it.reviewer), Text(it.note))
    return table


@app.command()
def show(
    instance_id: str = typer.Argument(..., help="The task's instance_id."),
    dataset: Optional[Path] = typer.Option(None, help=DATASET_HELP),
) -> None:
    """Show a flagged task: statement, patches, tests, evidence and the decision."""
    try:
        with _queue(dataset) as queue:
            item = queue.get(instance_id)
    except RepogymError as exc:
        raise _error(exc) from None
    Console().print(_render(item))


def _render(item: ReviewItem) -> Group:
    """Every part of an item as rich renderables; dataset text is never read as markup."""
    task = item.task
    head = Table.grid(padding=(0, 2))
    decided = f" by {item.reviewer}" if item.reviewer else ""
    for key, value in (("id", item.instance_id), ("state", item.state.value + decided),
                       ("note", item.note), ("reason", item.reason), ("detail", task.detail),
                       ("repo", f"{task.repo} @ {task.base_commit}"),
                       ("kind", f"{task.kind.value} ({task.generator} {task.mutator})".strip())):
        if value:
            head.add_row(Text(key, style="bold"), Text(value))
    parts: list[object] = [head, Panel(Text(task.problem_statement), title="statement")]
    for title, diff in (("bug_patch (base -> broken)", task.bug_patch),
                        ("patch (gold fix)", task.patch), ("test_patch", task.test_patch)):
        if diff or title != "test_patch":
            text = diff.rstrip("\n") or "(empty)"
            parts.append(Panel(Syntax(text, "diff", word_wrap=True), title=title))
    parts += [_tests("FAIL_TO_PASS", task.FAIL_TO_PASS), _tests("PASS_TO_PASS", task.PASS_TO_PASS)]
    evidence = Table("key", "value", title="evidence")
    for key, value in sorted(task.evidence.items()):
        evidence.add_row(Text(key), Text(value))
    parts.append(evidence)
    return Group(*parts)  # type: ignore[arg-type]


def _tests(title: str, tests: tuple[str, ...]) -> Panel:
    return Panel(Text("\n".join(tests) or "(none)"), title=f"{title} ({len(tests)})")


@app.command()
def approve(
    instance_id: str = typer.Argument(..., help="The task's instance_id."),
    reviewer: str = typer.Option(..., help="Who approves."),
    note: str = typer.Option("", help="Why (optional)."),
    dataset: Optional[Path] = typer.Option(None, help=DATASET_HELP),
) -> None:
    """Approve a flagged task: it is written to the dataset's tasks table as accepted."""
    item = _decide(dataset, lambda queue: queue.approve(instance_id, reviewer, note))
    Console().print(Text(f"{item.instance_id}: approved by {item.reviewer}; added to tasks"))


@app.command()
def reject(
    instance_id: str = typer.Argument(..., help="The task's instance_id."),
    reviewer: str = typer.Option(..., help="Who rejects."),
    note: str = typer.Option(..., help="Why (required)."),
    dataset: Optional[Path] = typer.Option(None, help=DATASET_HELP),
) -> None:
    """Reject a flagged task: it stays out of the dataset, with who and why recorded."""
    item = _decide(dataset, lambda queue: queue.reject(instance_id, reviewer, note))
    Console().print(Text(f"{item.instance_id}: rejected by {item.reviewer}"))


def _decide(dataset: Optional[Path], decision: Callable[[Any], Any]) -> Any:
    """Run one decision on the queue; a repogym error becomes one ``error:`` line."""
    try:
        with _queue(dataset) as queue:
            return decision(queue)
    except RepogymError as exc:
        raise _error(exc) from None


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on (no login: keep local)."),
    port: int = typer.Option(8765, help="Port to listen on."),
    dataset: Optional[Path] = typer.Option(None, help=DATASET_HELP),
) -> None:
    """Serve the review web page (list, task detail, approve/reject forms)."""
    import uvicorn

    from repogym.datasets.review_web import create_app

    try:
        queue = _queue(dataset)
    except RepogymError as exc:
        raise _error(exc) from None
    try:
        uvicorn.run(create_app(queue), host=host, port=port, log_level="info")
    finally:
        queue.close()
