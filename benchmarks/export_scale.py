"""Size on disk and export time of 1,000 realistic tasks, per export format. No Docker.

Makes N task rows shaped like the pipeline's (seeded): 70 % synthetic bugs (one- to
three-hunk bug patches, gold = the reverse, no test patch) and 30 % mined fixes (gold
patches of 3-8 hunks over 1-3 files, test patches adding 25-110 lines), statements of 0.5-3 kB,
1-4 FAIL_TO_PASS and a log-normal PASS_TO_PASS count (median 80 test ids), spread over 10
repositories. It writes them to a real DatasetStore, measures the store's size, then
exports them in every registered format (``repeats`` times each, into a fresh directory)
and reads each export back with its consumer's loader.

    .venv/bin/python benchmarks/export_scale.py                 # 1,000 tasks, 3 repeats
    .venv/bin/python benchmarks/export_scale.py --tasks 200 --repeats 1 --out /tmp/es

Results go to stdout and ``benchmarks/results/export_scale.txt``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import sys
import time
from datetime import date
from pathlib import Path
from typing import Callable

from repogym.datasets import DatasetStore
from repogym.datasets.exports import EXPORTERS, export_rows
from repogym.patches import new_file_diff, reverse_diff, unified_diff
from repogym.schemas.arrow import TaskRow
from repogym.schemas.records import Candidate, CandidateKind, Judged, Status, Verdict

WORDS = ("value result item index config parser token buffer request response handler "
         "cache key path node tree match pattern encode decode offset length count limit "
         "timeout retry session stream header payload schema field record entry").split()
PROSE = ("the function returns a wrong value when the input is empty and this breaks "
         "callers that expect the documented behaviour instead it should raise an error or "
         "return the default as before the regression appeared after the last release we "
         "noticed it while upgrading our service and a minimal example is below").split()


def _name(rng: random.Random) -> str:
    return "_".join(rng.sample(WORDS, 2))


def _source(rng: random.Random, functions: int = 6) -> str:
    """A plausible Python module: a few functions of 5-9 lines each."""
    out = []
    for _ in range(functions):
        args = ", ".join(rng.sample(WORDS, rng.randint(1, 3)))
        body = [f"    {_name(rng)} = {rng.choice(WORDS)}.get({rng.choice(WORDS)!r}, "
                f"{rng.randint(0, 99)})" for _ in range(rng.randint(3, 7))]
        body.append(f"    return {rng.choice(WORDS)} + {rng.randint(1, 9)}")
        out.append(f"def {_name(rng)}({args}):\n" + "\n".join(body) + "\n")
    return "\n\n".join(out)


def _mutate(rng: random.Random, text: str, hunks: int) -> str:
    lines = text.split("\n")
    for i in rng.sample([i for i, ln in enumerate(lines) if ln.startswith("    ")], hunks):
        lines[i] = lines[i].replace(" + ", " - ", 1) if " + " in lines[i] else lines[i] + "  # x"
    return "\n".join(lines)


def _statement(rng: random.Random, low: int, high: int) -> str:
    words, size, target = [], 0, rng.randint(low, high)
    while size < target:
        words.append(rng.choice(PROSE))
        if rng.random() < 0.02:
            words.append(f"\n\n```python\n>>> {_name(rng)}({rng.randint(0, 9)})\n"
                         f"{rng.randint(0, 99)}\n```\n\n")
        size += len(words[-1]) + 1
    return " ".join(words).capitalize()


def _tests(rng: random.Random, n: int) -> tuple[str, ...]:
    return tuple(sorted({f"tests/test_{rng.choice(WORDS)}.py::Test{rng.choice(WORDS).title()}"
                         f"::test_{_name(rng)}[{rng.randint(0, 9)}]" for _ in range(n)}))


def make_task(i: int, rng: random.Random) -> Judged:
    """One realistic judged task (see the module docstring)."""
    repo = f"org{i % 10}__lib{i % 10}"
    mined = rng.random() < 0.3
    files = [f"lib{i % 10}/{_name(rng)}.py" for _ in range(rng.randint(1, 3) if mined else 1)]
    sources = {f: _source(rng, 10 if mined else 6) for f in files}
    bug = "" if mined else "".join(unified_diff(f, s, _mutate(rng, s, rng.randint(1, 3)))
                                   for f, s in sources.items())
    gold = (reverse_diff(bug) if bug else
            "".join(unified_diff(f, _mutate(rng, s, rng.randint(3, 8)), s)
                    for f, s in sources.items()))
    test_patch = new_file_diff(f"tests/test_new_{i}.py", _source(rng, rng.randint(4, 12))) \
        if mined else ""
    p2p = _tests(rng, min(2000, int(rng.lognormvariate(4.38, 1.0))))
    f2p = _tests(rng, rng.randint(1, 4))
    cand = Candidate(kind=CandidateKind.mined if mined else CandidateKind.synthetic, repo=repo,
                     base_commit=f"{rng.getrandbits(160):040x}", bug_patch=bug, gold_patch=gold,
                     test_patch=test_patch, generator="mined" if mined else "procedural",
                     mutator="" if mined else "operator_swap", files=tuple(files),
                     lines=tuple(rng.randint(1, 60) for _ in files),
                     provenance={"seed": str(i), "commit": f"{rng.getrandbits(160):040x}"})
    verdict = Verdict(instance_id=cand.instance_id, status=Status.accept, fail_to_pass=f2p,
                      pass_to_pass=tuple(sorted(set(p2p) - set(f2p))),
                      evidence={t: f"AssertionError: assert {rng.randint(0, 99)} == "
                                   f"{rng.randint(0, 99)}" for t in f2p} | {"oracle": "x3"},
                      seconds=rng.uniform(1, 20))
    statement = _statement(rng, 800, 3000) if mined else _statement(rng, 500, 1500)
    return Judged(candidate=cand, verdict=verdict, statement=statement,
                  image=f"repogym-env/lib{i % 10}:{rng.getrandbits(64):016x}")


def dir_size(path: Path) -> tuple[int, int]:
    """(bytes, files) under ``path``."""
    files = [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def _read_swebench(out: Path) -> int:
    return sum(1 for line in (out / "instances.jsonl").open() if json.loads(line))


def _read_harbor(out: Path) -> int:
    import tomllib

    return sum(1 for t in out.iterdir() if t.is_dir()
               and tomllib.loads((t / "task.toml").read_text()))


def _read_verl(out: Path) -> int:
    import pandas as pd

    return len(pd.read_parquet(out / "train.parquet"))


def _read_hf(out: Path) -> int:
    import datasets

    return len(datasets.load_from_disk(str(out)))


READERS: dict[str, Callable[[Path], int]] = {
    "swebench": _read_swebench, "harbor": _read_harbor, "verl": _read_verl, "hf": _read_hf}


def measure_format(fmt: str, rows: list[TaskRow], work: Path, repeats: int) -> dict:
    times = []
    for k in range(repeats):
        out = work / f"{fmt}-{k}"
        start = time.perf_counter()
        export_rows(fmt, rows, out)
        times.append(time.perf_counter() - start)
    size, files = dir_size(out)
    start = time.perf_counter()
    count = READERS[fmt](out)
    read = time.perf_counter() - start
    assert count == len(rows), (fmt, count)
    for k in range(repeats):
        shutil.rmtree(work / f"{fmt}-{k}")
    return {"format": fmt, "median_s": statistics.median(times), "min_s": min(times),
            "bytes": size, "files": files, "read_back_s": read}


def row_stats(rows: list[TaskRow]) -> dict[str, float]:
    med = statistics.median
    return {
        "gold patch bytes (median)": med(len(r.patch) for r in rows),
        "bug patch bytes (median, synthetic)": med(len(r.bug_patch) for r in rows if r.bug_patch),
        "test patch bytes (median, mined)": med(len(r.test_patch) for r in rows if r.test_patch),
        "statement bytes (median)": med(len(r.problem_statement) for r in rows),
        "PASS_TO_PASS ids (median)": med(len(r.PASS_TO_PASS) for r in rows),
        "PASS_TO_PASS ids (p90)": sorted(len(r.PASS_TO_PASS) for r in rows)[int(len(rows) * .9)],
    }


def report(n: int, store_bytes: int, store_files: int, write_s: float, stats: dict,
           results: list[dict], repeats: int, synthetic: int) -> str:
    per = 1000 / n
    mb = 1024 * 1024
    lines = [
        f"export_scale, {date.today().isoformat()}: {n} tasks ({synthetic} synthetic, "
        f"{n - synthetic} mined, 10 repos), seed 0; {os.cpu_count()} cores, "
        f"{platform.system()} {platform.machine()}, Python {platform.python_version()}",
        f"command: .venv/bin/python benchmarks/export_scale.py --tasks {n} --repeats {repeats}",
        "",
        "rows:",
        *[f"  {k}: {v:,.0f}" for k, v in stats.items()],
        "",
        f"dataset (DatasetStore Parquet): {store_bytes / mb:.2f} MB in {store_files} files "
        f"= {store_bytes * per / mb:.2f} MB per 1,000 tasks; store.write took {write_s:.2f} s",
        "",
        f"{'format':<10}{'export s (median)':>19}{'s / 1,000 tasks':>17}{'MB':>9}"
        f"{'MB / 1,000 tasks':>18}{'files':>8}{'read back s':>13}",
    ]
    for r in results:
        lines.append(f"{r['format']:<10}{r['median_s']:>19.2f}{r['median_s'] * per:>17.2f}"
                     f"{r['bytes'] / mb:>9.2f}{r['bytes'] * per / mb:>18.2f}{r['files']:>8}"
                     f"{r['read_back_s']:>13.2f}")
    lines += ["", f"export s = wall time of export_rows (rows already in memory), median of "
                  f"{repeats}; read back = the consumer's loader over the export "
                  "(json lines, tomllib per task.toml, pandas.read_parquet, "
                  "datasets.load_from_disk)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("/tmp/repogym-export-scale"))
    ap.add_argument("--results", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args(argv)
    shutil.rmtree(args.out, ignore_errors=True)
    rng = random.Random(0)
    judged = [make_task(i, rng) for i in range(args.tasks)]
    store = DatasetStore(args.out / "data")
    start = time.perf_counter()
    store.write(judged)
    write_s = time.perf_counter() - start
    store_bytes, store_files = dir_size(store.root)
    rows = store.rows("tasks")
    results = [measure_format(fmt, rows, args.out, args.repeats) for fmt in EXPORTERS.names()]
    synthetic = sum(r.kind is CandidateKind.synthetic for r in rows)
    text = report(len(rows), store_bytes, store_files, write_s, row_stats(rows), results,
                  args.repeats, synthetic)
    print(text)
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "export_scale.txt").write_text(text)
    shutil.rmtree(args.out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
