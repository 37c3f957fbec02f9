"""Per-test line coverage of Go runs.

Each package's test binary is built once with coverage of the whole module
(``go test -c -cover -covermode=set -coverpkg=<module>/...``), its top-level tests listed
(``-test.list``), and the binary run once per top-level test with
``-test.coverprofile``: Go starts a test binary in milliseconds, so a run per test costs
about what the tests cost, and every line maps to the tests that executed it. A test's
subtests share its lines (they run in its process, and a subtest is picked by name only
beside its parent). Lines of ``init()`` functions appear in every test's profile (each run
is a process of its own): a change there reaches every test, as it should.

One script does it all and writes one file (profiles and events, each under a header
line), read back at once. Benchmarks are not run. A test that fails, times out or writes
no profile contributes nothing; None when no test was measured.

Code outside function bodies -- package-level ``var`` and ``const`` initialisers, types,
imports -- runs (or is compiled) for every test and has no coverage block: its lines are
the map's ``import_lines`` (a change there reaches every test). Found by brace depth, in
the same script, for every runtime ``.go`` file.
"""

from __future__ import annotations

import json
import logging
import secrets
import shlex
from typing import Callable, Sequence

from repogym.errors import TestRunError
from repogym.layout import SCRATCH, TOOL_CACHE
from repogym.sandboxes.base import Sandbox
from repogym.schemas.records import CoverageMap
from repogym.toolchains.go.project import BUILD_SEED, MOD_CACHE
from repogym.toolchains.go.script import GO_ENV
from repogym.toolchains.runs import exec_or_lost, read_or_empty

log = logging.getLogger(__name__)
HEADER = "### repogym-cover"
PER_TEST_TIMEOUT = 120


def coverage_script(scratch: str, tops: dict[str, set[str]] | None) -> str:
    """The script: per package, a coverage binary, then one run per top-level test (those
    of ``tops``, per folder, when given)."""
    flags, proxy, sumdb, toolchain = GO_ENV
    patterns = "./..." if tops is None else " ".join(
        "." if d == "." else f"./{d}" for d in sorted(tops))
    wanted = "" if tops is None else " ".join(
        f"[{shlex.quote(d)}]={shlex.quote(' ' + ' '.join(sorted(n)) + ' ')}"
        for d, n in sorted(tops.items()))
    s = shlex.quote(scratch)
    return "\n".join([
        "set -u",
        f"S={s}; OUT=$S/cover.txt",
        f'mkdir -p "$S/bin" {TOOL_CACHE} && : > "$OUT"',
        f'export GOMODCACHE="{MOD_CACHE}" GOFLAGS="{flags}" GOPROXY={proxy} '
        f"GOSUMDB={sumdb} GOTOOLCHAIN={toolchain} GOCACHE={TOOL_CACHE}/go-build",
        f'[ -d "$GOCACHE" ] || cp -a "{BUILD_SEED}" "$GOCACHE" 2>/dev/null || mkdir -p "$GOCACHE"',
        f"declare -A WANT=({wanted})",
        "mod=$(go list -m -f '{{.Path}}' 2>/dev/null | head -1)",
        f'printf "{HEADER} module %s\\n" "$mod" >> "$OUT"',
        "go list -e -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{\"\\t\"}}"
        f"{{{{.Dir}}}}{{{{end}}}}' {patterns} > \"$S/pkgs\" 2>/dev/null",
        "i=0",
        "while IFS=$'\\t' read -r pkg dir; do",
        '  [ -n "$pkg" ] || continue',
        '  i=$((i+1)); rel=${dir#"$PWD"}; rel=${rel#/}; [ -n "$rel" ] || rel=.',
        '  bin="$S/bin/$i.test"',
        '  go test -c -vet=off -cover -covermode=set -coverpkg="$mod/..." -o "$bin" "$pkg" '
        '>/dev/null 2>&1 || continue',
        '  [ -x "$bin" ] || continue',
        '  k=0',
        '  for t in $(cd "$dir" && "$bin" -test.list \'.*\' 2>/dev/null '
        "| grep -E '^(Test|Example|Fuzz)'); do",
        '    if [ -n "${WANT[$rel]+x}" ] && [[ "${WANT[$rel]}" != *" $t "* ]]; then continue; fi',
        '    k=$((k+1)); prof="$S/$i-$k.out"',
        '    (cd "$dir" && exec "$bin" -test.v=test2json -test.count=1 '
        f'"-test.run=^$t\\$" -test.timeout={PER_TEST_TIMEOUT}s '
        '-test.coverprofile="$prof" </dev/null 2>&1) '
        '| go tool test2json -p "$pkg" > "$S/$i-$k.json"',
        '    [ -s "$prof" ] || continue',
        f'    printf "{HEADER} test %s %s\\n" "$rel" "$t" >> "$OUT"',
        '    grep -h \'"Action":"run"\' "$S/$i-$k.json" >> "$OUT"',
        '    grep -v "^mode:" "$prof" | grep -v " 0$" >> "$OUT"',
        "  done",
        'done < "$S/pkgs"',
        "git ls-files -z -- '*.go' ':!:*_test.go' | xargs -0 -r awk "
        + shlex.quote(_PACKAGE_LEVEL) + ' >> "$OUT"',
    ]) + "\n"


