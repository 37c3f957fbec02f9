"""Judge throughput: our warm-sandbox, coverage-guided judge against a SWE-smith-like baseline.

    /tmp/venv/bin/python benchmarks/judge_throughput.py --sample itsdangerous --candidates 20 \
        --out /tmp/repogym-judge-bench

One repository, one run:

1. prepare, build the env image, baseline (1 run), per-test coverage, N procedural
   candidates (seed 0) -- the pipeline's own stage functions;
2. OURS: ``pipeline.judge_all`` (one warm container reset between checks, coverage-guided
   selection) with ``oracle_runs=1, probes=0``; then again with the defaults
   (``oracle_runs=3, probes=2``) unless ``--no-defaults``;
3. BASELINE (SWE-smith-like): per candidate a fresh container (start and removal timed),
   bug patch, the FULL suite; F2P = stable baseline-passing tests that no longer pass; then
   another fresh container in the gold state (bug + gold patch), full suite once; accept iff
   F2P is non-empty and every F2P and P2P test passes there;
4. compares F2P and accept/reject per candidate, printing every mismatch;
5. mutmut (in its own venv under ``--out``) on a copy of the repository, seconds per mutant;
6. writes ``benchmarks/results/judge_throughput-<date>.{md,json}``.

OURS counts ``accept`` and ``review`` as accepted: with ``probes=0`` a ``review`` can only
come from the statement checks ``judge_all`` applies after the judge (statement_leak,
underspecified), which say nothing about F2P.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from repogym.config import Settings
from repogym.pipeline import (
    baseline_in,
    build_env,
    coverage_in,
    generate,
    judge_all,
    limits_for,
    prepare,
    provider_for,
    target_lines,
)
from repogym.samples import sample_repo
from repogym.sandboxes.docker import DockerProvider
from repogym.schemas.records import Baseline, Candidate, RepoSpec, Status

RESULTS = Path(__file__).parent / "results"
ACCEPTED = (Status.accept, Status.review)


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else 0.0


def _mean(xs: list[float]) -> float:
    return statistics.fmean(xs) if xs else 0.0


# --- OURS -----------------------------------------------------------------------------

def run_ours(provider, env, prepared, base, cands, settings, cov) -> dict:
    t0 = time.monotonic()
    judged = judge_all(provider, env, prepared, base, cands, settings, coverage=cov)
    wall = time.monotonic() - t0
    rows = {}
    for j in judged:
        v = j.verdict
        rows[j.candidate.instance_id] = {
            "status": v.status.value, "reason": v.reason, "seconds": v.seconds,
            "accepted": v.status in ACCEPTED, "f2p": list(v.fail_to_pass),
            "detail": v.detail[:300]}
    secs = [r["seconds"] for r in rows.values()]
    return {"rows": rows, "wall": round(wall, 2), "median": _median(secs), "mean": _mean(secs),
            "wall_per_candidate": wall / max(len(cands), 1),
            "uncovered": sum(r["reason"] == "uncovered" for r in rows.values()),
            "accepted": sum(r["accepted"] for r in rows.values())}


# --- BASELINE (SWE-smith-like) -----------------------------------------------------------

def _fresh_run(provider, env, settings, tc, patches: list[str]):
    """A fresh container, the patches, the full suite; returns (run or None, note)."""
    sb = provider.open(env, limits_for(settings))
    try:
        for p in patches:
            if not sb.apply_patch(p):
                return None, "patch_does_not_apply"
        return tc.run_tests(sb, timeout=settings.test_timeout, select=None), ""
    finally:
        sb.close()


def probe_set_seconds(settings: Settings) -> float:
    """What the image's probe set took (it ran once, within its first accepted task)."""
    files = list((settings.cache_dir / "probes").glob("*.json"))
    return sum(json.loads(f.read_text()).get("seconds", 0.0) for f in files)


def not_passing(run, tests: set[str]) -> list[str]:
    return sorted(t for t in tests if (o := run.outcome(t)) is None or not o.ok)


