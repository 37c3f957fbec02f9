"""Live environments and rewards at training scale (issue 14), on one dataset, in one run.

    .venv/bin/repogym run --sample inflection --max-candidates 12 --out /tmp/rg-env-data
    .venv/bin/python benchmarks/env_serving.py --dataset /tmp/rg-env-data --tasks 8 \\
        --swebench-venv ~/.cache/repogym-test/swebench-venv

On the dataset's first ``--tasks`` accepted tasks (by id):

1. **reset latency**: ``--resets`` episode resets (the broken state built, its history
   hidden, the layout listed) from a warm pool of one sandbox (the sandbox reset in place
   between episodes) vs from a fresh container each time; p50 and p95;
2. **verify throughput**: the gold patches graded by ``verify`` one after the other (a
   fresh container per call) vs ``verify_batch`` with 1, 2 and 4 workers (a pool of that
   many sandboxes, made in the timed call); rewards per minute;
3. **episode cost of the oracle policy**: reset, ``apply`` the gold patch, ``submit``, in
   the environment (warm pool), per task;
4. **the same gold patches by the SWE-bench harness and by Harbor**: the ``swebench``
   export graded by the official harness (``python -m swebench.harness.run_evaluation``,
   ``--max_workers`` 1 and 2; task images built by the export's ``build_images.sh``, not
   timed) when ``--swebench-venv`` names a virtualenv holding ``swebench``; the ``harbor``
   export's trials the way Harbor runs them (image built from ``environment/``, not timed;
   then per task a container, ``solve.sh`` as the agent's user, ``test.sh`` as root, the
   reward read from ``/logs/verifier/reward.txt``), one at a time.

Every reward must be 1. Writes ``benchmarks/results/env_serving-<date>-<label>.{json,md}``.
"""

from __future__ import annotations

import argparse
import io
import json
import secrets
import shutil
import statistics
import subprocess
import tarfile
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any, Callable

from repogym.config import Settings
from repogym.datasets.verify import verify, verify_batch
from repogym.envs.environment import EnvService, RepoEnvironment
from repogym.envs.episode import Episode
from repogym.envs.journal import Journal
from repogym.envs.models import RepoAction
from repogym.envs.server import load_tasks
from repogym.sandboxes import get_provider
from repogym.sandboxes.pool import SandboxPool
from repogym.schemas.arrow import TaskRow

RESULTS = Path(__file__).parent / "results"
LABELS = {"repogym": "bench"}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


def summary(values: list[float]) -> dict[str, float]:
    return {"n": len(values), "p50": pct(values, 0.5), "p95": pct(values, 0.95),
            "mean": round(statistics.mean(values), 3)}


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def reset_latency(tasks: list[TaskRow], resets: int, namespace: str) -> dict[str, Any]:
    settings = Settings()
    provider = get_provider("docker", settings, namespace=namespace)
    pool = SandboxPool(provider, max_size=1)
    service = EnvService(tasks, pool, Journal(Path(tempfile.mkdtemp()) / "j.jsonl"))
    env = RepoEnvironment(service)
    env.reset(task_id=tasks[0].instance_id)  # warm the pool: one container started
    env.close()
    warm = []
    for i in range(resets):
        seconds, _ = timed(lambda i=i: env.reset(task_id=tasks[i % len(tasks)].instance_id))
        warm.append(seconds)
        env.close()
    pool.close()
    fresh = []
    for i in range(resets):
        task = tasks[i % len(tasks)]

        def cold(task: TaskRow = task) -> Any:
            sandbox = provider.open(provider.env_for(task.image))
            episode = Episode(sandbox, task)
            episode.start()
            episode.layout(2000)
            return sandbox

        seconds, sandbox = timed(cold)
        fresh.append(seconds)
        sandbox.close()
    provider.cleanup()
    return {"warm_pool": summary(warm), "fresh_container": summary(fresh)}


