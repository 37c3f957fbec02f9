"""``repogym corpus ...``: edit and check the corpus file (see :mod:`repogym.corpus.config`).

    repogym corpus add SOURCE [--name N] [--sample] [--branch B] [--commit C]
                              [--generators a,b] [--max-candidates N] [--max-mined N]
                              [--max-combined N] [--mine-last N] [--since D] [--range A..B]
                              [--label L ...]
    repogym corpus list [--json]
    repogym corpus remove NAME
    repogym corpus validate

Every command takes ``--file PATH`` (default ``$REPOGYM_CORPUS``, else ``./corpus.toml``).
``add`` creates the file if needed; a local SOURCE is stored as an absolute path. Results go
to stdout; errors are one line ``error: ...`` on stderr, exit code 2 for bad input (an invalid
file or entry) and 1 for anything else.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any, Iterator, Optional

import typer
from rich.console import Console
from rich.text import Text

from repogym.corpus.config import CorpusConfig, default_corpus_path
from repogym.errors import ConfigError, InputError, RepogymError
from repogym.repos import is_url

app = typer.Typer(help="corpus", no_args_is_help=True)

FILE_OPTION = typer.Option(None, "--file", "-f",
                           help="The corpus file (default: $REPOGYM_CORPUS or ./corpus.toml).")


def _path(file: Optional[Path]) -> Path:
    return file if file is not None else default_corpus_path()


@contextlib.contextmanager
def _errors(path: Path) -> Iterator[None]:
    """A repogym or OS error as one line ``error: ...``; exit 2 for bad input, else 1."""
    try:
        yield
    except RepogymError as exc:
        raise _fail(str(exc), 2 if isinstance(exc, InputError) else 1) from None
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(path) else ""
        raise _fail(f"{path}: cannot read or write: {exc.strerror or exc}{where}", 1) from None


def _fail(message: str, code: int) -> typer.Exit:
    first = message.splitlines()[0] if message else "failed"
    Console(stderr=True).print(Text.assemble(("error:", "bold red"), " ", first),
                               highlight=False, soft_wrap=True)
    return typer.Exit(code)


@app.command("add")
def add(
    source: str = typer.Argument(..., help="A git URL, a local repository path, or (with "
                                           "--sample) a PyPI name [==VERSION]."),
    name: Optional[str] = typer.Option(None, help="Unique name (default: from the source)."),
    sample: bool = typer.Option(False, "--sample", help="SOURCE is a PyPI package's sdist."),
    branch: Optional[str] = typer.Option(None, help="Branch to follow when no commit is pinned."),
    commit: Optional[str] = typer.Option(None, help="Commit (or tag) to pin."),
    generators: Optional[str] = typer.Option(None, help="Comma-separated generator names."),
    max_candidates: Optional[int] = typer.Option(None, help="Synthetic candidates per generator."),
    max_mined: Optional[int] = typer.Option(None, help="Mined candidates."),
    max_combined: Optional[int] = typer.Option(None, help="Combinations of accepted bugs."),
    mine_last: Optional[int] = typer.Option(None, help="Mine the last N commits."),
    since: Optional[str] = typer.Option(None, help="Mine commits since this date."),
    rev_range: Optional[str] = typer.Option(None, "--range", help="Mine commits in A..B."),
    label: list[str] = typer.Option([], "--label", help="A label (repeatable)."),
    file: Optional[Path] = FILE_OPTION,
) -> None:
    """Add a repository to the corpus file (created if missing)."""
    raw = _entry_data(source, sample, name=name, branch=branch, commit=commit,
                      generators=_split(generators), max_candidates=max_candidates,
                      max_mined=max_mined, max_combined=max_combined, mine_last=mine_last,
                      since=since, range=rev_range, labels=label or None)
    path = _path(file)
    with _errors(path):
        config = CorpusConfig.edit(path, lambda c: c.add(raw))
    added = config.entries()[-1]
    typer.echo(f"added {added.name} ({added.sample or added.source}) to {path}")


def _split(value: Optional[str]) -> Optional[list[str]]:
    return None if value is None else [g.strip() for g in value.split(",") if g.strip()]


def _entry_data(source: str, sample: bool, **keys: Any) -> dict[str, Any]:
    """A ``[[repo]]`` table from the options given; a local path made absolute."""
    data = {k: v for k, v in keys.items() if v is not None}
    if sample:
        data["sample"] = source
    else:
        data["source"] = source if is_url(source) else str(Path(source).expanduser().resolve())
    return data


@app.command("list")
def list_(file: Optional[Path] = FILE_OPTION,
          as_json: bool = typer.Option(False, "--json", help="One JSON array, defaults applied.")
          ) -> None:
    """List the repositories of the corpus, with the defaults applied."""
    with _errors(_path(file)):
        entries = CorpusConfig.load(_path(file), check_paths=False).entries()
    if as_json:
        typer.echo(json.dumps([e.to_data() for e in entries], indent=2))
        return
    if not entries:
        Console(stderr=True).print(f"no repositories in {_path(file)}", highlight=False)
        return
    rows = [(e.name or "", e.sample and f"sample:{e.sample}" or e.source or "",
             e.commit or (f"branch:{e.branch}" if e.branch else "HEAD"),
             ",".join(e.generators or ["(all)"]), ",".join(e.labels)) for e in entries]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        typer.echo("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[4])


@app.command("remove")
def remove(name: str = typer.Argument(..., help="The repo's name (see `corpus list`)."),
           file: Optional[Path] = FILE_OPTION) -> None:
    """Remove a repository from the corpus file."""
    path = _path(file)
    with _errors(path):
        if not path.exists():
            raise ConfigError(f"{path}: no such corpus file")
        config = CorpusConfig.edit(path, lambda c: c.remove(name))
    typer.echo(f"removed {name} from {path} ({len(config.repos)} repo(s) left)")


@app.command("status")
def status(file: Optional[Path] = FILE_OPTION,
           out: Optional[Path] = typer.Option(None, help="Data folder (default: REPOGYM_OUT)."),
           as_json: bool = typer.Option(False, "--json", help="One JSON array.")) -> None:
    """Where each repository stands: last run, its error, commits, judged and rows per table.

    Reads the state and the dataset only (no clone, no engine). Repositories no longer in
    the corpus file but with a state are listed too (marked "removed").
    """
    from rich import box
    from rich.table import Table

    from repogym.config import Settings
    from repogym.corpus.status import corpus_standing
    from repogym.flows.corpus_flow import jobs_from_config

    path = _path(file)
    settings = Settings() if out is None else Settings(out=out)
    with _errors(path):
        names = [j.name for j in jobs_from_config(CorpusConfig.load(path, check_paths=False),
                                                  settings)]
        rows = corpus_standing(names, settings.out)
    if as_json:
        typer.echo(json.dumps([r.model_dump(mode="json") for r in rows], indent=2))
        return
    table = Table(title=f"corpus {path} -> {settings.out}", box=box.SIMPLE_HEAD,
                  pad_edge=False, padding=(0, 1, 0, 0))
    for h in ("repo", "last run", "commit", "mined", "judged", "tasks", "rejected",
              "infra"):
        table.add_column(h, no_wrap=True)
    for r in rows:
        when = r.last_run.strftime("%m-%d %H:%M") if r.last_run else "never"
        table.add_row(Text(r.repo + ("" if r.in_corpus else " (removed)")),
                      when + (" failed" if r.last_error else ""),
                      (r.last_commit or "")[:7], (r.last_mined_commit or "")[:7],
                      str(r.judged), str(r.tasks), str(r.rejected), str(r.infra))
    console = Console()
    console.print(table)
    for r in rows:
        if r.last_error:
            console.print(Text(f"{r.repo}: last error: {r.last_error}"))


@app.command("validate")
def validate(file: Optional[Path] = FILE_OPTION) -> None:
    """Check the corpus file: keys, names, generators, budgets and that local paths exist."""
    path = _path(file)
    with _errors(path):
        config = CorpusConfig.load(path)
    typer.echo(f"{path}: valid, {len(config.repos)} repo(s): {', '.join(config.names())}")


@app.command("run")
def run(file: Optional[Path] = FILE_OPTION,
        out: Optional[Path] = typer.Option(None, help="Data folder (default: REPOGYM_OUT)."),
        dask: Optional[str] = typer.Option(None, "--dask", help="Judge candidates on this "
                                           "Dask scheduler (tcp://host:8786).")) -> None:
    """Run the corpus flow once over every repository of the corpus file.

    Only new commits and unseen candidates are handled; a repository that fails (a missing
    path, a sample whose sdist cannot be fetched, a failed install...) is reported and the
    others finish (exit code 1 when any failed).
    """
    from repogym.config import Settings
    from repogym.flows.corpus_flow import CORPUS_PROGRESS, corpus_flow, jobs_from_config

    path = _path(file)
    settings = Settings()
    if out is not None:
        settings = settings.model_copy(update={"out": out})
    with _errors(path):  # local paths are checked by each repository's run, not here
        jobs = jobs_from_config(CorpusConfig.load(path, check_paths=False), settings)
    if not jobs:
        raise _fail(f"{path}: no repositories (add some with `repogym corpus add`)", 2)
    with live_progress([j.name for j in jobs]) as report:
        token = CORPUS_PROGRESS.set(report)
        try:
            result = corpus_flow(jobs, settings, dask)
        finally:
            CORPUS_PROGRESS.reset(token)
    print_run(result)
    if result.failed:
        raise typer.Exit(1)


@contextlib.contextmanager
def live_progress(names: list[str]) -> Iterator[Any]:
    """A progress bar per repository: its stage and how far that stage is."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("{task.description}"), BarColumn(),
                   TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                   console=Console(stderr=True))
    rows = {n: bar.add_task(f"{n}: waiting", total=1) for n in names}

    def report(repo: str, stage: str, done: int, total: int) -> None:
        if repo in rows:
            bar.update(rows[repo], description=f"{repo}: {stage}", completed=done,
                       total=max(total, 1))

    with bar:
        yield report