# prints "### repogym-cover decl FILE LINE" for each non-blank, non-comment line outside
# function bodies (brace depth; a func opens at depth 0)
_PACKAGE_LEVEL = (
    'FNR == 1 { depth = 0; infunc = 0 }\n'
    '{ line = $0; sub(/\\/\\/.*/, "", line) }\n'
    'depth == 0 && line ~ /^func[ (]/ { infunc = 1 }\n'
    '!infunc && line ~ /[^ \\t]/ { print "' + HEADER + ' decl " FILENAME " " FNR }\n'
    '{ o = gsub(/{/, "{", line); c = gsub(/}/, "}", line); depth += o - c;'
    ' if (depth <= 0) { depth = 0; if (infunc && (o || c)) infunc = 0 } }\n')


def parse_cover(text: str, test_id: Callable[[str, str], str]) -> CoverageMap | None:
    """The map the script's output says (None: no test measured). ``test_id(folder,
    name)`` names a test as the runs do."""
    module = ""
    files: dict[str, dict[int, set[str]]] = {}
    decls: dict[str, list[int]] = {}
    folder, tests = ".", set()
    measured = False
    for line in text.splitlines():
        if line.startswith(HEADER):
            parts = line.split()
            if len(parts) > 3 and parts[2] == "module":
                module = parts[3]
            elif len(parts) > 4 and parts[2] == "decl" and parts[4].isdigit():
                decls.setdefault(parts[3], []).append(int(parts[4]))
            elif len(parts) > 4 and parts[2] == "test":
                folder, tests, measured = parts[3], {test_id(parts[3], parts[4])}, True
        elif line.startswith("{"):
            name = _event_test(line)
            if name:
                tests.add(test_id(folder, name))
        elif tests and (block := _block(line, module)) is not None:
            path, start, end = block
            by_line = files.setdefault(path, {})
            for n in range(start, end + 1):
                by_line.setdefault(n, set()).update(tests)
    if not measured:
        return None
    return CoverageMap(files={p: {n: tuple(sorted(t)) for n, t in lines.items()}
                              for p, lines in files.items()},
                       import_lines={p: tuple(sorted(set(n))) for p, n in decls.items()})


def _event_test(line: str) -> str | None:
    try:
        name = json.loads(line).get("Test")
    except (ValueError, AttributeError):
        return None
    return name if isinstance(name, str) else None


def _block(line: str, module: str) -> tuple[str, int, int] | None:
    """(repo-relative file, first line, last line) of a covered profile block."""
    try:
        where, _stmts, count = line.rsplit(" ", 2)
        name, span = where.rsplit(":", 1)
        start, end = span.split(",")
        if int(count) == 0:
            return None
        first, last = int(start.split(".")[0]), int(end.split(".")[0])
    except ValueError:
        return None
    if not module or not name.startswith(module + "/"):
        return None
    return name[len(module) + 1:], first, last


def coverage_map(sandbox: Sandbox, *, timeout: float, select: Sequence[str] | None,
                 test_id: Callable[[str, str], str]) -> CoverageMap | None:
    """Per-test coverage of ``select`` (None: every test) in the sandbox's current state.

    Raises:
        TestRunError: the coverage run broke the sandbox.
    """
    from repogym.toolchains.go import split_id

    tops: dict[str, set[str]] | None = None
    if select is not None:
        tops = {}
        for test in select:
            folder, top, _ = split_id(test)
            tops.setdefault(folder, set()).add(top)
    scratch = f"{SCRATCH}/repogym-go-cover-{secrets.token_hex(6)}"
    result, lost = exec_or_lost(sandbox, coverage_script(scratch, tops), timeout=timeout,
                                env={})
    if lost:
        raise TestRunError(f"the coverage run broke the sandbox: {lost}")
    text = read_or_empty(sandbox, f"{scratch}/cover.txt").decode("utf-8", errors="replace")
    sandbox.exec(["rm", "-rf", scratch], timeout=60)
    cov = parse_cover(text, test_id)
    if cov is None:
        log.warning("go coverage: no test measured (exit %s): %s", result.exit_code,
                    (result.stderr or result.stdout)[-300:])
    return cov


__all__ = ["coverage_map", "coverage_script", "parse_cover"]
