"""What re-verifying a corpus costs: `repogym dataset reverify` on real accepted tasks.

Copies a dataset built by the pipeline (``--dataset``: its tasks must have their env images
in the engine) to a scratch folder, so the original is not touched, and re-verifies its
tasks there, as ``repogym dataset reverify --workers N`` does: the gold patch and the empty
patch graded in each task's image (a gold below 1 graded again), then the store rewritten
(held tasks count one more re-verification; tasks that no longer hold retired). Reports the
wall time, tasks per minute, the figure per 1,000 tasks, and held / retired / undecided per
repository.

    .venv/bin/python benchmarks/reverify_cost.py --dataset /work/bench-reverify/data \
        --workers 2 --name 2026-12-04

Results go to stdout and ``benchmarks/results/reverify_cost-<name>.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

from repogym.datasets import DatasetStore
from repogym.datasets.reverify import reverify

RESULTS = Path(__file__).parent / "results"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", type=Path, required=True)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="at most this many tasks (0: all)")
    ap.add_argument("--name", default=time.strftime("%Y-%m-%d"))
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="rg-reverify-bench-") as tmp:
        copy = Path(tmp) / "data"
        shutil.copytree(args.dataset, copy, ignore=shutil.ignore_patterns(".cache", "logs"))
        store = DatasetStore(copy)
        rows = store.rows("tasks")
        ids = [r.instance_id for r in rows][: args.limit or None]
        per_repo = Counter(r.repo for r in rows if r.instance_id in set(ids))
        start = time.monotonic()
        report = reverify(store, ids=ids, workers=args.workers)
        seconds = time.monotonic() - start
        after = store.rows("tasks")
    repo_of = {r.instance_id: r.repo for r in rows}
    result = {
        "name": args.name, "dataset": str(args.dataset), "workers": args.workers,
        "machine": f"{platform.platform()}, {os.cpu_count()} cores",
        "tasks": len(ids), "seconds": round(seconds, 1),
        "tasks_per_minute": round(60 * len(ids) / seconds, 1) if seconds else None,
        "minutes_per_1000": round(1000 * seconds / len(ids) / 60, 1) if ids else None,
        "held": len(report.held), "retired": len(report.retired),
        "undecided": len(report.undecided),
        "per_repo": {repo: {"tasks": n,
                            "retired": sum(repo_of[r.instance_id] == repo for r in report.retired),
                            "undecided": sum(repo_of[r.instance_id] == repo
                                             for r in report.undecided)}
                     for repo, n in sorted(per_repo.items())},
        "retired_lines": report.lines()[1:21],
        "reverified_counts": dict(Counter(r.confidence_record.reverified for r in after)),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"reverify_cost-{args.name}.json").write_text(json.dumps(result, indent=2))
    md = [f"# Re-verifying {len(ids)} tasks ({args.name})", "",
          f"`{' '.join(['benchmarks/reverify_cost.py', '--dataset', str(args.dataset), '--workers', str(args.workers)])}`",
          "", f"- machine: {result['machine']}",
          f"- wall time: {result['seconds']} s with {args.workers} workers: "
          f"{result['tasks_per_minute']} tasks/min, **{result['minutes_per_1000']} min per "
          "1,000 tasks**",
          f"- held {result['held']}, retired {result['retired']}, undecided "
          f"{result['undecided']}", "", "| repo | tasks | retired | undecided |", "|---|---|---|---|"]
    md += [f"| {repo} | {v['tasks']} | {v['retired']} | {v['undecided']} |"
           for repo, v in result["per_repo"].items()]
    text = "\n".join(md + [""] + [f"    {line}" for line in result["retired_lines"]]) + "\n"
    (RESULTS / f"reverify_cost-{args.name}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
