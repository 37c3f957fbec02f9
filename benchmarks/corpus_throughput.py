"""Tasks per hour for a 3-repository corpus: the local run against a Dask-backed run.

Both runs start from an empty data folder (images are content-addressed, so the env
images built by the first run are reused by the second: the first run is a warm-up pass
that is not timed). Each timed run does clone, baseline, coverage, generation, judging
and writing for every repository; the Dask run judges candidates on a
``distributed.LocalCluster`` of 2 worker processes.

    .venv/bin/python benchmarks/corpus_throughput.py [--samples inflection,iniconfig,isodate]
        [--max-candidates 12] [--out /tmp/repogym-corpus-bench]
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from repogym.config import Settings
from repogym.flows.corpus_flow import RepoJob, corpus_flow
from repogym.samples import sample_repo
from repogym.schemas.records import RepoSpec


def jobs_for(samples: list[str], settings: Settings, cache: Path) -> list[RepoJob]:
    return [RepoJob.of(RepoSpec(source=str(sample_repo(name, cache))), settings)
            for name in samples]


def timed_run(samples: list[str], base: Settings, out: Path, cache: Path,
              dask_address: str | None) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    settings = base.model_copy(update={"out": out})
    jobs = jobs_for(samples, settings, cache)
    start = time.monotonic()
    run = corpus_flow(jobs, settings, dask_address)
    seconds = time.monotonic() - start
    accepted = sum(r.summary.accepted for r in run.repos if r.summary)
    judged = sum(r.summary.judged for r in run.repos if r.summary)
    return {"seconds": round(seconds, 1), "accepted": accepted, "judged": judged,
            "failed": [r.name for r in run.failed],
            "tasks_per_hour": round(accepted / seconds * 3600) if seconds else 0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", default="inflection,iniconfig,isodate")
    ap.add_argument("--max-candidates", type=int, default=12)
    ap.add_argument("--out", type=Path, default=Path("/tmp/repogym-corpus-bench"))
    args = ap.parse_args()
    samples = [s.strip() for s in args.samples.split(",") if s.strip()]
    cache = args.out / "samples"
    base = Settings(max_candidates=args.max_candidates, generators=("procedural",),
                    max_combined=0)
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        timed_run(samples, base, args.out / "warmup", cache, None)  # builds the env images
        local = timed_run(samples, base, args.out / "local", cache, None)
        from distributed import LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster:
            dask = timed_run(samples, base, args.out / "dask", cache, cluster.scheduler_address)
    result = {"samples": samples, "max_candidates": args.max_candidates,
              "local": local, "dask_2_workers": dask}
    print(json.dumps(result, indent=2))
    day = time.strftime("%Y-%m-%d")
    dest = Path(__file__).parent / "results" / f"corpus_throughput-{day}.json"
    dest.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written to {dest}")


if __name__ == "__main__":
    main()