def judge_baseline(provider, env, prepared, base: Baseline, cand: Candidate,
                   settings: Settings) -> dict:
    tc, stable = prepared.toolchain, base.stable_passing()
    t0 = time.monotonic()
    row: dict = {"accepted": False, "f2p": [], "raw_f2p": [], "reason": ""}
    broken, note = _fresh_run(provider, env, settings, tc, [cand.bug_patch])
    if broken is None:
        row["reason"] = "bug_" + note
    else:
        row["broken_trusted"] = broken.trusted
        row["broken_all_errored"] = broken.all_errored()
        f2p = not_passing(broken, stable)
        row["raw_f2p"] = f2p
        if not f2p:
            row["reason"] = "no_op"
        else:
            gold, note = _fresh_run(provider, env, settings, tc, [cand.bug_patch, cand.gold_patch])
            if gold is None:
                row["reason"] = "gold_" + note
            else:
                bad = not_passing(gold, stable)  # F2P | P2P == stable passing
                if bad:
                    row["reason"] = f"oracle ({len(bad)} fail with gold)"
                else:
                    row.update(accepted=True, f2p=f2p, reason="accept")
    row["seconds"] = round(time.monotonic() - t0, 3)
    return row


def run_baseline(provider, env, prepared, base, cands, settings, progress=print) -> dict:
    rows = {}
    t0 = time.monotonic()
    for i, cand in enumerate(cands):
        rows[cand.instance_id] = judge_baseline(provider, env, prepared, base, cand, settings)
        progress(f"  baseline {i + 1}/{len(cands)}: {rows[cand.instance_id]['reason']} "
                 f"({rows[cand.instance_id]['seconds']:.1f}s)")
    secs = [r["seconds"] for r in rows.values()]
    wall = time.monotonic() - t0
    return {"rows": rows, "wall": round(wall, 2), "median": _median(secs), "mean": _mean(secs),
            "wall_per_candidate": wall / max(len(cands), 1),
            "accepted": sum(r["accepted"] for r in rows.values())}


# --- comparison ---------------------------------------------------------------------------

def compare(cands: list[Candidate], ours: dict, theirs: dict) -> list[dict]:
    """Every candidate whose accept/reject or F2P set differs (F2P of a reject is empty)."""
    out = []
    for c in cands:
        a, b = ours["rows"][c.instance_id], theirs["rows"][c.instance_id]
        fa = sorted(a["f2p"]) if a["accepted"] else []
        fb = sorted(b["f2p"]) if b["accepted"] else []
        if a["accepted"] == b["accepted"] and fa == fb:
            continue
        out.append({"instance_id": c.instance_id, "mutator": c.mutator,
                    "files": list(c.files), "lines": list(c.lines),
                    "ours": f"{a['status']} {a['reason']}".strip(),
                    "baseline": b["reason"], "ours_f2p": fa, "baseline_f2p": fb,
                    "baseline_raw_f2p": b["raw_f2p"],
                    "only_baseline": sorted(set(fb) - set(fa)),
                    "only_ours": sorted(set(fa) - set(fb)),
                    "ours_detail": a["detail"], "bug_patch": c.bug_patch})
    return out


# --- container overhead -------------------------------------------------------------------

def overhead(provider, env, settings, cand: Candidate | None) -> dict:
    resets = []
    with provider.open(env, limits_for(settings)) as sb:
        for _ in range(10):
            if cand is not None:
                sb.apply_patch(cand.bug_patch)  # something for the reset to undo (untimed)
            t = time.monotonic()
            sb.reset()
            resets.append(time.monotonic() - t)
    opens = []
    for _ in range(5):
        t = time.monotonic()
        provider.open(env, limits_for(settings)).close()
        opens.append(time.monotonic() - t)
    execs = {}
    for name, prov in (("agent", provider), ("docker_exec", DockerProvider(settings, agent=False))):
        with prov.open(env, limits_for(settings)) as sb:
            sb.exec("true", timeout=30)  # starts the agent (untimed)
            t = time.monotonic()
            for _ in range(20):
                sb.exec("true", timeout=30)
            execs[name] = (time.monotonic() - t) / 20
    return {"reset_mean": _mean(resets), "open_close_mean": _mean(opens),
            "exec_agent": execs["agent"], "exec_docker": execs["docker_exec"],
            "resets": [round(x, 3) for x in resets], "opens": [round(x, 3) for x in opens]}


# --- mutmut -------------------------------------------------------------------------------

def _package_path(repo: Path) -> str:
    for root in (repo / "src", repo):
        if root.is_dir():
            for child in sorted(root.iterdir()):
                if (child / "__init__.py").exists() and child.name not in ("tests", "test"):
                    return str(child.relative_to(repo)) + "/"
    return "src/"


