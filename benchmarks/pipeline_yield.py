"""Pipeline figures on the sample repositories: stage times, candidates per minute, yield.

    .venv/bin/python benchmarks/pipeline_yield.py --samples inflection,iniconfig,isodate \
        --max-candidates 30 --out /tmp/repogym-yield

Prints one row per repository (image build, baseline, judge seconds, candidates/min,
accepted/candidates) and the yield per mutator over all of them; writes the same as JSON
and Markdown to benchmarks/results/pipeline_yield-<date>.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path

from repogym.config import Settings
from repogym.pipeline import RunSummary, run_repo
from repogym.samples import sample_repo
from repogym.schemas.records import RepoSpec

RESULTS = Path(__file__).parent / "results"


def run(samples: list[str], settings: Settings) -> list[RunSummary]:
    out = []
    for name in samples:
        path = sample_repo(name, settings.out / "samples")
        out.append(run_repo(RepoSpec(source=str(path)), settings))
    return out


def per_key(summaries: list[RunSummary], attr: str = "per_mutator") -> dict[str, dict[str, int]]:
    total: dict[str, dict[str, int]] = defaultdict(lambda: {"candidates": 0, "accepted": 0})
    for s in summaries:
        for mut, row in getattr(s, attr).items():
            total[mut]["candidates"] += row["candidates"]
            total[mut]["accepted"] += row["accepted"]
    return dict(sorted(total.items()))


def yield_table(title: str, rows: dict[str, dict[str, int]]) -> list[str]:
    lines = ["", f"| {title} | candidates | accepted | yield |", "| --- | --- | --- | --- |"]
    for key, row in rows.items():
        y = row["accepted"] / row["candidates"] if row["candidates"] else 0.0
        lines.append(f"| {key} | {row['candidates']} | {row['accepted']} | {y:.0%} |")
    return lines


def markdown(summaries: list[RunSummary], muts: dict[str, dict[str, int]], cmd: str) -> str:
    lines = [f"Command: `{cmd}`", "",
             "| repo | tests | env s | baseline s | judge s | cand/min | accepted/cand | rejected |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for s in summaries:
        judge = s.stage_seconds.get("judge", 0.0)
        judged = s.candidates - s.skipped_seen
        cpm = judged / judge * 60 if judge else 0.0
        lines.append(f"| {s.repo} | {s.baseline_tests} | {s.stage_seconds.get('env', 0):.1f} | "
                     f"{s.stage_seconds.get('baseline', 0):.1f} | {judge:.1f} | {cpm:.1f} | "
                     f"{s.accepted}/{judged} | {s.rejected} |")
    lines += yield_table("generator", per_key(summaries, "per_generator"))
    lines += yield_table("mutator", muts)
    acc = sum(r["accepted"] for r in muts.values())
    cand = sum(r["candidates"] for r in muts.values())
    lines += ["", f"Overall yield: {acc}/{cand} = {acc / max(cand, 1):.0%}"]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", default="inflection,iniconfig,isodate")
    ap.add_argument("--max-candidates", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("/tmp/repogym-yield"))
    args = ap.parse_args()
    settings = Settings(out=args.out, max_candidates=args.max_candidates,
                        baseline_runs=args.runs, oracle_runs=args.runs)
    t0 = time.monotonic()
    summaries = run(args.samples.split(","), settings)
    muts = per_key(summaries)
    cmd = (f"python benchmarks/pipeline_yield.py --samples {args.samples} "
           f"--max-candidates {args.max_candidates} --runs {args.runs}")
    md = markdown(summaries, muts, cmd) + f"\nWall time: {time.monotonic() - t0:.0f}s\n"
    print(md)
    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y-%m-%d")
    (RESULTS / f"pipeline_yield-{stamp}.md").write_text(md)
    (RESULTS / f"pipeline_yield-{stamp}.json").write_text(
        json.dumps({"summaries": [asdict(s) for s in summaries], "per_mutator": muts}, indent=2))


if __name__ == "__main__":
    main()
