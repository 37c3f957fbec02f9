"""Benchmark: the heuristic (no-LLM) environment recipe over pure-Python PyPI libraries.

For each library: turn its sdist into a git repository (``repogym.samples.sample_repo``),
build its environment image with the Python toolchain's recipe, run its test suite once in
that image, and record whether the image built, how long it took, how many tests were
collected and which share of them passed.

    /tmp/venv/bin/python benchmarks/env_setup.py [--libs a,b,c] [--out DIR] [--jobs N]

Writes ``benchmarks/results/env_setup-<date>.json`` and ``.md`` and prints the table with the
summary line "N/M libraries built; K/M have >= 90% of tests passing".

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
from dataclasses import asdict, dataclass, field
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
    pass_share: float | None = None
    baseline_seconds: float | None = None
    stage: str = ""  # the stage that failed: sample, prepare, build, baseline
    error: str = ""
    log: str = ""  # install log of the failing step, if any
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def good(self) -> bool:
        return self.pass_share is not None and self.pass_share >= PASS_BAR


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:300]


def _sdist_version(path: Path) -> str:
    try:
        text = (path / "PKG-INFO").read_text(errors="replace")
    except OSError:
        return ""
    m = re.search(r"^Version:\s*(\S+)", text, re.M)
    return m.group(1) if m else ""


def bench_one(name: str, out: Path, settings: Settings, log=print) -> Row:
    row = Row(library=name)
    provider = provider_for(settings)
    stage = "sample"
    try:
        path = sample_repo(name, out / "samples")
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
        row.pass_share = round(row.passing / row.tests, 4) if row.tests else 0.0
        counts: dict[str, int] = {}
        for outcome in base.outcomes.values():
            counts[outcome.value] = counts.get(outcome.value, 0) + 1
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


def table(rows: list[Row]) -> str:
    head = ("| library | version | built | build s | tests | passing | pass % | baseline s | "
            "note |")
    lines = [head, "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        note = f"{r.stage}: {r.error}" if r.error else ("image reused" if r.reused else "")
        pct = None if r.pass_share is None else r.pass_share * 100
        lines.append(
            f"| {r.library} | {r.version} | {'yes' if r.built else 'no'} | "
            f"{_fmt(r.build_seconds)} | {_fmt(r.tests)} | {_fmt(r.passing)} | "
            f"{_fmt(pct, '.1f')} | {_fmt(r.baseline_seconds)} | {note.replace('|', '/')} |")
    return "\n".join(lines)


def summary_line(rows: list[Row]) -> str:
    m = len(rows)
    built = sum(r.built for r in rows)
    good = sum(r.good for r in rows)
    return (f"{built}/{m} libraries built; {good}/{m} have >= {PASS_BAR:.0%} of tests passing")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--libs", default=",".join(DEFAULT_LIBS),
                    help="comma-separated PyPI names (default: %(default)s)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/repogym-bench"),
                    help="repogym output dir: samples, logs, cache (default: %(default)s)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="libraries processed at once (default 1; >1 makes timings noisier)")
    ap.add_argument("--results", type=Path, default=RESULTS_DIR,
                    help="where the JSON and Markdown results go (default: %(default)s)")
    args = ap.parse_args(argv)

    libs = [s.strip() for s in args.libs.split(",") if s.strip()]
    args.out.mkdir(parents=True, exist_ok=True)
    settings = Settings(out=args.out)
    started = dt.datetime.now(dt.timezone.utc)
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