def run_mutmut(repo: Path, out: Path, limit: float) -> dict:
    """mutmut 3 in its own venv on a copy of the repository; seconds per mutant tested."""
    root = out / "mutmut"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    venv, copy = root / "venv", root / "repo"
    log = root / "log.txt"

    def sh(cmd: list[str], cwd: Path | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                           check=False)
        with log.open("a") as f:
            f.write(f"$ {' '.join(cmd)}\nrc={p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}\n")
        return p

    py = shutil.which("python3") or sys.executable
    if sh([py, "-m", "venv", str(venv)]).returncode != 0:
        return {"error": "cannot create a venv"}
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    p = sh([*pip, "mutmut", "pytest"])
    if p.returncode != 0:
        return {"error": f"pip install mutmut failed: {p.stderr.strip()[-300:]}"}
    version = sh([str(venv / "bin" / "python"), "-m", "pip", "show", "mutmut"]).stdout
    version = (re.search(r"^Version:\s*(\S+)", version, re.MULTILINE) or [None, "?"])[1]
    shutil.copytree(repo, copy, ignore=shutil.ignore_patterns(".git"))
    reqs = [r for r in ("requirements/tests.in", "requirements/tests.txt",
                        "requirements-test.txt", "requirements_test.txt") if (copy / r).is_file()]
    p = sh([*pip, "-e", "."] + (["-r", reqs[0]] if reqs else []), cwd=copy)
    if p.returncode != 0:
        return {"error": f"installing the project failed: {p.stderr.strip()[-300:]}",
                "version": version}
    pkg = _package_path(copy)
    with (copy / "setup.cfg").open("a") as f:
        f.write(f"\n[mutmut]\nsource_paths={pkg}\n")  # (3.x: formerly paths_to_mutate)
    t0 = time.monotonic()
    timed_out = False
    try:
        p = sh([str(venv / "bin" / "mutmut"), "run", "--max-children", "2"], cwd=copy,
               timeout=limit)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        timed_out, rc = True, None
    wall = time.monotonic() - t0
    res = sh([str(venv / "bin" / "mutmut"), "results", "--all", "true"], cwd=copy)
    statuses: dict[str, int] = {}
    for line in res.stdout.splitlines():
        m = re.match(r"\s*\S+__mutmut_\d+:\s*(.+?)\s*$", line)
        if m:
            statuses[m.group(1)] = statuses.get(m.group(1), 0) + 1
    total = sum(statuses.values())
    tested = total - statuses.get("not checked", 0)
    return {"version": version, "package": pkg, "wall": round(wall, 2), "rc": rc,
            "timed_out": timed_out, "mutants": total, "tested": tested, "statuses": statuses,
            "seconds_per_mutant": wall / tested if tested else None, "log": str(log)}


# --- report ---------------------------------------------------------------------------------

