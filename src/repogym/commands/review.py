"""``repogym review ...``: the queue of tasks the judge flagged for a human decision.

    repogym review list [--status pending|approved|rejected|all] [--repo R] [--language L]
                        [--reason R | --reason FAMILY:] [--older-than 3d] [--newer-than 2h]
                        [--mine] [--json]
    repogym review show ID
    repogym review claim ID
    repogym review release ID
    repogym review mend ID [--statement TEXT | --statement-file PATH] [--drop-test NAME ...]
    repogym review approve ID [--reason LABEL] [--severity none|minor] [--note TEXT]
    repogym review reject ID --note TEXT [--reason LABEL] [--severity minor|major|severe]
    repogym review double ID...
    repogym review stats [--days N] [--json]
    repogym review reviewer add|rotate|disable NAME
    repogym review reviewer list
    repogym review serve [--host 127.0.0.1] [--port 8765]

**Who acts** (claim, release, mend, approve, reject, ``list --mine``; see
:mod:`repogym.datasets.review.auth`): once a reviewer is added (``reviewer add`` prints their
token once), or when the database is shared (``REPOGYM_REVIEW_DB_URL`` not SQLite), sign-in is
required: the name comes from the reviewer token in ``REPOGYM_REVIEW_TOKEN`` (or ``--token``,
which other users of the machine can see in its process list), and a ``--reviewer`` naming
someone else is refused. Otherwise (SQLite, no reviewer added) the queue is open and
``--reviewer NAME`` says who acts.

Every command takes ``--dataset DIR`` (default ``REPOGYM_OUT``); the queue's database is
``REPOGYM_REVIEW_DB_URL`` (default SQLite in the dataset folder), a claim lasts
``REPOGYM_REVIEW_CLAIM_MINUTES`` and ``REPOGYM_REVIEW_DOUBLE_FRACTION`` of newly queued tasks
need two reviewers. Approving a mended task re-verifies it in its sandbox first
(``REPOGYM_PROVIDER``). See :mod:`repogym.datasets.review` for the queue's semantics. Errors
end in one line ``error: ...`` and a non-zero exit code (1; 2 for a bad option value).
"""

from __future__ import annotations

import json
import math
import re
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, TypeVar

import typer
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from repogym.errors import InputError, RepogymError

if TYPE_CHECKING:
    from repogym.config import Settings
    from repogym.datasets.review import (
        DecisionLabel,
        ReviewAction,
        ReviewItem,
        ReviewQueue,
        Severity,
        Version,
    )
    from repogym.datasets.review.auth import Reviewers

app = typer.Typer(help="review", no_args_is_help=True)
reviewer_app = typer.Typer(help="Reviewers who may sign in, and their tokens.",
                           no_args_is_help=True)
app.add_typer(reviewer_app, name="reviewer")

T = TypeVar("T")
DATASET_HELP = "Dataset folder (default: REPOGYM_OUT)."
REVIEWER_HELP = ("Who acts, on an open queue (SQLite, no reviewer added); with sign-in the "
                 "name comes from the token.")
TOKEN_HELP = ("Your reviewer token (default: REPOGYM_REVIEW_TOKEN; prefer the variable, a "
              "command line is visible to other users).")
DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*")
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
MAX_DAYS = 36_500.0  # durations and windows beyond a century are typos


