"""How many of a repository's tasks have a near-duplicate among its other tasks. No Docker.

Reads the ``tasks`` table of a dataset built by the pipeline and, per repository and per
generator kind (synthetic: procedural and LLM; combined; mined), counts the tasks that are
in at least one near-duplicate pair (:func:`repogym.datasets.overlap.near_pairs`: statement
word 4-grams or changed patch lines, exact Jaccard) at each threshold, and says why for a
few pairs (statement or patch, and a combined bug beside one of its parts).

    .venv/bin/python benchmarks/near_duplicates.py --dataset /work/bench-reverify/data \
        --name 2026-12-04

Results go to stdout and ``benchmarks/results/near_duplicates-<name>.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

from repogym.datasets import DatasetStore
from repogym.datasets.overlap import near_pairs
from repogym.datasets.splits import docs_of
from repogym.schemas.arrow import TaskRow

RESULTS = Path(__file__).parent / "results"
THRESHOLDS = (0.5, 0.8)


def kind_of(row: TaskRow) -> str:
    if row.generator == "combined":
        return "combined"
    return "mined" if row.kind.value == "mined" else "synthetic"


def parts_of(row: TaskRow) -> set[str]:
    return {p for p in row.provenance.get("parts", "").split(",") if p}


def measure(rows: list[TaskRow], threshold: float) -> dict[str, object]:
    pairs = near_pairs(docs_of(rows), threshold)
    by_id = {r.instance_id: r for r in rows}
    in_pair = {i for p in pairs for i in (p.a, p.b)}
    why = defaultdict(int)
    for p in pairs:
        a, b = by_id[p.a], by_id[p.b]
        if p.a in parts_of(b) or p.b in parts_of(a):
            why["combined bug beside its part"] += 1
        elif p.statement >= threshold and p.patch >= threshold:
            why["statement and patch"] += 1
        elif p.statement >= threshold:
            why["statement only"] += 1
        else:
            why["patch only"] += 1
    return {"tasks": len(rows), "in_a_pair": len(in_pair),
            "rate": round(len(in_pair) / len(rows), 3) if rows else 0.0,
            "pairs": len(pairs), "why": dict(why)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", type=Path, required=True)
    ap.add_argument("--name", default=time.strftime("%Y-%m-%d"))
    args = ap.parse_args()
    rows = DatasetStore(args.dataset).rows("tasks")
    groups: dict[tuple[str, str], list[TaskRow]] = defaultdict(list)
    for r in rows:
        groups[(r.repo, kind_of(r))].append(r)
        groups[(r.repo, "all")].append(r)
    result = {f"{repo}/{kind}": {str(t): measure(group, t) for t in THRESHOLDS}
              for (repo, kind), group in sorted(groups.items())}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"near_duplicates-{args.name}.json").write_text(json.dumps(result, indent=2))
    md = [f"# Near-duplicate rate within each repository ({args.name})", "",
          f"`benchmarks/near_duplicates.py --dataset {args.dataset}`", "",
          "| repo / kind | tasks | " + " | ".join(f"in a pair at {t}" for t in THRESHOLDS)
          + " | why (at 0.5) |", "|---|---|" + "---|" * len(THRESHOLDS) + "---|"]
    for key, per in result.items():
        cells = [f"{per[str(t)]['in_a_pair']} ({per[str(t)]['rate']:.0%})" for t in THRESHOLDS]
        why = ", ".join(f"{k}: {v}" for k, v in per["0.5"]["why"].items())
        md.append(f"| {key} | {per['0.5']['tasks']} | " + " | ".join(cells) + f" | {why} |")
    text = "\n".join(md) + "\n"
    (RESULTS / f"near_duplicates-{args.name}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
