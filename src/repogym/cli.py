"""``repogym`` command line (typer + rich).

Errors the user can act on (bad input, a failed install, a broken sandbox) end in one line
``error: ...`` and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from repogym.commands.corpus import app as _corpus_app
from repogym.commands.corpus import serve as _corpus_serve
from repogym.commands.dataset import app as _dataset_app
from repogym.commands.env import app as _env_app
from repogym.commands.export import export as _export_command
from repogym.commands.review import app as _review_app
from repogym.config import Settings
from repogym.errors import RepogymError
from repogym.generators import GENERATOR_NAMES

app = typer.Typer(help="Turn repositories into verifiable RL coding tasks.", no_args_is_help=True,
                  pretty_exceptions_enable=False)
base_app = typer.Typer(help="The base image sandboxes start from.", no_args_is_help=True)
app.add_typer(base_app, name="base-image")
toolchain_app = typer.Typer(help="Per-language toolchains.", no_args_is_help=True)
app.add_typer(toolchain_app, name="toolchain")
app.add_typer(_dataset_app, name="dataset", help="Snapshots, compaction and the manifest of the dataset.")
app.add_typer(_review_app, name="review", help="The queue of tasks flagged for manual review.")
app.add_typer(_env_app, name="env", help="Live environments: the tasks over OpenEnv.")
app.add_typer(_corpus_app, name="corpus", help="The corpus file: the repositories to grow tasks from.")
app.command("export")(_export_command)
app.command("serve")(_corpus_serve)
console = Console(stderr=True)
GENERATORS = GENERATOR_NAMES
STAGES = ("clone", "env", "baseline", "coverage", "generate", "mine", "judge", "combine", "write")


def _settings(out: Optional[Path], **overrides: object) -> Settings:
    settings = Settings()
    update = {k: v for k, v in overrides.items() if v is not None}
    if out is not None:
        update["out"] = out
    return settings.model_copy(update=update)


def _fail(message: str, code: int = 1) -> typer.Exit:
    console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


@base_app.command("build")
def base_image_build(
    name: Optional[str] = typer.Option(None, help="Image name (default: REPOGYM_BASE_IMAGE)."),
    force: bool = typer.Option(False, help="Rebuild even if the image exists."),
) -> None:
    """Build the base image from Debian packages (no-op when it exists)."""
    from repogym.sandboxes.images import ensure_base_image

    image = name or Settings().base_image
    try:
        built = ensure_base_image(image, force=force)
    except RepogymError as exc:
        raise _fail(str(exc)) from None
    console.print(f"{image}: {'built' if built else 'already present'}")


@toolchain_app.command("check")
def toolchain_check(
    source: Path = typer.Argument(..., help="A git repository of the language."),
    language: str = typer.Option(..., help="The language it is in (python, javascript)."),
    out: Optional[Path] = typer.Option(None, help="Output folder (default: a new one in /tmp)."),
    max_candidates: int = typer.Option(6, help="Synthetic candidates to try."),
) -> None:
    """Run the toolchain conformance suite on a repository: detected, built, a baseline, a
    candidate accepted, gold 1, empty 0 and every probe of the language 0."""
    import tempfile

    from repogym.conformance import check_toolchain

    folder = out or Path(tempfile.mkdtemp(prefix="repogym-conformance-"))
    settings = Settings(out=folder, max_candidates=max_candidates, max_combined=0)
    try:
        report = check_toolchain(source.resolve(), language, settings)
    except RepogymError as exc:
        raise _fail(str(exc)) from None
    console.print_json(data={"repo": report.repo, "language": report.language,
                             "accepted": report.accepted, "task": report.task,
                             "gold": report.gold, "empty": report.empty,
                             "probes": report.probes, "problems": report.problems})
    if not report.ok:
        raise typer.Exit(1)


@app.command()
def run(
    sources: list[str] = typer.Argument(None, help="Git URLs or local repository paths."),
    sample: list[str] = typer.Option([], help="A PyPI package whose sdist becomes the repo."),
    commit: Optional[str] = typer.Option(None, help="Commit to pin (default HEAD)."),
    max_candidates: Optional[int] = typer.Option(None, help="Cap on candidates per repo."),
    out: Optional[Path] = typer.Option(None, help="Output folder (dataset, logs, cache)."),
    provider: Optional[str] = typer.Option(None, help="Sandbox provider: docker or local."),
    seed: Optional[int] = typer.Option(None, help="Seed for candidate generation."),
    runs: Optional[int] = typer.Option(None, help="Baseline and oracle reruns (K)."),
    generators: Optional[str] = typer.Option(
        None, help="Comma-separated: procedural, mined, llm_rewrite, llm_modify."),
    mine_last: Optional[int] = typer.Option(None, help="Mine the last N commits."),
    since: Optional[str] = typer.Option(None, help="Mine commits since this date."),
    rev_range: Optional[str] = typer.Option(None, "--range", help="Mine commits in A..B."),
    max_combined: Optional[int] = typer.Option(None, help="Cap on combined-bug candidates."),
    workers: Optional[int] = typer.Option(None, help="Sandboxes judging in parallel (docker)."),
) -> None:
    """Run the whole pipeline on each repository, one Prefect flow run per repository."""
    gens = tuple(g.strip() for g in generators.split(",") if g.strip()) if generators else None
    settings = _settings(out, max_candidates=max_candidates, provider=provider, seed=seed,
                         baseline_runs=runs, oracle_runs=runs, generators=gens,
                         mine_last=mine_last, mine_since=since, mine_range=rev_range,
                         max_combined=max_combined, workers=workers)
    unknown = set(settings.generators) - set(GENERATORS)
    if unknown:
        raise _fail(f"unknown generator(s) {', '.join(sorted(unknown))}; "
                    f"valid: {', '.join(GENERATORS)}", 2)
    specs = _specs(sources or [], sample, commit, settings)
    if not specs:
        raise _fail("give at least one SOURCE or --sample NAME", 2)
    _ensure_base(settings)
    failures = sum(not _run_one(spec, settings) for spec in specs)
    if failures:
        raise typer.Exit(1)


def _specs(sources: list[str], samples: list[str], commit: Optional[str], settings: Settings):
    from repogym.samples import sample_repo
    from repogym.schemas.records import RepoSpec

    specs = [RepoSpec(source=s, commit=commit) for s in sources]
    for name in samples:
        try:
            path = sample_repo(name, settings.cache_dir / "samples")
        except RepogymError as exc:
            raise _fail(str(exc)) from None
        specs.append(RepoSpec(source=str(path), commit=commit))
    return specs


def _ensure_base(settings: Settings) -> None:
    if settings.provider != "docker":
        return
    from repogym.sandboxes.images import ensure_base_image

    try:
        if not _image_exists(settings.base_image):
            console.print(f"building base image {settings.base_image} (about a minute, once)")
        ensure_base_image(settings.base_image)
    except RepogymError as exc:
        raise _fail(str(exc)) from None
    except Exception as exc:  # docker daemon unreachable and similar
        raise _fail(f"Docker engine not usable: {exc}") from None


def _image_exists(name: str) -> bool:
    from repogym.sandboxes.images import docker_client, image_exists

    try:
        return image_exists(docker_client(), name)
    except Exception:  # noqa: BLE001 - ensure_base_image reports the engine's trouble
        return False


def _run_one(spec, settings: Settings) -> bool:
    from repogym.flows.repo_flow import PROGRESS, repo_flow

    with _progress() as bar:
        tasks = {s: bar.add_task(s, total=1, visible=False) for s in STAGES}

        def report(stage: str, done: int, total: int) -> None:
            bar.update(tasks[stage], completed=done, total=max(total, 1), visible=True)

        token = PROGRESS.set(report)
        try:
            state = repo_flow(spec, settings, return_state=True)
        finally:
            PROGRESS.reset(token)
    if not state.is_completed():
        console.print(f"[bold red]error:[/] {state.message}", highlight=False, soft_wrap=True)
        return False
    _print_summary(state.result(), settings)
    return True


def _progress() -> Progress:
    return Progress(TextColumn("{task.description:>9}"), BarColumn(),
                    TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                    console=console, transient=False)


SHOWN_SET_ASIDE = 10


def _print_summary(summary, settings: Settings) -> None:
    table = Table(title=f"{summary.repo} @ {summary.commit[:12]}", show_header=False)
    table.add_row("image", summary.image)
    table.add_row("baseline", f"{summary.baseline_passing}/{summary.baseline_tests} passing, "
                  f"{summary.baseline_flaky} flaky, {summary.baseline_misbehaving} set aside "
                  "(side effects, hangs, killed runs: kept out of tasks)")
    for test, why in list(summary.set_aside.items())[:SHOWN_SET_ASIDE]:
        table.add_row("  set aside", f"{test}: {why}")
    table.add_row("candidates", f"{summary.candidates} ({summary.skipped_seen} seen before)")
    table.add_row("accepted", f"{summary.accepted}  (yield {summary.yield_rate:.0%})")
    for gen, row in summary.per_generator.items():
        table.add_row(f"  {gen}", f"{row['accepted']}/{row['candidates']} accepted")
    for reason, n in summary.rejected.items():
        table.add_row(f"  {reason}", str(n))
    table.add_row("time", f"{summary.seconds:.1f}s  " + " ".join(
        f"{k}={v:.1f}s" for k, v in summary.stage_seconds.items()))
    table.add_row("dataset", str(settings.out))
    Console().print(table)
    runs_dir = settings.out / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    (runs_dir / f"{summary.repo}.json").write_text(json.dumps(summary.__dict__, indent=2))


@app.command()
def verify(
    task_id: str = typer.Argument(..., help="The task's instance_id."),
    patch_file: Path = typer.Argument(..., help="A unified diff against the broken state."),
    dataset: Optional[Path] = typer.Option(None, help="Dataset folder (default: --out)."),
    partial: bool = typer.Option(False, help="Reward = share of listed tests passing."),
    provider: Optional[str] = typer.Option(None, help="Sandbox provider of the task's image."),
) -> None:
    """Grade a patch for a task, the way trainers do; prints the reward and every test."""
    from repogym.datasets import DatasetStore
    from repogym.datasets.verify import verify as grade

    settings = _settings(dataset)
    if not patch_file.is_file():
        raise _fail(f"{patch_file}: no such patch file", 2)
    try:
        rows = [r for r in DatasetStore(settings.out).rows("tasks") if r.instance_id == task_id]
        if not rows:
            raise _fail(f"{task_id}: no such task in {settings.out}", 2)
        result = grade(rows[0], patch_file.read_text(), provider=provider or settings.provider,
                       settings=settings, partial=partial)
    except RepogymError as exc:
        raise _fail(str(exc).splitlines()[0]) from None
    for test, outcome in result.outcomes.items():
        console.print(f"  {outcome.value if outcome else 'missing':>8}  {test}", highlight=False)
    for problem in result.problems:
        console.print(f"  problem: {problem}", highlight=False)
    typer.echo(json.dumps({"instance_id": task_id, "reward": result.reward,
                           "resolved": result.resolved}))


@app.command()
def cleanup(images: bool = typer.Option(False, help="Also remove repogym env images.")) -> None:
    """Remove every container (and optionally env image) repogym created; nothing else."""
    from repogym.sandboxes import get_provider

    provider = get_provider("docker", Settings())
    n = provider.cleanup()
    msg = f"removed {n} container(s)"
    if images:
        from repogym.sandboxes.docker import cleanup_images

        msg += f", {cleanup_images(None)} image(s)"
    console.print(msg)


def quiet_prefect() -> None:
    """Prefect's own chatter (and telemetry to an unreachable host) off the user's console,
    and time for its ephemeral server to start on a busy machine (its 20 s is not: a corpus
    run beside another one timed out before its first flow)."""
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")


def main() -> None:  # pragma: no cover - console entry point
    quiet_prefect()
    app()
