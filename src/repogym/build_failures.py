"""Environments that did not install, remembered per environment spec (commit and recipe).

A mined fix is judged in an environment built at its own commit. At old commits that build
often fails for good (a dependency pin no index serves any more, a build backend that no
longer exists): rebuilding it in every run costs the build's whole time and, if the
failure were kept an infrastructure error, the candidate would be judged again forever.
An install can also fail by chance (the index timed out), so one failure is not a verdict:
the :class:`BuildLedger` counts the failures of each spec's digest, and once a spec has
failed :data:`ATTEMPTS` times (in different runs: within one run a spec is built once) it
is known not to install -- the candidates that need it are rejected with the step and log
tail, and it is not built again. A change of recipe (install steps, base image, recipe
version) is another spec, tried afresh. A build that succeeds clears the record.

Only a failing install step counts (:class:`~repogym.errors.InstallError`); an engine or
sandbox failure says nothing about the commit and is never recorded.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from pathlib import Path

from pydantic import Field

from repogym.cache import RecordCache
from repogym.errors import InstallError
from repogym.schemas.records import EnvSpec, Record, utcnow

log = logging.getLogger(__name__)

ATTEMPTS = 2  # failed builds of one spec before it is known not to install
TAIL_CHARS = 1500


class BuildFailure(Record):
    """The failed builds of one environment spec."""

    digest: str
    repo: str
    commit: str
    recipe_version: str
    step: str
    limit: str = ""  # the sandbox limit that stopped the step, if that is what ended it
    tail: str = ""  # the end of the failing step's log
    log_path: str = ""
    attempts: int = 1
    first_seen: datetime = Field(default_factory=utcnow)
    last_seen: datetime = Field(default_factory=utcnow)

    @property
    def settled(self) -> bool:
        """Failed often enough that it is not chance: the spec is not built again."""
        return self.attempts >= ATTEMPTS

    def describe(self) -> str:
        """One paragraph for a verdict: what failed, how often, and the log's end."""
        what = f"stopped: the build {self.limit}" if self.limit else "failed"
        times = "once" if self.attempts == 1 else f"in {self.attempts} builds"
        tail = self.tail.strip()[-TAIL_CHARS:]
        return (f"the environment does not install at {self.commit[:12]} (recipe "
                f"{self.recipe_version}): install step {what} {times} "
                f"({self.first_seen:%Y-%m-%d %H:%M} to {self.last_seen:%Y-%m-%d %H:%M} UTC): "
                f"{self.step}" + (f"\n{tail}" if tail else ""))


class BuildLedger:
    """The :class:`BuildFailure` records in a folder, one JSON file per spec digest.

    Thread-safe within a process (judges of several repositories share a run); files are
    replaced whole, so a reader never sees half a record.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._records = RecordCache(folder, BuildFailure, indent=2)
        self._lock = threading.Lock()

    def get(self, spec: EnvSpec) -> BuildFailure | None:
        """The spec's record (None: never failed, or the record is unreadable)."""
        found = self._records.get(spec.digest())
        return found if found is not None and found.digest == spec.digest() else None

    def record(self, spec: EnvSpec, exc: InstallError) -> BuildFailure:
        """Count one more failed build of ``spec``; the updated record."""
        with self._lock:
            old = self.get(spec)
            now = utcnow()
            failure = BuildFailure(
                digest=spec.digest(), repo=spec.repo, commit=spec.commit,
                recipe_version=spec.recipe_version, step=exc.step, limit=exc.limit,
                tail=(exc.tail or "")[-TAIL_CHARS:],
                log_path=str(exc.log_path) if exc.log_path else "",
                attempts=(old.attempts + 1) if old else 1,
                first_seen=old.first_seen if old else now, last_seen=now)
            self._records.put(failure.digest, failure)
            return failure

    def clear(self, spec: EnvSpec) -> None:
        """The spec built: forget its failures."""
        with self._lock:
            self._records.drop(spec.digest())
