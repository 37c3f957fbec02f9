"""Per-language figures on real repositories: environment set-up, synthetic yield per
mutator, judge seconds per candidate.

    .venv/bin/python benchmarks/language_bench.py --label js --sources \\
        /work/shared/repos/vercel+ms.bundle,/work/.mirror/lukeed+clsx/repo,... \\
        --max-candidates 10 --out /tmp/repogym-lang

For each source (a git bundle, a bare mirror or a working tree) in one run: clone it into
``--out``, then the pipeline as ``repogym run`` does it, with the procedural generator only
(``--max-candidates``, combined bugs off), the default settings otherwise (3 baseline runs,
3 oracle runs, the probe set once per image). A source whose environment does not build, or
whose suite does not run, is a row with the stage and the error: that is the set-up figure.

``--env-only`` sources get set-up rows only: clone, toolchain, env image, baseline
(``--env-baseline-runs`` runs, default 1), no coverage, candidates or judging; their
candidates and judge columns are 0 and their ``mode`` is ``env-only``.

Writes ``benchmarks/results/language_bench-<date>-<label>.{json,md}``: one row per
repository (toolchain, runner, built, env and baseline seconds, tests and passing, candidates,
accepted, judge seconds per candidate) and the yield per mutator over all of them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from repogym.config import Settings
from repogym.errors import RepogymError
from repogym.pipeline import RunSummary, run_repo
from repogym.schemas.records import RepoSpec

RESULTS = Path(__file__).parent / "results"


@dataclass
class Row:
    source: str
    mode: str = "full"  # or "env-only": build and baseline, no candidates
    repo: str = ""
    language: str = ""
    runner: str = ""
    built: bool = False
    stage: str = ""  # where it stopped, when it did
    error: str = ""
    env_s: float = 0.0
    image_reused: bool = False  # env s is then the cache lookup, not a build
    baseline_s: float = 0.0
    tests: int = 0
    passing: int = 0
    candidates: int = 0
    accepted: int = 0
    judge_s: float = 0.0
    per_mutator: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def judge_per_candidate(self) -> float:
        return self.judge_s / self.candidates if self.candidates else 0.0


def clone(source: str, out: Path) -> Path | str:
    """The source's clone under ``out`` (made once), or why it could not be made."""
    name = Path(source).name.removesuffix(".bundle")
    if name in ("repo", ".git"):
        name = Path(source).parent.name if name == "repo" else Path(source).parents[1].name
    dest = out / "repos" / name
    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            subprocess.run(["git", "clone", "-q", source, str(dest)], check=True)
        except subprocess.CalledProcessError as exc:
            shutil.rmtree(dest, ignore_errors=True)  # no half checkout
            return f"git clone exited {exc.returncode}"
    return dest


def bench(source: str, settings: Settings) -> Row:
    row = Row(source=source)
    path = clone(source, settings.out)
    if isinstance(path, str):
        row.stage, row.error = "clone", path
        return row
    try:
        summary = run_repo(RepoSpec(source=str(path)), settings)
    except RepogymError as exc:
        row.stage, row.error = type(exc).__name__, str(exc).splitlines()[0][:300]
        row.built = "Install" not in row.stage and "ImageBuild" not in row.stage
        return row
    fill(row, summary, path)
    return row


def bench_env_only(source: str, settings: Settings) -> Row:
    """Set-up only: prepare, build the env image, record the baseline; nothing after."""
    from repogym.pipeline import baseline_in, build_env, prepare, provider_for

    row = Row(source=source, mode="env-only")
    path = clone(source, settings.out)
    if isinstance(path, str):
        row.stage, row.error = "clone", path
        return row
    stage = "clone"
    try:
        prepared = prepare(RepoSpec(source=str(path)), settings)
        row.repo = prepared.checkout.name
        describe(row, path)
        provider = provider_for(settings)
        stage, t = "env", time.monotonic()
        env = build_env(provider, prepared, settings)
        row.env_s = round(time.monotonic() - t, 2)
        row.built, row.image_reused = True, env.reused
        stage, t = "baseline", time.monotonic()
        base = baseline_in(provider, env, prepared, settings)
        row.baseline_s = round(time.monotonic() - t, 2)
    except RepogymError as exc:
        row.stage = f"{stage}: {type(exc).__name__}"
        row.error = str(exc).splitlines()[0][:300]
        return row
    row.tests, row.passing = len(base.outcomes), len(base.passing)
    return row


def describe(row: Row, path: Path) -> None:
    from repogym.toolchains import detect_toolchain
    from repogym.toolchains.javascript.project import Project

    toolchain = detect_toolchain(path)
    row.language = toolchain.language
    project = Project.read(path) if toolchain.language == "javascript" else None
    row.runner = project.runner() if project else {
        "python": "pytest", "go": "go test", "rust": "cargo test", "java": "maven"}.get(
        toolchain.language, toolchain.language)


