"""Re-check a Go task without repogym's runner or its image: a fresh clone of the repository
on the host, the host's own Go, ``go test -json``; the FAIL_TO_PASS tests must fail (or
not build) at the broken state and pass with the row's patch."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

from repogym.toolchains.go import split_id
from repogym.toolchains.go.project import GoProject

ENV = {**os.environ, "GOFLAGS": "-mod=mod -buildvcs=false", "GOTOOLCHAIN": "local"}


def _apply(repo: Path, patch: str) -> None:
    if patch:
        subprocess.run(["git", "apply", "-"], input=patch.encode(), cwd=repo, check=True)


def outcomes(repo: Path, tests: list[str]) -> dict[str, str]:
    """(folder/name) -> go test's last action for it (pass, fail, skip), by ``go test -json``
    on the host."""
    out: dict[str, str] = {}
    by_folder: dict[str, set[str]] = {}
    for test in tests:
        folder, top, _ = split_id(test)
        by_folder.setdefault(folder, set()).add(top)
    for folder, tops in by_folder.items():
        pattern = "^(" + "|".join(re.escape(t) for t in sorted(tops)) + ")$"
        pkg = "." if folder == "." else f"./{folder}"
        res = subprocess.run(["go", "test", "-count=1", "-vet=off", "-json", "-run", pattern, pkg],
                             cwd=repo, env=ENV, capture_output=True, text=True, timeout=600)
        for line in res.stdout.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("Test") and event.get("Action") in ("pass", "fail", "skip"):
                out[f"{folder}/{event['Test']}"] = event["Action"]
    return out


def recheck(source: Path, workdir: Path, row: Any) -> None:
    """The row's FAIL_TO_PASS tests do not pass at the broken state and pass with its patch,
    as the host's ``go test`` says in a fresh clone of ``source``."""
    repo = workdir / f"recheck-{row.instance_id}"
    subprocess.run(["git", "clone", "-q", str(source), str(repo)], check=True)
    project = GoProject.read(repo)  # as the environment was made: at the source's HEAD
    assert project is not None
    subprocess.run(["git", "checkout", "-q", row.base_commit], cwd=repo, check=True)
    if not project.declared:
        subprocess.run(["go", "mod", "init", project.module], cwd=repo, env=ENV, check=True,
                       capture_output=True)
        subprocess.run(["go", "mod", "tidy", "-e"], cwd=repo, env=ENV, capture_output=True)
    _apply(repo, row.bug_patch)
    _apply(repo, row.test_patch)

    def key(test: str) -> str:
        folder, _, name = split_id(test)
        return f"{folder}/{name}"

    broken = outcomes(repo, list(row.FAIL_TO_PASS))
    assert not any(broken.get(key(t)) == "pass" for t in row.FAIL_TO_PASS), (
        row.instance_id, broken)
    _apply(repo, row.patch)
    fixed = outcomes(repo, list(row.FAIL_TO_PASS))
    assert all(fixed.get(key(t)) == "pass" for t in row.FAIL_TO_PASS), (row.instance_id, fixed)
