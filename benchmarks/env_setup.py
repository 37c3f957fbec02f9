"""Benchmark: the heuristic (no-LLM) environment recipe over pure-Python PyPI libraries.

For each library: turn its sdist into a git repository (``repogym.samples.sample_repo``),
build its environment image with the Python toolchain's recipe, run its test suite once in
that image, and record whether the image built, how long it took, how many tests were
collected, how many were skipped, xfail or failed (failed or error), and which share of them
passed: of all tests, and of the runnable ones (tests - skipped - xfail), so that tests
skipped for this platform are told apart from failures.

    /tmp/venv/bin/python benchmarks/env_setup.py [--libs a,b==1.2,c] [--out DIR] [--jobs N]
    /tmp/venv/bin/python benchmarks/env_setup.py --render results/env_setup-<date>.json

Writes ``benchmarks/results/env_setup-<date>.json`` and ``.md`` and prints the table with the
summary line "N/M libraries built; K/M have >= 90% of tests passing; R/M have >= 90% of
runnable tests passing". ``--render`` prints the table of a saved results file with the
current columns (older files get them from each row's outcome counts) and writes nothing.

Images are cached by recipe digest: a second run over the same sdists reuses them (the
``reused`` column), so its build seconds are not build times. Use a fresh Docker engine or
``repogym cleanup --images`` for cold numbers.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from repogym.config import Settings
from repogym.errors import InstallError, RepogymError
from repogym.pipeline import baseline_in, build_env, prepare, provider_for
from repogym.samples import sample_repo
from repogym.schemas.records import RepoSpec

# Pure-Python libraries whose sdists ship their tests (checked by listing each sdist).
# Left out: the project's own samples (inflection, iniconfig, isodate, python-slugify,
# text-unidecode, markupsafe); sortedcontainers and docopt (sdists without tests);
# decorator (its only test module is tests/test.py, which pytest does not collect by default).
DEFAULT_LIBS = (
    "six", "toolz", "attrs", "more-itertools", "tomlkit", "python-dateutil", "idna",
    "packaging", "pyparsing", "cachetools", "wcwidth", "itsdangerous", "click", "jinja2",
    "humanize", "semver", "boltons", "pathspec", "pluggy", "tabulate",
)
PASS_BAR = 0.90
RESULTS_DIR = Path(__file__).resolve().parent / "results"


@dataclass
class Row:
    library: str
    version: str = ""
    built: bool = False
    reused: bool = False
    build_seconds: float | None = None
    tests: int | None = None
    passing: int | None = None
    skipped: int | None = None
    xfail: int | None = None
    failed: int | None = None  # failed or error (collection errors included)
    pass_share: float | None = None  # passing / tests
    pass_share_runnable: float | None = None  # passing / (tests - skipped - xfail)
    baseline_seconds: float | None = None
    stage: str = ""  # the stage that failed: sample, prepare, build, baseline
    error: str = ""
    log: str = ""  # install log of the failing step, if any
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def good(self) -> bool:
        return self.pass_share is not None and self.pass_share >= PASS_BAR

    @property
    def good_runnable(self) -> bool:
        return self.pass_share_runnable is not None and self.pass_share_runnable >= PASS_BAR

    def count_outcomes(self, counts: dict[str, int]) -> None:
        """Fill the per-outcome columns from ``counts`` (outcome value -> tests)."""
        self.skipped, self.xfail = counts.get("skipped", 0), counts.get("xfail", 0)
        self.failed = counts.get("failed", 0) + counts.get("error", 0)
        if self.tests is None or self.passing is None:
            return
        self.pass_share = round(self.passing / self.tests, 4) if self.tests else 0.0
        runnable = self.tests - self.skipped - self.xfail
        self.pass_share_runnable = round(self.passing / runnable, 4) if runnable > 0 else None

    @classmethod
    def from_saved(cls, data: dict[str, object]) -> Row:
        """A row of a saved results file; one saved before the per-outcome columns gets
        them from its ``extra["outcomes"]``."""
        names = {f.name for f in fields(cls)}
        row = cls(**{k: v for k, v in data.items() if k in names})  # type: ignore[arg-type]
        outcomes = row.extra.get("outcomes")
        if row.skipped is None and isinstance(outcomes, dict):
            row.count_outcomes(outcomes)
        return row


def parse_lib(spec: str) -> tuple[str, str | None]:
    """``NAME`` or ``NAME==VERSION`` -> (name, version or None)."""
    name, _, version = spec.partition("==")
    return name.strip(), version.strip() or None


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:300]


def _sdist_version(path: Path) -> str:
    try:
        text = (path / "PKG-INFO").read_text(errors="replace")
    except OSError:
        return ""
    m = re.search(r"^Version:\s*(\S+)", text, re.MULTILINE)
    return m.group(1) if m else ""


def bench_one(spec: str, out: Path, settings: Settings, log=print) -> Row:
    name, version = parse_lib(spec)
    row = Row(library=name)
    provider = provider_for(settings)
    stage = "sample"
    try:
        path = sample_repo(name, out / "samples", version)
        row.version = _sdist_version(path)
        stage = "prepare"
        prepared = prepare(RepoSpec(source=str(path)), settings)
        stage = "build"
        t = time.monotonic()
        env = build_env(provider, prepared, settings)
        row.build_seconds = round(time.monotonic() - t, 1)
        row.built, row.reused = True, env.reused
        log(f"[{name}] built in {row.build_seconds}s{' (reused)' if env.reused else ''}")
        stage = "baseline"
        t = time.monotonic()
        base = baseline_in(provider, env, prepared,
                           settings.model_copy(update={"baseline_runs": 1}))
        row.baseline_seconds = round(time.monotonic() - t, 1)
        row.tests, row.passing = len(base.outcomes), len(base.passing)
        counts: dict[str, int] = {}
        for outcome in base.outcomes.values():
            counts[outcome.value] = counts.get(outcome.value, 0) + 1
        row.count_outcomes(counts)
        row.extra = {"outcomes": counts, "flaky": len(base.flaky)}
        stage = ""
    except RepogymError as exc:
        row.stage, row.error = stage, _one_line(exc)
        if isinstance(exc, InstallError) and exc.log_path:
            row.log = str(exc.log_path)
    except Exception as exc:  # noqa: BLE001 - a benchmark row, not a crash of the whole run
        row.stage, row.error = stage, f"{type(exc).__name__}: {_one_line(exc)}"
    log(f"[{name}] {'ok' if not row.error else f'FAILED at {row.stage}: {row.error}'}")
    return row


def _fmt(v: object, spec: str = "") -> str:
    if v is None:
        return "–"
    return format(v, spec) if spec else str(v)


def _pct(share: float | None) -> str:
    return _fmt(None if share is None else share * 100, ".1f")


def table(rows: list[Row]) -> str:
    head = ("| library | version | built | build s | tests | passing | skipped | xfail | "
            "failed/error | pass % | pass % of runnable | baseline s | note |")
    lines = [head, "| --- " * 3 + "| ---: " * 9 + "| --- |"]
    for r in rows:
        note = f"{r.stage}: {r.error}" if r.error else ("image reused" if r.reused else "")
        lines.append(
            f"| {r.library} | {r.version} | {'yes' if r.built else 'no'} | "
            f"{_fmt(r.build_seconds)} | {_fmt(r.tests)} | {_fmt(r.passing)} | "
            f"{_fmt(r.skipped)} | {_fmt(r.xfail)} | {_fmt(r.failed)} | "
            f"{_pct(r.pass_share)} | {_pct(r.pass_share_runnable)} | "
            f"{_fmt(r.baseline_seconds)} | {note.replace('|', '/')} |")
    return "\n".join(lines)


def summary_line(rows: list[Row]) -> str:
    m = len(rows)
    built = sum(r.built for r in rows)
    good = sum(r.good for r in rows)
    runnable = sum(r.good_runnable for r in rows)
    return (f"{built}/{m} libraries built; {good}/{m} have >= {PASS_BAR:.0%} of tests passing; "
            f"{runnable}/{m} have >= {PASS_BAR:.0%} of runnable tests passing")


def render(path: Path) -> int:
    """Print the table and summary of a saved results file (see ``--render``)."""
    rows = [Row.from_saved(r) for r in json.loads(path.read_text())["rows"]]
    print(table(rows))
    print()
    print(summary_line(rows))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--libs", default=",".join(DEFAULT_LIBS),
                    help="comma-separated PyPI names, each NAME or NAME==VERSION "
                         "(default: %(default)s)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/repogym-bench"),
                    help="repogym output dir: samples, logs, cache (default: %(default)s)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="libraries processed at once (default 1; >1 makes timings noisier)")
    ap.add_argument("--results", type=Path, default=RESULTS_DIR,
                    help="where the JSON and Markdown results go (default: %(default)s)")
    ap.add_argument("--render", type=Path, metavar="JSON",
                    help="print the table of a saved results file and exit (no Docker)")
    args = ap.parse_args(argv)
    if args.render:
        return render(args.render)

    libs = [s.strip() for s in args.libs.split(",") if s.strip()]
    args.out.mkdir(parents=True, exist_ok=True)
    settings = Settings(out=args.out)
    started = dt.datetime.now(dt.UTC)
    t0 = time.monotonic()

    def log(msg: str) -> None:
        print(f"{time.monotonic() - t0:7.1f}s {msg}", file=sys.stderr, flush=True)

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = list(pool.map(lambda n: bench_one(n, args.out, settings, log), libs))

    total = round(time.monotonic() - t0, 1)
    summary = summary_line(rows)
    md_table = table(rows)
    command = "/tmp/venv/bin/python " + " ".join(
        [str(Path(sys.argv[0]))] + (sys.argv[1:] if argv is None else argv))
    meta = {
        "date": started.date().isoformat(),
        "started_utc": started.isoformat(timespec="seconds"),
        "total_seconds": total,
        "command": command,
        "machine": {"cores": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version()},
        "settings": {"base_image": settings.base_image, "provider": settings.provider,
                     "baseline_runs": 1, "test_timeout": settings.test_timeout,
                     "install_timeout": settings.install_timeout, "jobs": args.jobs,
                     "out": str(args.out)},
        "pass_bar": PASS_BAR,
        "summary": summary,
    }
    print(md_table)
    print()
    print(summary)
    print(f"(total {total}s)")

    args.results.mkdir(parents=True, exist_ok=True)
    stem = args.results / f"env_setup-{meta['date']}"
    stem.with_suffix(".json").write_text(
        json.dumps({**meta, "rows": [asdict(r) for r in rows]}, indent=2) + "\n")
    stem.with_suffix(".md").write_text(
        f"# Environment setup benchmark, {meta['date']}\n\n"
        f"Command: `{command}`  \n"
        f"Machine: {meta['machine']['cores']} cores, {meta['machine']['platform']}; "
        f"base image `{settings.base_image}`; total {total}s.\n\n"
        f"{md_table}\n\n**{summary}**\n")
    print(f"wrote {stem}.json and {stem}.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