def _fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``error: message`` (the message as plain text, never markup) and exit."""
    Console(stderr=True).print(Text.assemble(("error:", "bold red"), " ", message),
                               highlight=False, soft_wrap=True)
    return typer.Exit(code)


def _error(exc: RepogymError) -> typer.Exit:
    """An error as one line (its message's first line)."""
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return _fail(first)


def _settings() -> Settings:
    from repogym.config import Settings

    return Settings()


def _queue(dataset: Optional[Path]) -> ReviewQueue:
    from repogym.datasets.review import ReviewQueue
    from repogym.datasets.review.verifier import sandbox_verifier
    from repogym.datasets.store import DatasetStore

    settings = _settings()
    return ReviewQueue(DatasetStore(dataset or settings.out), settings.review_db_url,
                       verifier=sandbox_verifier(settings),
                       claim_minutes=settings.review_claim_minutes,
                       double_fraction=settings.review_double_fraction)


def _who(queue: ReviewQueue, reviewer: Optional[str], token: Optional[str]) -> str:
    """Who acts on ``queue``: the reviewer a token signs in (``token``, else
    ``REPOGYM_REVIEW_TOKEN``), which sign-in requires; on an open queue without a token,
    ``reviewer``.

    Raises:
        typer.Exit: (code 2) an open queue, no token and no ``--reviewer``.
        SignInFailed: the token is unknown or revoked.
        InputError: sign-in is required and no token is given, or ``--reviewer`` is not the
            token's reviewer.
    """
    from repogym.datasets.review import check_reviewer
    from repogym.datasets.review.auth import Reviewers, SignInFailed, sign_in_required

    people = Reviewers(queue.engine, queue.url)
    source = "--token" if token and token.strip() else "REPOGYM_REVIEW_TOKEN"
    secret = (token or "").strip() or (_settings().review_token or "").strip()
    if not secret:
        if sign_in_required(queue.url, people.any()):
            raise InputError("this queue requires sign-in: set REPOGYM_REVIEW_TOKEN (or give "
                             "--token) to your reviewer token from `repogym review reviewer "
                             "add NAME`")
        if reviewer is None or not reviewer.strip():
            raise _fail("--reviewer NAME is required (this queue is open: SQLite, no "
                        "reviewer added)", 2)
        return check_reviewer(reviewer)
    try:
        name = people.who(secret)
    except SignInFailed as exc:
        raise SignInFailed(f"{exc} (from {source})") from None
    if reviewer is not None and reviewer.strip() and reviewer.strip() != name:
        raise InputError(f"the reviewer name comes from the token: {source} signs in "
                         f"{name!r}, not {reviewer.strip()!r}; drop --reviewer")
    return name


def _with_queue(dataset: Optional[Path], action: Callable[[ReviewQueue], T]) -> T:
    """Run ``action`` on the queue; a repogym error becomes one ``error:`` line (exit 1)."""
    try:
        with _queue(dataset) as queue:
            return action(queue)
    except RepogymError as exc:
        raise _error(exc) from None


def _act(dataset: Optional[Path], reviewer: Optional[str], token: Optional[str],
         action: Callable[[ReviewQueue, str], T]) -> T:
    """Run ``action(queue, who)`` as the reviewer :func:`_who` names."""
    return _with_queue(dataset, lambda queue: action(queue, _who(queue, reviewer, token)))


def _utc(when: datetime | None, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    return f"{when:{fmt}} UTC" if when is not None else ""


def _claim_text(item: ReviewItem, now: datetime | None = None) -> str:
    """``"alice until 12:30 UTC"`` for a live claim on a pending item, else ""."""
    from repogym.datasets.review import ReviewState

    holder = item.holder(now)
    if not holder or item.state is not ReviewState.pending:
        return ""
    return f"{holder} until {_utc(item.claimed_until, '%H:%M')}"


def _duration(value: Optional[str], option: str) -> timedelta | None:
    """``45m``, ``2h``, ``3d``, ``1w`` (or ``30s``) as a timedelta; exits 2 when malformed."""
    if value is None:
        return None
    match = DURATION.fullmatch(value)
    seconds = float(match[1]) * UNIT_SECONDS[match[2]] if match else -1.0
    if not 0 <= seconds <= MAX_DAYS * 86400:
        raise _fail(f"{option}: a duration such as 45m, 2h, 3d or 1w (at most "
                    f"{MAX_DAYS:g}d), not {value!r}", 2)
    return timedelta(seconds=seconds)


# -- reading -------------------------------------------------------------------------------


@app.command("list")
def list_(
    status: str = typer.Option("pending", help="pending, approved, rejected or all."),
    repo: str = typer.Option("", help="Only this repository's tasks."),
    language: str = typer.Option("", help="Only tasks in this language."),
    reason: str = typer.Option("", help="Only this flag reason (statement_leak...); one "
                                        "ending in ':' (probe:) matches its family."),
    older_than: Optional[str] = typer.Option(None, "--older-than",
                                             help="Flagged at least this long ago: 45m, 2h, "
                                                  "3d, 1w."),
    newer_than: Optional[str] = typer.Option(None, "--newer-than",
                                             help="Flagged at most this long ago."),
    mine: bool = typer.Option(False, "--mine", help="Only tasks I hold a live claim on."),
    reviewer: Optional[str] = typer.Option(None, help=REVIEWER_HELP + " (--mine)"),
    token: Optional[str] = typer.Option(None, help=TOKEN_HELP + " (--mine)"),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per item."),
    dataset: Optional[Path] = typer.Option(None, help=DATASET_HELP),
) -> None:
    """List the queue (pending first, oldest flag first), importing newly flagged tasks."""
    from repogym.datasets.review import STATUS_FILTERS, ItemFilter

    if status not in STATUS_FILTERS:
        raise _fail(f"unknown status {status!r}; valid: {', '.join(STATUS_FILTERS)}", 2)
    older, newer = _duration(older_than, "--older-than"), _duration(newer_than, "--newer-than")

    def run(queue: ReviewQueue) -> list[ReviewItem]:
        who = _who(queue, reviewer, token) if mine else ""
        return queue.list(ItemFilter.model_validate(dict(
            status=status, repo=repo, language=language, reason=reason, older_than=older,
            newer_than=newer, claimed_by=who)))

    items = _with_queue(dataset, run)
    if as_json:
        for item in items:
            typer.echo(json.dumps(_summary(item)))
        return
    Console().print(_list_table(items, status))


def _summary(item: ReviewItem) -> dict[str, object]:
    """An item as JSON: no task rows; a pending item's decisions hidden (reviews are blind),
    only their count shown."""
    from repogym.datasets.review import ReviewState

    data = item.model_dump(mode="json", exclude={"task", "original", "decisions", "versions"})
    data["detail"] = item.detail
    data["claimed"] = item.holder()
    data["reviews"] = len(item.counted)
    if item.state is not ReviewState.pending:
        data["decisions"] = [d.model_dump(mode="json") for d in item.decisions]
    return data


def _list_table(items: list[ReviewItem], status: str) -> Table:
    from repogym.datasets.review import age_text

    table = Table(title=f"review queue: {status} ({len(items)})")
    for name in ("id", "state", "reason", "language", "age", "claimed", "reviews", "reviewer",
                 "note"):
        table.add_column(name, overflow="fold")
    for it in items:
        state = it.state.value + (" (disputed)" if it.disputed else "")
        table.add_row(Text(it.instance_id), state, Text(it.reason), Text(it.language),
                      age_text(it.flagged_at), Text(_claim_text(it)),
                      f"{len(it.counted)}/{it.reviews_needed}", Text(it.reviewer),
                      Text(it.note))
    return table


@app.command()
def show(
    instance_id: str = typer.Argument(..., help="The task's instance_id."),
    dataset: Optional[Path] = typer.Option(None, help=DATASET_HELP),
) -> None:
    """Show a flagged task: claim, reviews, statement (and its versions), patches, tests,
    evidence."""
    item = _with_queue(dataset, lambda queue: queue.get(instance_id))
    Console().print(_render(item))


def _render(item: ReviewItem) -> Group:
    """Every part of an item as rich renderables; dataset text is never read as markup.

    While the item is pending its decisions are not shown (reviews are blind), only how many
    were recorded."""
    from repogym.datasets.review import ReviewState

    task, pending = item.task, item.state is ReviewState.pending
    head = Table.grid(padding=(0, 2))
    state = item.state.value + (f" by {item.reviewer}" if item.reviewer else "")
    if item.label:
        state += f" ({item.label}, {item.severity})"
    reviews = ""
    if pending:
        s = "s" if item.reviews_needed != 1 else ""
        reviews = f"{len(item.counted)} of {item.reviews_needed} review{s} recorded"
        if item.disputed:
            reviews += " (disputed: the next decision is final)"
    for key, value in (("id", item.instance_id), ("state", state), ("note", item.note),
                       ("claim", _claim_text(item)), ("reviews", reviews),
                       ("reason", item.reason), ("detail", item.detail),
                       ("repo", f"{task.repo} @ {task.base_commit} ({item.language})"),
                       ("kind", f"{task.kind.value} ({task.generator} {task.mutator})".strip()),
                       ("version", f"{item.version} (mended)" if item.version else "")):
        if value:
            head.add_row(Text(key, style="bold"), Text(value))
    parts: list[RenderableType] = [head]
    if not pending and item.decisions:
        parts.append(_decisions(item))
    if item.versions:
        parts += _versions(item)
    else:
        parts.append(Panel(Text(task.problem_statement), title="statement"))
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
    return Group(*parts)


def _decisions(item: ReviewItem) -> Table:
    table = Table("reviewer", "decision", "reason", "severity", "version", "when", "note",
                  title=f"decisions ({len(item.counted)})")
    for d in item.decisions:
        table.add_row(Text(d.reviewer), d.action.value, d.label.value, d.severity.value,
                      str(d.version), _utc(d.decided_at, "%Y-%m-%d %H:%M"), Text(d.note))
    return table


def _versions(item: ReviewItem) -> list[Panel]:
    """The statement as flagged, then every mended version's, each with what changed and
    whether its re-verification held."""
    original = (item.original or item.task).problem_statement
    panels = [Panel(Text(original), title="statement as flagged (version 0)")]
    for v in item.versions:
        current = " (current)" if v.version == item.version else ""
        meta = Text(f"by {v.editor} at {_utc(v.edited_at, '%Y-%m-%d %H:%M')}: {v.summary}\n"
                    f"{_verification(v)}", style="dim")
        panels.append(Panel(Group(meta, Text(v.task.problem_statement)),
                            title=Text(f"statement, version {v.version}{current}")))
    return panels


def _verification(version: Version) -> str:
    if version.verified == "held":
        return f"re-verified: held ({version.verify_detail})"
    if version.verified == "failed":
        return f"re-verified: does not hold ({version.verify_detail}); cannot be approved"
    return "not re-verified yet (approving re-verifies it in its sandbox)"


def _tests(title: str, tests: tuple[str, ...]) -> Panel:
    return Panel(Text("\n".join(tests) or "(none)"), title=f"{title} ({len(tests)})")


# -- acting --------------------------------------------------------------------------------


@app.command()
def claim(
    instance_id: str = typer.Argument(..., help="The task's instance_id."),
    reviewer: Optional[str] = typer.Option(None, help=REVIEWER_HELP),
    token: Optional[str] = typer.Option(None, help=TOKEN_HELP),
    dataset: Optional[Path] = typer.Option(None, help=DATASET_HELP),
) -> None:
    """Claim a pending task before mending or deciding it (claiming again renews the claim;
    it lasts REPOGYM_REVIEW_CLAIM_MINUTES)."""
    item = _act(dataset, reviewer, token, lambda queue, who: queue.claim(instance_id, who))
    Console().print(Text(f"{item.instance_id}: claimed by {item.claimed_by} until "
                         f"{_utc(item.claimed_until)}"))


@app.command()
def release(
    instance_id: str = typer.Argument(..., help="The task's instance_id."),
    reviewer: Optional[str] = typer.Option(None, help=REVIEWER_HELP),
    token: Optional[str] = typer.Option(None, help=TOKEN_HELP),
    dataset: Optional[Path] = typer.Option(None, help=DATASET_HELP),
) -> None:
    """Give up your claim on a task."""

    def run(queue: ReviewQueue, who: str) -> tuple[str, str]:
        held = queue.get(instance_id).holder()
        queue.release(instance_id, who)
        return who, held

    who, held = _act(dataset, reviewer, token, run)
    if held and held != who:
        raise _fail(f"{instance_id}: claimed by {held}, not by you ({who}); nothing released")
    Console().print(Text(f"{instance_id}: released by {who}" if held else
                         f"{instance_id}: not claimed by you ({who}); nothing to release"))


@app.command()
def mend(
    instance_id: str = typer.Argument(..., help="The task's instance_id."),
    statement: Optional[str] = typer.Option(None, help="The new problem statement."),
    statement_file: Optional[Path] = typer.Option(
        None, "--statement-file", dir_okay=False, allow_dash=True,
        help="Read the new statement from this file (UTF-8; '-': standard input)."),
    drop_test: Optional[list[str]] = typer.Option(
        None, "--drop-test", help="A test to drop from FAIL_TO_PASS / PASS_TO_PASS (repeat "
                                  "for several)."),
    reviewer: Optional[str] = typer.Option(None, help=REVIEWER_HELP),
    token: Optional[str] = typer.Option(None, help=TOKEN_HELP),
    dataset: Optional[Path] = typer.Option(None, help=DATASET_HELP),
) -> None:
    """Save a mended version of a task you claimed: an edited statement (refused while it
    still gives the fix away) and/or tests dropped. Approving it re-verifies it first."""
    from repogym.datasets.review import StatementLeaks

    if statement is not None and statement_file is not None:
        raise _fail("give --statement or --statement-file, not both", 2)
    text = _read_statement(statement_file) if statement_file is not None else statement
    drops = tuple(drop_test or ())
    if text is None and not drops:
        raise _fail("nothing to mend: give --statement, --statement-file or --drop-test", 2)

    def run(queue: ReviewQueue, who: str) -> ReviewItem:
        try:
            return queue.mend(instance_id, who, statement=text, drop_tests=drops)
        except StatementLeaks as exc:
            err = Console(stderr=True)
            err.print(Text("the edited statement still gives the fix away:"))
            for fragment in exc.fragments:
                err.print(Text(f"  {fragment}"), highlight=False)
            raise

    item = _act(dataset, reviewer, token, run)
    version = item.current_version
    summary = f" ({version.summary})" if version is not None and version.summary else ""
    Console().print(Text(f"{item.instance_id}: saved version {item.version}{summary}; "
                         "approving it re-verifies it in its sandbox first"))


def _read_statement(path: Path) -> str:
    """The text of ``path`` (``-``: standard input); exits 2 when unreadable."""
    try:
        if str(path) == "-":
            return sys.stdin.read()
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise _fail(f"--statement-file: {path} is not UTF-8 text", 2) from None
    except OSError as exc:
        raise _fail(f"--statement-file: cannot read {path}: {exc.strerror or exc}", 2) from None


def _label_and_severity(action: ReviewAction, reason: Optional[str],
                        severity: Optional[str]) -> tuple[DecisionLabel, Severity]:
    """The decision's label and severity (the queue's defaults when not given); exits 2 on
    an unknown value or a combination the labelling rules refuse."""
    from repogym.datasets.review import (
        DecisionLabel,
        ReviewAction,
        Severity,
        check_decision,
        parse_label,
        parse_severity,
    )

    approve = action is ReviewAction.approve
    try:
        label = parse_label(reason, DecisionLabel.sound if approve else DecisionLabel.other)
        sev = parse_severity(severity, Severity.none if approve else Severity.major)
        check_decision(action, label, sev)
    except InputError as exc:
        raise _fail(str(exc), 2) from None
    return label, sev


def _report(item: ReviewItem, verb: str) -> None:
    """What a decision did: final (approved and published, or rejected) or still waiting."""
    from repogym.datasets.review import ReviewState

    if item.state is ReviewState.pending:
        wait = ("the reviewers disagree; a third reviewer's decision is final" if item.disputed
                else f"it waits for another reviewer ({len(item.counted)} of "
                     f"{item.reviews_needed} reviews recorded)")
        text = f"{item.instance_id}: your {verb} is recorded; {wait}"
    elif item.state is ReviewState.approved:
        mended = f" (version {item.version}, re-verified)" if item.version else ""
        text = f"{item.instance_id}: approved by {item.reviewer}{mended}; added to tasks"
    else:
        text = f"{item.instance_id}: rejected by {item.reviewer}"
    Console().print(Text(text))


@app.command()
def approve(
    instance_id: str = typer.Argument(..., help="The task's instance_id."),
    reason: Optional[str] = typer.Option(None, help="Why: sound (default), mended, or a "
                                                    "minor problem left in."),
    severity: Optional[str] = typer.Option(None, help="none (default) or minor."),
    note: str = typer.Option("", help="Why (optional)."),
    reviewer: Optional[str] = typer.Option(None, help=REVIEWER_HELP),
    token: Optional[str] = typer.Option(None, help=TOKEN_HELP),
    dataset: Optional[Path] = typer.Option(None, help=DATASET_HELP),
) -> None:
    """Approve a flagged task: once final it is written to the dataset's tasks table as
    accepted (a mended task is re-verified in its sandbox first)."""
    from repogym.datasets.review import ReviewAction

    label, sev = _label_and_severity(ReviewAction.approve, reason, severity)
    item = _act(dataset, reviewer, token, lambda queue, who: queue.approve(
        instance_id, who, note, label=label, severity=sev))
    _report(item, "approval")


@app.command()
def reject(
    instance_id: str = typer.Argument(..., help="The task's instance_id."),
    note: str = typer.Option(..., help="Why (required)."),
    reason: Optional[str] = typer.Option(None, help="The problem: statement_leak, "
                                                    "underspecified, ... (default: other)."),
    severity: Optional[str] = typer.Option(None, help="minor, major (default) or severe."),
    reviewer: Optional[str] = typer.Option(None, help=REVIEWER_HELP),
    token: Optional[str] = typer.Option(None, help=TOKEN_HELP),
    dataset: Optional[Path] = typer.Option(None, help=DATASET_HELP),
) -> None:
    """Reject a flagged task: it stays out of the dataset, with who and why recorded."""
    from repogym.datasets.review import ReviewAction

    label, sev = _label_and_severity(ReviewAction.reject, reason, severity)
    item = _act(dataset, reviewer, token, lambda queue, who: queue.reject(
        instance_id, who, note, label=label, severity=sev))
    _report(item, "rejection")


@app.command()
def double(
    instance_ids: list[str] = typer.Argument(..., help="The tasks' instance_ids."),
    dataset: Optional[Path] = typer.Option(None, help=DATASET_HELP),
) -> None:
    """Make pending tasks need two reviewers (each decides blind; a dispute needs a third)."""
    wanted = list(dict.fromkeys(instance_ids))
    changed = _with_queue(dataset, lambda queue: queue.require_two(wanted))
    rest = len(wanted) - changed
    others = f"; {rest} unchanged (decided, unknown or needing two already)" if rest else ""
    Console().print(Text(f"{changed} of {len(wanted)} task(s) now need two reviewers{others}"))


@app.command()
def stats(
    days: Optional[float] = typer.Option(None, help="Count the decisions of the last N days "
                                                    "(default: all time)."),
    as_json: bool = typer.Option(False, "--json", help="The statistics as one JSON object."),
    dataset: Optional[Path] = typer.Option(None, help=DATASET_HELP),
) -> None:
    """Throughput (decisions per reviewer and day, time to decision) and agreement of double
    reviews (per flag reason, with Cohen's kappa)."""
    from repogym.datasets.review.stats import review_stats

    if days is not None and not (math.isfinite(days) and 0 < days <= MAX_DAYS):
        raise _fail(f"--days: a number of days above 0 and at most {MAX_DAYS:g}, not {days:g}",
                    2)
    found = review_stats(_with_queue(dataset, lambda queue: queue.list("all")), days=days)
    if as_json:
        typer.echo(found.model_dump_json())
        return
    for line in found.lines():
        typer.echo(line)


# -- reviewers -----------------------------------------------------------------------------


def _with_reviewers(dataset: Optional[Path], action: Callable[[Reviewers, ReviewQueue], T]) -> T:
    from repogym.datasets.review.auth import Reviewers

    return _with_queue(dataset, lambda queue: action(Reviewers(queue.engine, queue.url), queue))


def _print_token(name: str, token: str, first: bool = False) -> None:
    """The token on standard output (alone, for scripts); what to do with it on stderr."""
    err = Console(stderr=True, highlight=False)
    if first:
        err.print(Text("This queue now requires sign-in: every reviewer acts with their "
                       "token (REPOGYM_REVIEW_TOKEN)."))
    err.print(Text(f"token of {name} (give it to them privately):"))
    typer.echo(token)
    err.print(Text(f"It is not shown again (only its hash is stored); `repogym review reviewer "
                   f"rotate {name}` makes a new one."))


@reviewer_app.command("add")
def reviewer_add(
    name: str = typer.Argument(..., help="The reviewer's name."),
    dataset: Optional[Path] = typer.Option(None, help=DATASET_HELP),
) -> None:
    """Add a reviewer and print their token once. Once a reviewer is added, sign-in is
    required on this queue."""
    from repogym.datasets.review import check_reviewer

    def run(people: Reviewers, queue: ReviewQueue) -> tuple[str, bool]:
        first = not people.any()
        return people.add(name), first

    token, first = _with_reviewers(dataset, run)
    _print_token(check_reviewer(name), token, first)


@reviewer_app.command("rotate")
def reviewer_rotate(
    name: str = typer.Argument(..., help="The reviewer's name."),
    dataset: Optional[Path] = typer.Option(None, help=DATASET_HELP),
) -> None:
    """Give a reviewer a new token (the old one and their sessions stop working; a disabled
    reviewer is enabled again)."""
    token = _with_reviewers(dataset, lambda people, queue: people.rotate(name))
    _print_token(name, token)


@reviewer_app.command("disable")
def reviewer_disable(
    name: str = typer.Argument(..., help="The reviewer's name."),
    dataset: Optional[Path] = typer.Option(None, help=DATASET_HELP),
) -> None:
    """Stop a reviewer from signing in (their token and sessions stop working)."""
    _with_reviewers(dataset, lambda people, queue: people.disable(name))
    Console().print(Text(f"{name} disabled: their token and sessions no longer work "
                         "(rotate gives them a new one)"))


@reviewer_app.command("list")
def reviewer_list(
    dataset: Optional[Path] = typer.Option(None, help=DATASET_HELP),
) -> None:
    """List the reviewers and whether this queue requires sign-in."""
    from repogym.datasets.review.auth import sign_in_required

    found, required = _with_reviewers(dataset, lambda people, queue: (
        people.list(), sign_in_required(queue.url, people.any())))
    table = Table("name", "active", "added", title=f"reviewers ({len(found)})")
    for r in found:
        table.add_row(Text(r.name), "yes" if r.active else "no (disabled)",
                      _utc(r.created_at, "%Y-%m-%d %H:%M"))
    console = Console()
    console.print(table)
    console.print(Text("sign-in required: acting needs a reviewer token" if required else
                       "open queue (SQLite, no reviewer added): --reviewer NAME says who acts"))


# -- the page ------------------------------------------------------------------------------


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", help="Address to listen on (off loopback, sign-in "
                                               "is required)."),
    port: int = typer.Option(8765, help="Port to listen on."),
    https: bool = typer.Option(False, "--https", help="Mark the session cookie Secure (the "
                               "page is served behind a TLS proxy)."),
    dataset: Optional[Path] = typer.Option(None, help=DATASET_HELP),
) -> None:
    """Serve the review web page (list, task detail, claim, mend, approve/reject, stats)."""
    import uvicorn

    from repogym.datasets.review.web import create_app

    try:
        queue = _queue(dataset)
    except RepogymError as exc:
        raise _error(exc) from None
    try:
        uvicorn.run(create_app(queue, host=host, https=https), host=host, port=port, log_level="info")
    finally:
        queue.close()