def markdown(r: dict) -> str:
    o, b, d, oh, mm = r["ours"], r["baseline"], r.get("ours_defaults"), r["overhead"], r["mutmut"]
    ratio = o["median"] / b["median"] if b["median"] else 0.0
    lines = [f"Command: `{r['command']}`", "",
             (f"Repository: {r['repo']} ({r['tests']} tests, {r['stable']} stable passing), "
             f"{r['candidates']} procedural candidates (seed 0). Machine: {r['machine']}."), "",
             "| judge | median s/cand | mean s/cand | wall s | wall s/cand | accepted |",
             "| --- | ---: | ---: | ---: | ---: | ---: |",
             (f"| OURS (oracle_runs=1, probes=0) | {o['median']:.2f} | {o['mean']:.2f} | "
             f"{o['wall']:.1f} | {o['wall_per_candidate']:.2f} | {o['accepted']}/{r['candidates']} |")]
    if d:
        lines.append(f"| OURS defaults (3 baseline runs, oracle_runs=3, probes on) | "
                     f"{d['median']:.2f} | {d['mean']:.2f} | {d['wall']:.1f} | "
                     f"{d['wall_per_candidate']:.2f} | {d['accepted']}/{r['candidates']} |")
    lines += [(f"| BASELINE (fresh container, full suite) | {b['median']:.2f} | {b['mean']:.2f} | "
              f"{b['wall']:.1f} | {b['wall_per_candidate']:.2f} | {b['accepted']}/{r['candidates']} |"),
              "",
              (f"- median ratio OURS/BASELINE: **{ratio:.2f}** (target <= 0.10); "
              f"mean ratio {o['mean'] / b['mean'] if b['mean'] else 0:.2f}"),
              (f"- one command: {oh['exec_agent'] * 1000:.1f} ms through the agent, "
               f"{oh['exec_docker'] * 1000:.1f} ms as its own docker exec (mean of 20)\n"
               f"- container overhead: reset {oh['reset_mean']:.2f} s (mean of 10), fresh "
              f"open+close {oh['open_close_mean']:.2f} s (mean of 5)"),
              (f"- rejected before any run (uncovered): {o['uncovered']}/{r['candidates']} "
              f"({o['uncovered'] / max(r['candidates'], 1):.0%})"),
              (f"- verdict and F2P agreement: {r['candidates'] - len(r['mismatches'])}/"
              f"{r['candidates']}")]
    if d:
        lines += [(f"- defaults/fast path, median: **{d['median'] / o['median']:.2f}x** "
                   f"(target <= 2); the probe set ran once for the image, within its first "
                   f"accepted task: {d.get('probe_set_seconds', 0.0):.1f} s; verdict and F2P "
                   f"agreement of the defaults with BASELINE: "
                   f"{r['candidates'] - d.get('mismatches_vs_baseline', 0)}/{r['candidates']}")]
    if "error" in mm:
        lines.append(f"- mutmut: skipped ({mm['error']})")
    else:
        spm = mm["seconds_per_mutant"]
        lines.append(f"- mutmut {mm['version']}: {mm['tested']}/{mm['mutants']} mutants tested in "
                     f"{mm['wall']:.0f} s{' (time limit hit)' if mm['timed_out'] else ''}: "
                     f"{spm:.3f} s/mutant" if spm else f"- mutmut: no mutant tested ({mm})")
        lines.append(f"  statuses: {mm['statuses']}")
    lines += ["", "Per candidate:", "",
              "| # | mutator | OURS | OURS s | BASELINE | BASELINE s | agree |",
              "| --- | --- | --- | ---: | --- | ---: | --- |"]
    bad = {m["instance_id"] for m in r["mismatches"]}
    for i, c in enumerate(r["per_candidate"]):
        lines.append(f"| {i} | {c['mutator']} | {c['ours']} | {c['ours_s']:.2f} | "
                     f"{c['baseline']} | {c['baseline_s']:.2f} | "
                     f"{'NO' if c['instance_id'] in bad else 'yes'} |")
    if r["mismatches"]:
        lines += ["", "Mismatches:", ""]
        for m in r["mismatches"]:
            lines.append(f"- {m['instance_id']} ({m['mutator']}, {m['files']} {m['lines']}): "
                         f"OURS {m['ours']} vs BASELINE {m['baseline']}; only baseline F2P: "
                         f"{m['only_baseline'][:8]}; only ours F2P: {m['only_ours'][:8]}")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", default="itsdangerous")
    ap.add_argument("--candidates", type=int, default=20)
    ap.add_argument("--out", type=Path, default=Path("/tmp/repogym-judge-bench"))
    ap.add_argument("--no-defaults", action="store_true",
                    help="skip the second OURS pass with oracle_runs=3, probes=2")
    ap.add_argument("--no-mutmut", action="store_true")
    ap.add_argument("--mutmut-limit", type=float, default=600.0)
    args = ap.parse_args()
    t_all = time.monotonic()
    settings = Settings(out=args.out, max_candidates=args.candidates, baseline_runs=1,
                        oracle_runs=1, probes=0, seed=0, generators=("procedural",))
    provider = provider_for(settings)
    path = sample_repo(args.sample, args.out / "samples")
    prepared = prepare(RepoSpec(source=str(path)), settings)
    env = build_env(provider, prepared, settings)
    base = baseline_in(provider, env, prepared, settings)
    cov = coverage_in(provider, env, prepared, base, settings)
    cands = generate(prepared, settings, target_lines(cov, base))[:args.candidates]
    print(f"{prepared.checkout.name}: {len(base.outcomes)} tests, "
          f"{len(base.stable_passing())} stable passing, {len(cands)} candidates, "
          f"coverage {'yes' if cov else 'NO'}", flush=True)

    ours = run_ours(provider, env, prepared, base, cands, settings, cov)
    print(f"OURS: median {ours['median']:.2f}s, wall {ours['wall']:.1f}s", flush=True)
    defaults = None
    if not args.no_defaults:  # the defaults, baseline runs included (3: the oracle reuses them)
        default = Settings()
        dset = settings.model_copy(update={"oracle_runs": default.oracle_runs,
                                           "probes": default.probes,
                                           "baseline_runs": default.baseline_runs})
        base_default = baseline_in(provider, env, prepared, dset)
        shutil.rmtree(dset.cache_dir / "probes", ignore_errors=True)  # measure the probe set
        defaults = run_ours(provider, env, prepared, base_default, cands, dset, cov)
        defaults["probe_set_seconds"] = probe_set_seconds(dset)
        print(f"OURS defaults: median {defaults['median']:.2f}s (probe set, once per image: "
              f"{defaults['probe_set_seconds']:.1f}s)", flush=True)
    # SWE-smith's validator runs each command as its own `docker exec`: no agent
    plain = DockerProvider(settings, agent=False)
    theirs = run_baseline(plain, env, prepared, base, cands, settings,
                          progress=lambda s: print(s, flush=True))
    print(f"BASELINE: median {theirs['median']:.2f}s, wall {theirs['wall']:.1f}s", flush=True)
    mismatches = compare(cands, ours, theirs)
    if defaults:
        defaults["mismatches_vs_baseline"] = len(compare(cands, defaults, theirs))
    if defaults:  # the defaults pass must agree with the like-for-like pass on F2P
        for c in cands:
            a, d = ours["rows"][c.instance_id], defaults["rows"][c.instance_id]
            if a["accepted"] != d["accepted"] or a["f2p"] != d["f2p"]:
                print(f"note: defaults pass differs on {c.instance_id}: {a['status']} "
                      f"{a['reason']} vs {d['status']} {d['reason']}", flush=True)
    oh = overhead(provider, env, settings, cands[0] if cands else None)
    mm = {"error": "--no-mutmut"} if args.no_mutmut else \
        run_mutmut(path, args.out, args.mutmut_limit)

    per = []
    for c in cands:
        a, b = ours["rows"][c.instance_id], theirs["rows"][c.instance_id]
        per.append({"instance_id": c.instance_id, "mutator": c.mutator,
                    "ours": f"{a['status']} {a['reason']}".strip(), "ours_s": a["seconds"],
                    "baseline": b["reason"], "baseline_s": b["seconds"]})
    cmd = (f".venv/bin/python benchmarks/judge_throughput.py --sample {args.sample} "
           f"--candidates {args.candidates} --out {args.out}"
           + (" --no-defaults" if args.no_defaults else "")
           + (" --no-mutmut" if args.no_mutmut else ""))
    result = {"command": cmd, "repo": prepared.checkout.name, "commit": prepared.checkout.commit,
              "image": env.ref, "tests": len(base.outcomes), "stable": len(base.stable_passing()),
              "candidates": len(cands), "machine": f"{os.cpu_count()} cores, {sys.platform}",
              "ours": ours, "ours_defaults": defaults, "baseline": theirs, "overhead": oh,
              "mutmut": mm, "mismatches": mismatches, "per_candidate": per,
              "ratio_median": ours["median"] / theirs["median"] if theirs["median"] else None,
              "wall_seconds": round(time.monotonic() - t_all, 1)}
    md = markdown(result) + f"\nTotal wall time: {result['wall_seconds']:.0f} s\n"
    print(md)
    for m in mismatches:
        print(f"MISMATCH {m['instance_id']}: OURS {m['ours']} ({m['ours_detail'][:200]}) vs "
              f"BASELINE {m['baseline']}\n  baseline raw F2P: {m['baseline_raw_f2p'][:10]}\n"
              f"  ours F2P: {m['ours_f2p'][:10]}\n{m['bug_patch']}")
    print(f"{len(mismatches)} mismatch(es)")
    RESULTS.mkdir(exist_ok=True)
    stamp = time.strftime("%Y-%m-%d")
    (RESULTS / f"judge_throughput-{stamp}.md").write_text(md)
    (RESULTS / f"judge_throughput-{stamp}.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
