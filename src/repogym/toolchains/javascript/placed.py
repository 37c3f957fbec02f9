"""One run's files in the sandbox, as every JavaScript run lays them out: the runner's
reporter files in a fresh scratch directory, and the run's settings (report path, nonce,
selection, per-test time limit) in a file the reporter reads and removes as it loads (see
``reporters/rg-common.cjs``). Judged runs and coverage runs both place their files here."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Sequence

from repogym.sandboxes.base import Sandbox
from repogym.schemas.records import TimeLimits
from repogym.toolchains.javascript.runners import Runner, timeout_ms

REPORTERS = "repogym.toolchains.javascript.reporters"
# every run: nothing from the environment that changes how node starts. Colour and CI
# variables are left as the runner sets them: libraries under test read them too (kleur's
# tests expect the FORCE_COLOR uvu sets); runners are told not to watch by their flags.
RUN_ENV = {"NODE_OPTIONS": "", "npm_config_update_notifier": "false"}


@cache
def reporter_source(name: str) -> str:
    """A file of ``reporters/`` (read once per process)."""
    return resources.files(REPORTERS).joinpath(name).read_text()


@dataclass(frozen=True)
class PlacedRun:
    """Where one run's files are: its scratch directory, report, nonce and settings file."""

    scratch: str
    report: str
    nonce: str
    config: str

    @classmethod
    def place(cls, sandbox: Sandbox, runner: Runner, *, select: Sequence[str] | None,
              exclude: Sequence[str] = (), limits: TimeLimits | None = None,
              extra: Sequence[str] = ()) -> PlacedRun:
        """Write the runner's reporter files (and ``extra`` ones) and the settings."""
        scratch = sandbox.scratch_path()
        placed = cls(scratch=scratch, report=f"{scratch}/r-{secrets.token_hex(8)}.jsonl",
                     nonce=secrets.token_hex(16),
                     config=f"{scratch}/c-{secrets.token_hex(8)}.json")
        for name in (*runner.files, *extra):
            sandbox.write_file(f"{scratch}/{name}", reporter_source(name))
        sandbox.write_file(placed.config, json.dumps({
            "report": placed.report, "nonce": placed.nonce, "root": sandbox.repo_dir,
            "select": sorted(select) if select is not None else None,
            "exclude": sorted(exclude), "test_timeout_ms": timeout_ms(limits)}))
        return placed

    def env(self, runner_env: dict[str, str] | None = None) -> dict[str, str]:
        """The run's variables: :data:`RUN_ENV`, the runner's own, and the settings file."""
        return {**RUN_ENV, **(runner_env or {}), "REPOGYM_JS_CONFIG": self.config}


__all__ = ["RUN_ENV", "PlacedRun", "reporter_source"]