def print_run(result: Any) -> None:
    """The run's per-repository table (the same figures as its Prefect artifact)."""
    from rich.table import Table

    from repogym.flows.corpus_flow import summary_rows

    table = Table(title=f"corpus run: {len(result.repos)} repositories, "
                        f"{len(result.failed)} failed, {result.seconds:.1f}s")
    head = ["repo", "status", "candidates", "judged", "accepted", "yield", "mined"]
    for h in head:  # the counts fit 80 columns; the long fields follow, one line each
        table.add_column(h, no_wrap=h == "repo", overflow="fold")
    rows = summary_rows(result)
    for row in rows:
        table.add_row(*(Text(str(row[h])) for h in head))
    console = Console()
    console.print(table)
    for row in rows:
        for h in ("rejected", "cached", "reverified", "error"):
            if row[h]:
                console.print(Text(f"{row['repo']}: {h}: {row[h]}"))


def serve(file: Optional[Path] = FILE_OPTION,
          out: Optional[Path] = typer.Option(None, help="Data folder (default: REPOGYM_OUT)."),
          cron: str = typer.Option("0 3 * * *", help="When to run (cron, UTC)."),
          name: str = typer.Option("repogym-corpus", help="The deployment's name."),
          dask: Optional[str] = typer.Option(None, "--dask", help="Dask scheduler address."),
          register_only: bool = typer.Option(False, "--register-only",
                                             help="Create the deployment and exit (a worker "
                                                  "or another `serve` runs it).")) -> None:
    """Register the corpus flow with a cron schedule and serve it (Prefect's `serve`).

    Against a Prefect server set PREFECT_API_URL first; see docs/operations.md.
    """
    from repogym.config import Settings
    from repogym.flows.corpus_flow import corpus_deployment

    path = _path(file)
    data = out if out is not None else Settings().out
    with _errors(path):
        CorpusConfig.load(path)  # fail now, not at 3 a.m.
    try:
        deployment = corpus_deployment(path, data, name=name, cron=cron, dask_address=dask)
    except ValueError as exc:
        raise _fail(f"--cron {cron!r}: {exc}", 2) from None
    if register_only:
        deployment_id = deployment.apply()
        typer.echo(f"registered deployment {name} ({deployment_id}), schedule '{cron}'")
        return
    from prefect import serve as prefect_serve

    prefect_serve(deployment)