def throughput(tasks: list[TaskRow], workers: list[int], namespace: str) -> dict[str, Any]:
    settings = Settings()
    out: dict[str, Any] = {}
    seconds, results = timed(lambda: [verify(t, t.patch, settings=settings) for t in tasks])
    assert all(r.reward == 1.0 for r in results), [r.problems for r in results]
    out["sequential_verify"] = {"seconds": round(seconds, 2),
                                "rewards_per_minute": round(60 * len(tasks) / seconds, 1)}
    for n in workers:
        provider = get_provider("docker", settings, namespace=f"{namespace}-b{n}")

        def batch(n: int = n, provider: Any = provider) -> Any:
            pool = SandboxPool(provider, max_size=n)
            try:
                return verify_batch(tasks, [t.patch for t in tasks], workers=n, pool=pool,
                                    settings=settings)
            finally:
                pool.close()

        seconds, items = timed(batch)
        assert all(i.reward == 1.0 for i in items), [(i.instance_id, i.error) for i in items]
        out[f"verify_batch_{n}"] = {"seconds": round(seconds, 2),
                                    "rewards_per_minute": round(60 * len(tasks) / seconds, 1)}
        provider.cleanup()
    return out


def oracle_episodes(tasks: list[TaskRow], namespace: str) -> dict[str, Any]:
    provider = get_provider("docker", Settings(), namespace=namespace)
    pool = SandboxPool(provider, max_size=1)
    service = EnvService(tasks, pool, Journal(Path(tempfile.mkdtemp()) / "j.jsonl"))
    env = RepoEnvironment(service)
    env.reset(task_id=tasks[0].instance_id)
    env.close()
    costs = []
    for task in tasks:
        def episode(task: TaskRow = task) -> float | None:
            env.reset(task_id=task.instance_id)
            env.step(RepoAction(tool="apply", patch=task.patch))
            return env.step(RepoAction(tool="submit")).reward

        seconds, reward = timed(episode)
        assert reward == 1.0, task.instance_id
        costs.append(seconds)
    pool.close()
    provider.cleanup()
    return summary(costs)


def swebench(tasks: list[TaskRow], venv: Path, workdir: Path) -> dict[str, Any]:
    from repogym.datasets.exports import export_rows

    out = workdir / "swebench"
    export_rows("swebench", tasks, out)
    instances = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    subprocess.run(["bash", str(out / "build_images.sh")], check=True, capture_output=True)
    preds = workdir / "preds.jsonl"
    preds.write_text("".join(json.dumps({"instance_id": i["instance_id"],
                                         "model_name_or_path": "gold",
                                         "model_patch": i["patch"]}) + "\n"
                             for i in instances))
    result: dict[str, Any] = {}
    try:
        for workers in (1, 2):
            run_id = f"bench-{secrets.token_hex(3)}"
            seconds, _ = timed(lambda run_id=run_id, workers=workers: subprocess.run(
                [str(venv / "bin" / "python"), "-m", "swebench.harness.run_evaluation",
                 "--dataset_name", str(out / "instances.jsonl"), "--predictions_path",
                 str(preds), "--run_id", run_id, "--max_workers", str(workers),
                 "--timeout", "600"],
                cwd=workdir, check=True, capture_output=True))
            report = json.loads((workdir / f"gold.{run_id}.json").read_text())
            result[f"max_workers_{workers}"] = {
                "seconds": round(seconds, 2), "resolved": len(report["resolved_ids"]),
                "of": len(instances), "rewards_per_minute": round(60 * len(instances) / seconds, 1)}
    finally:
        import docker

        client = docker.from_env()
        for inst in instances:
            try:
                client.images.remove(inst["image"], force=True)
            except docker.errors.DockerException:
                pass
    return result


