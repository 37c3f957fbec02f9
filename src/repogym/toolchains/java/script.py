"""The shell script of one Maven test run, and the plan it hands to repogym's extension.

One ``mvn -o clean test`` over the whole reactor, with repogym's extension
(:mod:`~repogym.toolchains.java.maven`) loaded and the run's *plan* (its nonce, reports
folder, test filter, fork time limits, canary) in a properties file the extension reads and
removes before any of the project's code runs. ``clean`` first: every run compiles the
main and test code from the work tree as it is, so nothing a patch or an earlier run left
in ``target/`` (a stale or forged class file) is ever run.

A watchdog in the script stops a forked test JVM that outlives its module's time limit: it
takes a thread dump first (``jstack``, to name the test it hung in) and records the kill in
the run's event log.

The script reaches the sandbox as a file it reads into memory and removes before anything
else runs, so neither the command line nor the work tree shows the nonce; Maven's command
line names only the plan's path, and the plan is gone before a test starts.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from repogym.toolchains.java.maven import EXT_JAR

M2 = "$VIRTUAL_ENV/m2"  # the environment's local repository (read-only once installed)
# checks and reports bound to the lifecycle that do not decide any test's outcome
SKIPS = ("-Denforcer.skip", "-Drat.skip", "-Djacoco.skip", "-Danimal.sniffer.skip",
         "-Dcheckstyle.skip", "-Dspotbugs.skip", "-Dpmd.skip", "-Dcpd.skip", "-Djapicmp.skip",
         "-Drevapi.skip", "-Dmaven.javadoc.skip", "-Dmaven.source.skip", "-Dgpg.skip",
         "-Dbuildnumber.skip", "-Dremoteresources.skip", "-Dcyclonedx.skip",
         "-Dspotless.check.skip", "-Dspotless.apply.skip", "-Dlicense.skip",
         "-Dformatter.skip", "-Dimpsort.skip", "-Dsortpom.skip", "-Dbnd.baseline.skip",
         "-Dmaven.build.cache.enabled=false")
MAVEN = ("mvn", "-B", "-ntp", f'-Dmaven.repo.local="{M2}"', f'-Dmaven.ext.class.path="{EXT_JAR}"',
         *SKIPS)
MAVEN_OPTS = "-XX:TieredStopAtLevel=1"  # Maven and javac live seconds: C1 is enough
CANARY_GLOB = "RepogymCanary????????????????Test.java"
WATCH_INTERVAL = 0.5


@dataclass(frozen=True)
class MavenRun:
    """What one run does: the Surefire test filter (``""``: every test), the modules whose
    forks may run how long (seconds, by module folder; others get ``default_budget``),
    JUnit Jupiter's per-test limit, fail-fast, and whether to plant the canary."""

    scratch: str
    nonce: str
    test: str = ""
    budgets: dict[str, float] = field(default_factory=dict)
    default_budget: float = 600.0
    jupiter_timeout: float | None = None
    failfast: bool = False
    canary: bool = False
    canary_modules: tuple[str, ...] | None = None  # None: every module

    @property
    def canary_name(self) -> str:
        """The canary's class (default package) when ``canary``: a test that must fail,
        planted in each module's test sources until Surefire starts (its class stays)."""
        return f"RepogymCanary{self.nonce[:16]}Test"

    @property
    def events(self) -> str:
        return f"{self.scratch}/events.jsonl"

    @property
    def bundle(self) -> str:
        return f"{self.scratch}/bundle"

    def plan(self) -> str:
        """The properties file the extension reads (see ``Run.java``)."""
        props: dict[str, str] = {"nonce": self.nonce, "out": self.scratch,
                                 "timeout": f"{self.default_budget + 60:.0f}"}
        if self.test:
            props["test"] = self.test
        if self.failfast:
            props["skipAfterFailureCount"] = "1"
        if self.canary:
            props["canary"] = self.canary_name
            if self.canary_modules is not None:
                props["canary.modules"] = "\n".join(self.canary_modules)
        for folder, seconds in self.budgets.items():
            props[f"timeout.{folder}"] = f"{seconds + 60:.0f}"  # Surefire's own backstop
        return "".join(f"{_escape(k)}={_escape(v)}\n" for k, v in sorted(props.items()))

    def maven_command(self) -> str:
        args = [*MAVEN, "-o", "-fae", '-Drepogym.plan="$S/plan"']
        if self.jupiter_timeout is not None:
            args.append(f"-Djunit.jupiter.execution.timeout.default={self.jupiter_timeout:.0f}s")
        return " ".join([*args, "clean", "test"])

    def script(self) -> str:
        budgets = " ".join(f"[{shlex.quote(k)}]={v:.0f}" for k, v in sorted(self.budgets.items()))
        return "\n".join([
            "set -u",
            f"S={shlex.quote(self.scratch)}; N={shlex.quote(self.nonce)}",
            'mkdir -p "$S/reports" && : > "$S/events.jsonl"',
            _uproot(),
            "cat > \"$S/plan\" <<'REPOGYM_PLAN'",
            self.plan().rstrip("\n"),
            "REPOGYM_PLAN",
            f"declare -A BUDGET=({budgets}); DEFAULT={self.default_budget:.0f}",
            f'MAVEN_OPTS="{MAVEN_OPTS}" {self.maven_command()} > "$S/maven.log" 2>&1 '
            "</dev/null &",
            "m=$!",
            *self._watchdog(),
            'wait "$m"; st=$?',
            "printf '{\"event\":\"exit\",\"nonce\":\"%s\",\"status\":%d}\\n' \"$N\" \"$st\" "
            '>> "$S/events.jsonl"',
            'exit "$st"',
        ]) + "\n"

    def _watchdog(self) -> list[str]:
        """Every forked test JVM (a ``java`` running Surefire's booter) gets its module's
        budget from when the watchdog first sees it; past it, a thread dump, then a kill."""
        return [
            "declare -A SEEN=(); k=0",
            'while kill -0 "$m" 2>/dev/null; do',
            '  for p in $(pgrep -u "$(id -u)" -x java); do',
            '    grep -qa surefirebooter "/proc/$p/cmdline" 2>/dev/null || continue',
            '    [ -n "${SEEN[$p]:-}" ] || SEEN[$p]=$SECONDS',
            '    d=$(readlink "/proc/$p/cwd"); rel=${d#"$PWD"}; rel=${rel#/}; '
            '[ -n "$rel" ] || rel=.',
            '    b=${BUDGET[$rel]:-$DEFAULT}',
            '    if (( SECONDS - SEEN[$p] > b )); then',
            '      k=$((k+1)); timeout 30 jstack "$p" > "$S/hung-$k.txt" 2>&1',
            '      kill -9 "$p" 2>/dev/null',
            "      printf '{\"event\":\"killed\",\"nonce\":\"%s\",\"dir\":\"%s\",\"dump\":"
            "\"hung-%d.txt\",\"seconds\":%d}\\n' \"$N\" \"$rel\" \"$k\" \"$b\" "
            '>> "$S/events.jsonl"',
            '      unset "SEEN[$p]"',
            "    fi",
            "  done",
            f"  sleep {WATCH_INTERVAL}",
            "done",
        ]

    def collect_command(self) -> str:
        """After the run: every report Surefire wrote into one file (each under a header
        with its module, name and size), and no canary left in the work tree."""
        s = shlex.quote(self.scratch)
        return "\n".join([
            f"S={s}; : > \"$S/bundle\"",
            'for f in "$S"/reports/*/TEST-*.xml; do',
            '  [ -f "$f" ] || continue',
            "  printf '### repogym-file %s %d\\n' \"${f#\"$S/reports/\"}\" "
            '"$(stat -c %s "$f")" >> "$S/bundle"',
            '  cat "$f" >> "$S/bundle"; printf \'\\n\' >> "$S/bundle"',
            "done",
            _uproot(),
        ]) + "\n"

    def command(self, script_path: str) -> str:
        """The exec's command: the script read into memory and removed, then run."""
        q = shlex.quote(script_path)
        return f"bash -c 's=$(cat {q}); rm -f {q}; eval \"$s\"'"


def _uproot() -> str:
    """Remove canaries a run that was stopped left in the work tree."""
    return (f"find . -name .git -prune -o -type f -name '{CANARY_GLOB}' "
            "-exec rm -f {} + 2>/dev/null")


def _escape(value: str) -> str:
    """A value as ``java.util.Properties`` reads it (ISO-8859-1, backslash escapes)."""
    out = []
    for ch in value:
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            units = ch.encode("utf-16-be")
            out += [f"\\u{units[i] << 8 | units[i + 1]:04x}" for i in range(0, len(units), 2)]
        else:
            out.append(ch)
    text = "".join(out)
    return "\\" + text if text[:1] in (" ", "#", "!") else text


__all__ = ["MAVEN", "M2", "MavenRun"]
