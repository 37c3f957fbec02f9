"""The shell script of one Go test run.

Packages are listed with ``go list``, then each one's test binary is *built* and only then
*run* (``go test -c``, then the binary with ``-test.v=test2json`` through ``go tool
test2json``): ``go test ./...`` interleaves building and running, so code of one package's
tests would run while the next package builds, with the build cache writable. Each binary
runs in its package's folder, as ``go test`` runs it, with ``-test.count=1`` (the test
cache never answers) and a ``-test.timeout`` from the run's time limits. ``go test``'s vet
checks are off (``-vet=off``): they are lints, and a newer Go's (1.24's printf check) fails
the build of tests that built when they were written (github.com/pkg/errors).

The script reaches the sandbox as a file it reads into memory and removes before anything
else runs (``eval``), so neither the command line nor the work tree shows the nonce its
markers carry (:mod:`~repogym.toolchains.go.report`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from repogym.layout import TOOL_CACHE
from repogym.toolchains.go.project import BUILD_SEED, MOD_CACHE

GO_ENV = ("-buildvcs=false -mod=mod", "off", "off", "local")


@dataclass(frozen=True)
class GoRun:
    """What one run tests: package folders (None: every package), per folder the ``-run``
    and ``-skip`` patterns and the binary's time limit."""

    scratch: str
    nonce: str
    dirs: tuple[str, ...] | None = None
    run: dict[str, str] = field(default_factory=dict)
    skip: dict[str, str] = field(default_factory=dict)
    timeouts: dict[str, float] = field(default_factory=dict)
    default_timeout: float = 600.0
    failfast: bool = False
    canary: bool = False  # plant a failing test in each package (see canary_name)

    @property
    def canary_name(self) -> str:
        """The test planted in each package's test binary when ``canary``: it must fail.
        Its file is there while the binary builds and gone before it runs, so code under
        test that prints a whole run of forged passes and exits cleanly cannot name it:
        a binary that exits 0, or whose events lack the canary's failure, was tampered
        with."""
        return f"TestRepogymCanary{self.nonce[:16]}"

    @property
    def report(self) -> str:
        return f"{self.scratch}/report.jsonl"

    def build_log(self, index: int) -> str:
        return f"{self.scratch}/build-{index}.log"

    def script(self) -> str:
        patterns = " ".join(f"./{d}" if d != "." else "." for d in self.dirs or ()) \
            if self.dirs is not None else "./..."
        s, r, n = shlex.quote(self.scratch), shlex.quote(self.report), shlex.quote(self.nonce)
        flags, proxy, sumdb, toolchain = GO_ENV
        lines = [
            "set -u",
            f"S={s}; R={r}; N={n}",
            f'mkdir -p "$S/bin" {TOOL_CACHE} && : > "$R"',
            f'export GOMODCACHE="{MOD_CACHE}" GOFLAGS="{flags}" GOPROXY={proxy} '
            f"GOSUMDB={sumdb} GOTOOLCHAIN={toolchain}",
            f'export GOCACHE={TOOL_CACHE}/go-build',
            f'[ -d "$GOCACHE" ] || cp -a "{BUILD_SEED}" "$GOCACHE" 2>/dev/null '
            '|| mkdir -p "$GOCACHE"',
            _assoc("RUN", self.run), _assoc("SKIP", self.skip),
            _assoc("TMO", {k: f"{v:.0f}s" for k, v in self.timeouts.items()}),
            f"go list -e -f '{{{{if or .TestGoFiles .XTestGoFiles}}}}{{{{.ImportPath}}}}"
            f"{{{{\"\\t\"}}}}{{{{.Dir}}}}{{{{\"\\t\"}}}}{{{{.Name}}}}{{{{end}}}}' {patterns} "
            '> "$S/pkgs" 2> "$S/list.log"',
            "i=0",
            "while IFS=$'\\t' read -r pkg dir name; do",
            '  [ -n "$pkg" ] || continue',
            '  i=$((i+1)); rel=${dir#"$PWD"}; rel=${rel#/}; [ -n "$rel" ] || rel=.',
            "  printf '{\"Action\":\"repogym-package\",\"Nonce\":\"%s\",\"Package\":\"%s\","
            "\"Dir\":\"%s\",\"Index\":%d}\\n' \"$N\" \"$pkg\" \"$rel\" \"$i\" >> \"$R\"",
            *self._plant(),
            '  go test -c -vet=off -o "$S/bin/$i.test" "$pkg" > "$S/build-$i.log" 2>&1; built=$?',
            *(['  rm -f "$canary"'] if self.canary else []),
            '  if [ "$built" != 0 ]; then',
            "    printf '{\"Action\":\"repogym-build\",\"Nonce\":\"%s\",\"Package\":\"%s\","
            "\"Status\":1}\\n' \"$N\" \"$pkg\" >> \"$R\"; continue",
            "  fi",
            '  if [ -x "$S/bin/$i.test" ]; then',
            '    args=(-test.v=test2json -test.count=1 '
            f'"-test.timeout=${{TMO[$rel]:-{self.default_timeout:.0f}s}}")',
            '    [ -n "${RUN[$rel]:-}" ] && args+=("-test.run=${RUN[$rel]}")',
            '    [ -n "${SKIP[$rel]:-}" ] && args+=("-test.skip=${SKIP[$rel]}")',
            *(['    args+=(-test.failfast)'] if self.failfast else []),
            '    (cd "$dir" && exec "$S/bin/$i.test" "${args[@]}" 2>&1 </dev/null) '
            '| go tool test2json -t -p "$pkg" >> "$R"; st=${PIPESTATUS[0]}',
            "  else st=0; fi",
            "  printf '{\"Action\":\"repogym-end\",\"Nonce\":\"%s\",\"Package\":\"%s\","
            "\"Status\":%d}\\n' \"$N\" \"$pkg\" \"$st\" >> \"$R\"",
            *(['  [ "$st" = 0 ] || break'] if self.failfast else []),
            'done < "$S/pkgs"',
            "printf '{\"Action\":\"repogym-done\",\"Nonce\":\"%s\"}\\n' \"$N\" >> \"$R\"",
        ]
        return "\n".join(lines) + "\n"

    def _plant(self) -> list[str]:
        """The canary's file in the package's folder, for the build only."""
        if not self.canary:
            return []
        body = (r'package %s\n\nimport "testing"\n\n'
                f"func {self.canary_name}(t *testing.T) {{ t.Fatal(\"repogym canary\") }}"
                r"\n")
        return [f'  canary="$dir/zz_repogym_{self.nonce[:12]}_test.go"',
                f"  printf '{body}' \"$name\" > \"$canary\""]

    def command(self, script_path: str) -> str:
        """The exec's command: the script read into memory and removed, then run."""
        q = shlex.quote(script_path)
        return f"bash -c 's=$(cat {q}); rm -f {q}; eval \"$s\"'"


def _assoc(name: str, values: dict[str, str]) -> str:
    items = " ".join(f"[{shlex.quote(k)}]={shlex.quote(v)}" for k, v in sorted(values.items()))
    return f"declare -A {name}=({items})"


__all__ = ["GoRun"]