def fill(row: Row, s: RunSummary, path: Path) -> None:
    describe(row, path)
    row.repo, row.built, row.image_reused = s.repo, True, s.image_reused
    row.env_s, row.baseline_s = s.stage_seconds.get("env", 0.0), s.stage_seconds.get(
        "baseline", 0.0)
    row.tests, row.passing = s.baseline_tests, s.baseline_passing
    row.candidates, row.accepted = s.candidates, s.accepted
    row.judge_s = s.stage_seconds.get("judge", 0.0)
    row.per_mutator = s.per_mutator


def per_mutator(rows: list[Row]) -> dict[str, dict[str, int]]:
    total: dict[str, dict[str, int]] = defaultdict(lambda: {"candidates": 0, "accepted": 0})
    for row in rows:
        for name, counts in row.per_mutator.items():
            total[name]["candidates"] += counts.get("candidates", 0)
            total[name]["accepted"] += counts.get("accepted", 0)
    return dict(sorted(total.items()))


def markdown(rows: list[Row], label: str, seconds: float) -> str:
    lines = [f"# Language benchmark: {label}", "",
             "| repository | mode | runner | built | env s | baseline s | tests | passing | "
             "candidates | accepted | judge s/cand | stopped at |",
             "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        stop = f"{r.stage}: {r.error}".replace("|", "\\|") if r.stage else ""
        stop = stop or ("image reused" if r.image_reused else "")
        lines.append(f"| {r.repo or r.source} | {r.mode} | {r.runner} | "
                     f"{'yes' if r.built else 'no'} | "
                     f"{r.env_s:.1f} | {r.baseline_s:.1f} | {r.tests} | {r.passing} | "
                     f"{r.candidates} | {r.accepted} | {r.judge_per_candidate:.2f} | {stop} |")
    ok = sum(1 for r in rows if r.built and r.passing)
    full = [r for r in rows if r.mode == "full" and r.candidates]
    cands = sum(r.candidates for r in full)
    judge = sum(r.judge_s for r in full)
    lines += ["", f"Set up (built, some test passing): {ok} of {len(rows)}. "
                  f"Wall time {seconds:.0f} s."]
    if cands:
        lines.append(f"Judged: {cands} candidates in {len(full)} repositories, "
                     f"{sum(r.accepted for r in full)} accepted, "
                     f"{judge / cands:.2f} judge s per candidate.")
    lines += ["", "| mutator | candidates | accepted | yield |",
              "| --- | ---: | ---: | ---: |"]
    for name, c in per_mutator(rows).items():
        share = c["accepted"] / c["candidates"] if c["candidates"] else 0.0
        lines.append(f"| {name} | {c['candidates']} | {c['accepted']} | {share:.0%} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sources", default="", help="comma-separated git sources")
    ap.add_argument("--env-only", default="",
                    help="comma-separated git sources to set up only (no candidates)")
    ap.add_argument("--env-baseline-runs", type=int, default=1,
                    help="baseline runs for the --env-only sources (default 1)")
    ap.add_argument("--env-first", action="store_true",
                    help="run the --env-only sources before the --sources ones")
    ap.add_argument("--append", action="store_true",
                    help="keep the rows of the same day's results file with this label and "
                         "run only the sources it has no row for")
    ap.add_argument("--label", default="now")
    ap.add_argument("--max-candidates", type=int, default=10)
    ap.add_argument("--out", type=Path, default=Path("/tmp/repogym-lang"))
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args()
    settings = Settings(out=args.out, generators=("procedural",),
                        max_candidates=args.max_candidates, max_combined=0)
    start = time.monotonic()
    stamp = time.strftime("%Y-%m-%d")
    args.results.mkdir(parents=True, exist_ok=True)
    base = args.results / f"language_bench-{stamp}-{args.label}"
    env_settings = settings.model_copy(update={"baseline_runs": args.env_baseline_runs})
    full = [(s, bench, settings) for s in args.sources.split(",") if s]
    env = [(s, bench_env_only, env_settings) for s in args.env_only.split(",") if s]
    todo = env + full if args.env_first else full + env
    rows: list[Row] = []
    if args.append and base.with_suffix(".json").exists():  # go on with an earlier run's rows
        old = json.loads(base.with_suffix(".json").read_text())
        rows = [Row(**r) for r in old["rows"]]
        start -= old["seconds"]
        todo = [t for t in todo if t[0] not in {r.source for r in rows}]
    text = write(base, args.label, rows, time.monotonic() - start, bool(todo))
    for left, (source, fn, how) in enumerate(todo, start=1):
        row = fn(source, how)
        print(json.dumps(asdict(row))[:400], flush=True)
        rows.append(row)
        # written after every row: a run stopped early keeps the rows it finished
        text = write(base, args.label, rows, time.monotonic() - start, left < len(todo))
    print(text)


def write(base: Path, label: str, rows: list[Row], seconds: float, partial: bool) -> str:
    base.with_suffix(".json").write_text(json.dumps(
        {"label": label, "seconds": seconds, "partial": partial,
         "rows": [asdict(r) for r in rows], "per_mutator": per_mutator(rows)}, indent=2))
    text = markdown(rows, label + (" (partial: stopped early)" if partial else ""), seconds)
    base.with_suffix(".md").write_text(text)
    return text


if __name__ == "__main__":
    main()
