"""What a candidate whose bug makes a test hang costs the judge.

    .venv/bin/python benchmarks/hang_cost.py --out /tmp/repogym-hang-bench
    PYTHONPATH=/tmp/old-checkout/src .venv/bin/python benchmarks/hang_cost.py \\
        --out /tmp/repogym-hang-old --label before --variants loop    # an earlier repogym

On one sample library (``--sample``, default cachetools: its caches use locks), in one run:

1. the pipeline's stages prepare it, build the env image, record the baseline (default 3
   runs) and the per-test coverage;
2. pick the first ``--functions`` functions (by file and line) of the package whose first
   statement 1 to 5 stable tests execute, and make each hang in every variant of
   ``--variants``: ``loop`` (``while True: pass`` first), ``lock`` (a lock acquired twice),
   ``uninterruptible`` (``SIGALRM`` ignored, then the loop: only killing the run stops it);
   the gold patch is the exact reverse;
3. judge them with ``pipeline.judge_all`` and the default settings (3 oracle runs, probes
   on; ``test_timeout`` 600 s), timing each (``Verdict.seconds``);
4. writes ``benchmarks/results/hang_cost-<date>-<label>.{json,md}``: per candidate the
   variant, function, verdict, F2P count, seconds and the statement's first observation.
"""

from __future__ import annotations

import argparse
import ast
import json
import statistics
import time
from pathlib import Path

from repogym.config import Settings
from repogym.patches import reverse_diff, unified_diff
from repogym.pipeline import baseline_in, build_env, coverage_in, judge_all, prepare, provider_for
from repogym.samples import sample_repo
from repogym.schemas.records import Candidate, CandidateKind, RepoSpec

RESULTS = Path(__file__).parent / "results"
HANGS = {
    "loop": ["while True:", "    pass"],
    "lock": ["import threading as _rg_threading", "_rg_lock = _rg_threading.Lock()",
             "_rg_lock.acquire()", "_rg_lock.acquire()"],
    "uninterruptible": ["import signal as _rg_signal",
                        "_rg_signal.signal(_rg_signal.SIGALRM, _rg_signal.SIG_IGN)",
                        "while True:", "    pass"],
}


def hang_sites(root: Path, coverage, stable: set[str], n: int) -> list[tuple[str, int, str]]:
    """(file, line of the first statement, function) of ``n`` functions 1-5 tests run."""
    sites = []
    for path in sorted(coverage.files):
        if not path.endswith(".py") or "test" in path:
            continue
        tree = ast.parse((root / path).read_text())
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not node.body:
                continue
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if len(node.body) < 2:
                    continue
                first = node.body[1]  # after the docstring
            tests = set(coverage.files[path].get(first.lineno, ())) & stable
            if 1 <= len(tests) <= 5 and first.lineno > node.lineno:
                sites.append((path, first.lineno, node.name))
    return sorted(sites)[:n]


def hanging(root: Path, repo: str, commit: str, site: tuple[str, int, str],
            variant: str) -> Candidate:
    path, line, func = site
    before = (root / path).read_text()
    lines = before.splitlines(keepends=True)
    indent = lines[line - 1][:len(lines[line - 1]) - len(lines[line - 1].lstrip())]
    lines[line - 1:line - 1] = [f"{indent}{code}\n" for code in HANGS[variant]]
    bug = unified_diff(path, before, "".join(lines))
    return Candidate(kind=CandidateKind.synthetic, repo=repo, base_commit=commit,
                     bug_patch=bug, gold_patch=reverse_diff(bug), generator="hang-bench",
                     mutator=variant, files=(path,), lines=(line,),
                     provenance={"function": func})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", default="cachetools")
    ap.add_argument("--out", type=Path, default=Path("/tmp/repogym-hang-bench"))
    ap.add_argument("--functions", type=int, default=2)
    ap.add_argument("--variants", default=",".join(HANGS))
    ap.add_argument("--label", default="now")
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    settings = Settings(out=args.out / "data", generators=("procedural",))
    src = sample_repo(args.sample, args.out / "samples")
    provider = provider_for(settings)
    prepared = prepare(RepoSpec(source=str(src)), settings)
    env = build_env(provider, prepared, settings)
    base = baseline_in(provider, env, prepared, settings)
    cov = coverage_in(provider, env, prepared, base, settings)
    assert cov is not None, "no coverage: cannot pick the functions"
    root, co = prepared.checkout.path, prepared.checkout
    sites = hang_sites(root, cov, base.stable_passing(), args.functions)
    cands = [hanging(root, co.name, co.commit, site, v)
             for site in sites for v in args.variants.split(",")]
    start = time.monotonic()
    judged = judge_all(provider, env, prepared, base, cands, settings, coverage=cov)
    rows = [{"variant": j.candidate.mutator, "function": j.candidate.provenance["function"],
             "status": j.verdict.status.value, "reason": j.verdict.reason,
             "f2p": len(j.verdict.fail_to_pass), "seconds": j.verdict.seconds,
             "statement": next((ln for ln in j.statement.splitlines() if ln.startswith("- ")),
                               j.statement.splitlines()[0] if j.statement else "")}
            for j in judged]
    secs = [r["seconds"] for r in rows]
    doc = {"label": args.label, "sample": args.sample, "tests": len(base.outcomes),
           "judge_wall_seconds": round(time.monotonic() - start, 1),
           "median_seconds": round(statistics.median(secs), 2) if secs else 0.0,
           "max_seconds": max(secs, default=0.0), "rows": rows}
    md = ["| variant | function | verdict | F2P | seconds | statement |",
          "|---|---|---|---:|---:|---|"]
    md += [f"| {r['variant']} | `{r['function']}` | {r['status']} {r['reason']} | {r['f2p']} | "
           f"{r['seconds']} | {r['statement'][:90]} |" for r in rows]
    print("\n".join(md))
    args.results.mkdir(parents=True, exist_ok=True)
    stem = args.results / f"hang_cost-{time.strftime('%Y-%m-%d')}-{args.label}"
    stem.with_suffix(".json").write_text(json.dumps(doc, indent=2) + "\n")
    stem.with_suffix(".md").write_text("\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
