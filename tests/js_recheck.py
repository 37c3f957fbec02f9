"""Re-check a JavaScript task without repogym's grader: in a fresh container of the task's
image, the broken state and the fixed state run with the runner's own reporting (jest's and
vitest's ``--json``, mocha's and node-tap's ``json`` reporters, uvu's printed FAIL lines), and the
FAIL_TO_PASS tests must fail in the first and pass in the second."""

from __future__ import annotations

import io
import json
import re
import shlex
import tarfile
from typing import Any

from repogym.toolchains.javascript.project import Project
from repogym.toolchains.javascript.report import split_id

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def put(container: Any, path: str, data: bytes) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(path.rsplit("/", 1)[-1])
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    container.put_archive(path.rsplit("/", 1)[0] or "/", buf.getvalue())


def apply(container: Any, patch: str) -> None:
    put(container, "/tmp/p.diff", patch.encode())
    code, out = container.exec_run(["git", "apply", "/tmp/p.diff"], workdir="/repo",
                                   user="root")
    assert code == 0, out


def sh(container: Any, cmd: str) -> tuple[int, str]:
    code, out = container.exec_run(["bash", "-c", f"cd /repo && timeout -s KILL 300 {cmd}"],
                                   user="repogym")
    return code, ANSI.sub("", out.decode(errors="replace"))


def outcomes(container: Any, runner: str, files: list[str], args: list[str]) -> dict[str, bool]:
    """(file, full name) of each test the runner reports -> passed, as the runner says."""
    quoted = " ".join(shlex.quote(f) for f in files)
    if runner in ("jest", "vitest"):
        extra = "--ci --coverage=false --json --outputFile=/tmp/r.json --runTestsByPath" \
            if runner == "jest" else "run --reporter=json --outputFile=/tmp/r.json"
        sh(container, f"rm -f /tmp/r.json; node_modules/.bin/{runner} "
                      f"{' '.join(map(shlex.quote, args))} {extra} {quoted}")
        code, raw = container.exec_run(["cat", "/tmp/r.json"])
        if code != 0:
            return {}
        out = {}
        for result in json.loads(raw)["testResults"]:
            file = result["name"].removeprefix("/repo/")
            for t in result["assertionResults"]:
                out[(file, " ".join([*t["ancestorTitles"], t["title"]]))] = \
                    t["status"] == "passed"
        return out
    if runner == "mocha":
        _, text = sh(container, f"node_modules/.bin/mocha --reporter json {quoted} "
                                "2>/dev/null")
        start = text.find("{")
        data = json.loads(text[start:]) if start >= 0 else {}
        passed = {(t["file"].removeprefix("/repo/"), t["fullTitle"])
                  for t in data.get("passes", [])}
        return {(t["file"].removeprefix("/repo/"), t["fullTitle"]):
                (t["file"].removeprefix("/repo/"), t["fullTitle"]) in passed
                for t in data.get("tests", [])}
    if runner == "uvu":
        code, text = sh(container, f"node_modules/.bin/uvu {' '.join(map(shlex.quote, args))}")
        failed = {(m.group(1).strip(), m.group(2)) for m in
                  re.finditer(r"FAIL\s+(?:(.+?)\s+)?\"(.+?)\"", text)}
        totals = re.search(r"Total:\s+(\d+)\s+Passed:\s+(\d+)", text)
        all_passed = code == 0 and totals is not None and totals.group(1) == totals.group(2)
        return {("uvu", "*"): all_passed, **{("uvu-fail", f"{s} {n}".strip()): False
                                            for s, n in failed}}
    if runner == "tap":  # tap's own JSON reporter: suites nested as files and subtests
        sh(container, f"rm -f /tmp/r.json; node_modules/.bin/tap --reporter=json "
                      f"--reporter-file=/tmp/r.json --disable-coverage {quoted}")
        code, raw = container.exec_run(["cat", "/tmp/r.json"])
        if code != 0:
            return {}
        found: dict[tuple[str, str], bool] = {}

        def walk(suite: dict, path: list[str]) -> None:
            # by each suite's own name (TAP-unescaped), not ``fullname``: tap 21's reporter
            # loses the point that closes a subtest whose name has a backslash (``both \\``),
            # and says neither ``fullname`` nor ``ok`` there; its counts still do
            for sub in suite.get("suites", []):
                name = re.sub(r"\\([\\#])", r"\1", str(sub.get("name", "")))
                file, *titles = [*path, name]
                ok = sub.get("ok")
                found[(file, " ".join(titles))] = bool(ok) if ok is not None else \
                    sub.get("failures") == 0
                walk(sub, [*path, name])

        walk(json.loads(raw), [])
        return found
    raise AssertionError(f"no independent re-check for {runner}")


def passes(found: dict[str, bool] | dict, runner: str, test: str) -> bool:
    file, titles = split_id(test)
    if runner == "uvu":
        return found.get(("uvu", "*"), False) and ("uvu-fail", " ".join(titles)) not in found
    return bool(found.get((file, " ".join(titles))))


def recheck(docker_client: Any, row: Any) -> None:
    """The row's FAIL_TO_PASS tests fail at the broken state and pass with its patch."""
    container = docker_client.containers.run(row.image, ["sleep", "infinity"], detach=True,
                                             network_mode="none",
                                             labels={"repogym": "sandbox"})
    try:
        code, out = container.exec_run(["git", "checkout", "-q", "-f", row.base_commit],
                                       workdir="/repo", user="root")
        assert code == 0, out
        for patch in (row.bug_patch, row.test_patch):
            if patch:
                apply(container, patch)
        container.exec_run(["chown", "-R", "-h", "repogym:repogym", "/repo"], user="root")
        _, raw = container.exec_run(["cat", "/repo/package.json"])
        project = Project(__import__("pathlib").Path("/repo"), json.loads(raw))
        runner = project.runner()
        args = project.runner_args(runner)
        if runner == "mocha":
            args = []
        files = sorted({split_id(t)[0] for t in row.FAIL_TO_PASS})
        build = project.build_script()
        if build:
            sh(container, f"npm run --silent {build}")
        broken = outcomes(container, runner, files, args)
        assert broken, f"{row.instance_id}: the runner reported nothing at the broken state"
        assert not any(passes(broken, runner, t) for t in row.FAIL_TO_PASS), row.instance_id
        apply(container, row.patch)
        if build:
            sh(container, f"npm run --silent {build}")
        fixed = outcomes(container, runner, files, args)
        assert all(passes(fixed, runner, t) for t in row.FAIL_TO_PASS), (row.instance_id, fixed)
    finally:
        container.remove(force=True)
