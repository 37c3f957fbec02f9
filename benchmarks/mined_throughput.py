"""Mined-candidate judging on real histories: seconds per candidate, verdicts, F2P sets.

    .venv/bin/python benchmarks/mined_throughput.py --out /tmp/repogym-mined-bench
    PYTHONPATH=/tmp/old-checkout/src .venv/bin/python benchmarks/mined_throughput.py \\
        --out /tmp/repogym-mined-old --label before     # another repogym, same machine

For each git bundle of ``../shared/repos/`` (default: the Python ones), in one run:

1. clone it into ``--out``; the pipeline's own stages prepare it, build the env image,
   record the baseline (``--runs``, default 3) and the per-test coverage;
2. mine the last ``--mine-last`` first-parent commits (default 150; ``--all-branches``: of
   merged branches too), up to ``--max-mined`` candidates (default 20);
3. judge them with ``pipeline.judge_mined`` and the default settings (3 oracle runs,
   probes on), timing each candidate (``Verdict.seconds``) and the stage;
4. record per candidate: status, reason, F2P, P2P count, seconds, and whether the statement
   carries a trailer line (``Key: value`` of git's trailer keys) or quotes the gold patch.

``--save-candidates F`` keeps the mined candidates and ``--candidates F`` judges those instead
of mining (an older repogym's miner picks other commits): the same fixes, both judges.
Only APIs both this repogym and earlier ones have are used, so ``--label before`` with
``PYTHONPATH`` at an older checkout measures that one on the same machine. Writes
``benchmarks/results/mined_throughput-<date>-<label>.{json,md}``; ``--compare A.json``
prints the per-candidate differences against an earlier result (verdicts, F2P).
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import statistics
import subprocess
import time
from pathlib import Path

from repogym.config import Settings
from repogym.generators.mined import CommitSelection, mine_candidates
from repogym.pipeline import baseline_in, build_env, coverage_in, judge_mined, prepare, provider_for
from repogym.schemas.records import Candidate, RepoSpec

RESULTS = Path(__file__).parent / "results"
BUNDLES = Path(__file__).resolve().parents[2] / "shared" / "repos"
PYTHON_BUNDLES = ("pytest-dev+iniconfig", "un33k+python-slugify", "pallets+markupsafe")
TRAILER = re.compile(r"^(Change-Id|Signed-off-by|Co-authored-by|Reviewed-by|Reviewed-on|"
                     r"Acked-by|Tested-by|Reported-by|Cc)\s*:", re.M | re.I)


def _clone(bundle: str, out: Path, bundles: Path) -> Path:
    dest = out / "repos" / bundle
    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", str(bundles / f"{bundle}.bundle"), str(dest)],
                       check=True)
    return dest


def _quotes_patch(statement: str, patch: str) -> bool:
    lines = [ln[1:].strip() for ln in patch.splitlines()
             if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    return any(len(ln) >= 8 and ln in statement for ln in lines)


def _saved(path: Path, bundle: str) -> list[Candidate]:
    """Candidates another run mined (``--save-candidates``), as this repogym's records: the
    fields it does not know are dropped, so an older judge judges the very same fixes."""
    fields = set(Candidate.model_fields)
    rows = json.loads(path.read_text()).get(bundle, [])
    return [Candidate.model_validate({k: v for k, v in row.items() if k in fields})
            for row in rows]


def bench_one(bundle: str, out: Path, settings: Settings, bundles: Path = BUNDLES,
              all_branches: bool = False, log=print, candidates: Path | None = None,
              save: dict | None = None) -> dict:
    src = _clone(bundle, out, bundles)
    provider = provider_for(settings)
    t0 = time.monotonic()
    prepared = prepare(RepoSpec(source=str(src), name=bundle.replace("+", "__")), settings)
    env = build_env(provider, prepared, settings)
    base = baseline_in(provider, env, prepared, settings)
    # the judge uses the per-test coverage for mined fixes where it takes it (repogym since
    # issue 11's end): measured as the pipeline measures it; an older judge never used it
    takes_coverage = "coverage" in inspect.signature(judge_mined).parameters
    cov = coverage_in(provider, env, prepared, base, settings) if takes_coverage else None
    setup = time.monotonic() - t0
    selection = CommitSelection(last=settings.mine_last, first_parent=not all_branches)
    mining = mine_candidates(prepared.checkout, prepared.toolchain, selection,
                             max_candidates=settings.max_mined)
    cands = _saved(candidates, bundle) if candidates else mining.candidates
    if save is not None:
        save[bundle] = [c.model_dump(mode="json") for c in cands]
    log(f"{bundle}: {len(base.outcomes)} tests, {len(cands)} mined candidates "
        f"({mining.scanned} commits scanned)")
    t1 = time.monotonic()
    judged = (judge_mined(provider, env, prepared, base, cands, settings, coverage=cov)
              if takes_coverage else judge_mined(provider, env, prepared, base, cands, settings))
    wall = time.monotonic() - t1
    rows = {}
    for j in judged:
        v, c = j.verdict, j.candidate
        rows[c.provenance.get("commit", c.instance_id)] = {
            "status": v.status.value, "reason": v.reason, "detail": v.detail[:400],
            "seconds": v.seconds,
            "f2p": list(v.fail_to_pass), "p2p": len(v.pass_to_pass),
            "trailer": bool(TRAILER.search(j.statement)),
            "quotes_patch": _quotes_patch(j.statement, c.gold_patch),
            "statement": j.statement[:600]}
    secs = [r["seconds"] for r in rows.values()]
    return {"bundle": bundle, "tests": len(base.outcomes), "candidates": len(cands),
            "setup_seconds": round(setup, 1), "judge_wall_seconds": round(wall, 1),
            "median_seconds": round(statistics.median(secs), 2) if secs else 0.0,
            "mean_seconds": round(statistics.fmean(secs), 2) if secs else 0.0,
            "verdicts": dict(sorted(_count(r["status"] for r in rows.values()).items())),
            "rows": rows}


def _count(items) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out


def table(results: list[dict]) -> str:
    lines = ["| repository | tests | mined | judge wall s | median s/cand | mean s/cand | "
             "verdicts | with a trailer | quoting the fix |", "|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in results:
        rows = r["rows"].values()
        lines.append(f"| {r['bundle']} | {r['tests']} | {r['candidates']} | "
                     f"{r['judge_wall_seconds']} | {r['median_seconds']} | {r['mean_seconds']} | "
                     f"{', '.join(f'{k} {v}' for k, v in r['verdicts'].items())} | "
                     f"{sum(x['trailer'] for x in rows)} | {sum(x['quotes_patch'] for x in rows)} |")
    return "\n".join(lines)


def compare(results: list[dict], path: Path) -> list[str]:
    """Per-candidate differences (status, F2P) against an earlier result file."""
    earlier = {r["bundle"]: r["rows"] for r in json.loads(path.read_text())["results"]}
    diffs = []
    for r in results:
        for commit, row in r["rows"].items():
            old = earlier.get(r["bundle"], {}).get(commit)
            if old is None:
                diffs.append(f"{r['bundle']} {commit[:10]}: not in {path.name}")
            elif (old["status"], sorted(old["f2p"])) != (row["status"], sorted(row["f2p"])):
                diffs.append(f"{r['bundle']} {commit[:10]}: {old['status']} {old['f2p'][:3]} -> "
                             f"{row['status']} {row['f2p'][:3]}")
    return diffs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundles", default=",".join(PYTHON_BUNDLES))
    ap.add_argument("--bundles-dir", type=Path, default=BUNDLES)
    ap.add_argument("--out", type=Path, default=Path("/tmp/repogym-mined-bench"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--mine-last", type=int, default=150)
    ap.add_argument("--max-mined", type=int, default=20)
    ap.add_argument("--all-branches", action="store_true",
                    help="also mine the commits of merged branches (not only first parents)")
    ap.add_argument("--workers", type=int, default=1,
                    help="sandboxes judging in parallel (Settings.workers; default 1, as the "
                         "pipeline's default)")
    ap.add_argument("--save-candidates", type=Path,
                    help="write the mined candidates here (JSON), for --candidates")
    ap.add_argument("--candidates", type=Path,
                    help="judge these candidates (from --save-candidates) instead of mining: "
                         "an older judge then judges the very same fixes")
    ap.add_argument("--label", default="now")
    ap.add_argument("--compare", type=Path, help="an earlier result JSON to diff verdicts with")
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    if args.compare and not args.compare.is_file():
        ap.error(f"--compare: no such file: {args.compare}")
    if args.candidates and not args.candidates.is_file():
        ap.error(f"--candidates: no such file: {args.candidates}")
    settings = Settings(out=args.out / "data", baseline_runs=args.runs,
                        mine_last=args.mine_last, max_mined=args.max_mined,
                        generators=("mined",), workers=args.workers)
    start = time.monotonic()
    saved: dict = {}
    results = [bench_one(b, args.out, settings, args.bundles_dir, args.all_branches,
                         candidates=args.candidates, save=saved)
               for b in args.bundles.split(",") if b]
    if args.save_candidates:
        args.save_candidates.write_text(json.dumps(saved) + "\n")
    md = table(results)
    print(md)
    doc = {"label": args.label, "seconds": round(time.monotonic() - start, 1),
           "settings": {"runs": args.runs, "workers": args.workers, "mine_last": args.mine_last,
                        "max_mined": args.max_mined, "all_branches": args.all_branches}, "results": results}
    if args.compare:
        doc["differences"] = compare(results, args.compare)
        print("differences:", *doc["differences"] or ["none"], sep="\n  ")
    args.results.mkdir(parents=True, exist_ok=True)
    stem = args.results / f"mined_throughput-{time.strftime('%Y-%m-%d')}-{args.label}"
    stem.with_suffix(".json").write_text(json.dumps(doc, indent=2) + "\n")
    stem.with_suffix(".md").write_text(md + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