def _tar(root: Path, prefix: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                info = tar.gettarinfo(str(path), f"{prefix}/{path.relative_to(root)}")
                info.mode = 0o755
                with path.open("rb") as fh:
                    tar.addfile(info, fh)
    return buf.getvalue()


def harbor(tasks: list[TaskRow], workdir: Path) -> dict[str, Any]:
    import docker

    from repogym.datasets.exports import export_rows
    from repogym.datasets.exports.harbor import task_dirname

    client = docker.from_env()
    out = workdir / "harbor"
    export_rows("harbor", tasks, out)
    images = {}
    costs, rewards = [], []
    try:
        for task in tasks:
            tag = f"repogym-bench/harbor-{secrets.token_hex(4)}:latest"
            client.images.build(path=str(out / task_dirname(task) / "environment"), tag=tag,
                                labels=LABELS, rm=True, forcerm=True)
            images[task.instance_id] = tag
        for task in tasks:
            folder = out / task_dirname(task)

            def trial(task: TaskRow = task, folder: Path = folder) -> str:
                box = client.containers.run(images[task.instance_id], ["sleep", "infinity"],
                                            detach=True, network_mode="none", labels=LABELS,
                                            init=True)
                try:
                    box.put_archive("/", _tar(folder / "tests", "tests"))
                    box.put_archive("/", _tar(folder / "solution", "solution"))
                    box.exec_run(["bash", "/solution/solve.sh"], user="repogym")
                    box.exec_run(["bash", "/tests/test.sh"], user="root")
                    _, text = box.exec_run(["cat", "/logs/verifier/reward.txt"])
                    return str(text.decode().strip())
                finally:
                    box.remove(force=True)

            seconds, reward = timed(trial)
            costs.append(seconds)
            rewards.append(reward)
    finally:
        for tag in images.values():
            client.images.remove(tag, force=True)
    assert rewards == ["1"] * len(tasks), rewards
    return {**summary(costs), "rewards_per_minute": round(60 * len(costs) / sum(costs), 1)}


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# env_serving {report['date']} ({report['label']})", "",
             f"{report['tasks']} tasks of `{report['dataset']}`", "", "```json",
             json.dumps(report["results"], indent=2), "```", ""]
    return "\n".join(lines)


STAGES = ("reset", "oracle", "verify", "harbor", "swebench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--resets", type=int, default=20)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--swebench-venv", type=Path)
    parser.add_argument("--stages", default=",".join(STAGES),
                        help=f"which of {', '.join(STAGES)} to run")
    parser.add_argument("--label", default="now")
    parser.add_argument("--keep", action="store_true", help="keep the exports and logs")
    args = parser.parse_args()
    tasks = sorted(load_tasks(args.dataset), key=lambda t: t.instance_id)[:args.tasks]
    namespace = f"bench-env-{secrets.token_hex(3)}"
    workdir = Path(tempfile.mkdtemp(prefix="rg-env-bench-"))
    stages: dict[str, Callable[[], Any]] = {
        "reset": lambda: reset_latency(tasks, args.resets, namespace),
        "oracle": lambda: oracle_episodes(tasks, namespace),
        "verify": lambda: throughput(tasks, [int(w) for w in args.workers.split(",")],
                                     namespace),
        "harbor": lambda: harbor(tasks, workdir),
        "swebench": lambda: swebench(tasks, args.swebench_venv, workdir),
    }
    report = {"date": date.today().isoformat(), "label": args.label,
              "dataset": str(args.dataset), "tasks": len(tasks),
              "languages": sorted({t.language for t in tasks}), "results": {}}
    stem = RESULTS / f"env_serving-{report['date']}-{args.label}"
    for name in args.stages.split(","):
        if name == "swebench" and not args.swebench_venv:
            continue
        report["results"][name] = stages[name]()
        print(name, json.dumps(report["results"][name]), flush=True)
        stem.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
        stem.with_suffix(".md").write_text(markdown(report))
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    print(stem, workdir)


if __name__ == "__main__":
    main()
