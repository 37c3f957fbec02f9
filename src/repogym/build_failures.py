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

The same holds one step later: an environment that installs may still not run the commit's
own suite (today's runner against tests of another time). The :class:`SuiteLedger` counts
those per image and commit, with the same rule: an infrastructure error the first time, a
fact about the commit (``env_mismatch:suite_does_not_run``) once it repeats.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from datetime import datetime
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import Field

from repogym.cache import RecordCache
from repogym.errors import InstallError
from repogym.schemas.records import EnvSpec, Record, utcnow

log = logging.getLogger(__name__)

ATTEMPTS = 2  # failed builds of one spec before it is known not to install
TAIL_CHARS = 1500


class RepeatedFailure(Record):
    """A failure counted across runs: how often, since when; settled once it repeats."""

    attempts: int = 1
    first_seen: datetime = Field(default_factory=utcnow)
    last_seen: datetime = Field(default_factory=utcnow)

    @property
    def ledger_key(self) -> str:
        """The key the record is filed under."""
        raise NotImplementedError

    @property
    def settled(self) -> bool:
        """Failed often enough that it is not chance."""
        return self.attempts >= ATTEMPTS

    def _span(self) -> str:
        return f"{self.first_seen:%Y-%m-%d %H:%M} to {self.last_seen:%Y-%m-%d %H:%M} UTC"


F = TypeVar("F", bound=RepeatedFailure)


class _Ledger(Generic[F]):
    """Records of one kind in a folder, one JSON file per key.

    Thread-safe within a process (judges of several repositories share a run); files are
    replaced whole, so a reader never sees half a record.
    """

    def __init__(self, folder: Path, kind: type[F]) -> None:
        self.folder = folder
        self._records = RecordCache(folder, kind, indent=2)
        self._lock = threading.Lock()

    def _get(self, key: str) -> F | None:
        """The key's record (None: never failed, or the record is unreadable)."""
        found = self._records.get(key)
        return found if found is not None and found.ledger_key == key else None

    def _count(self, key: str, failure: F) -> F:
        """``failure`` counted once more over the key's earlier ones; the record kept."""
        with self._lock:
            old = self._get(key)
            now = utcnow()
            counted = failure.model_copy(update={
                "attempts": (old.attempts + 1) if old else 1,
                "first_seen": old.first_seen if old else now, "last_seen": now})
            self._records.put(key, counted)
            return counted

    def _drop(self, key: str) -> None:
        with self._lock:
            self._records.drop(key)


class BuildFailure(RepeatedFailure):
    """The failed builds of one environment spec."""

    digest: str
    repo: str
    commit: str
    recipe_version: str
    step: str
    limit: str = ""  # the sandbox limit that stopped the step, if that is what ended it
    tail: str = ""  # the end of the failing step's log
    log_path: str = ""

    @property
    def ledger_key(self) -> str:
        return self.digest

    def describe(self) -> str:
        """One paragraph for a verdict: what failed, how often, and the log's end."""
        what = f"stopped: the build {self.limit}" if self.limit else "failed"
        times = "once" if self.attempts == 1 else f"in {self.attempts} builds"
        tail = self.tail.strip()[-TAIL_CHARS:]
        return (f"the environment does not install at {self.commit[:12]} (recipe "
                f"{self.recipe_version}): install step {what} {times} ({self._span()}): "
                f"{self.step}" + (f"\n{tail}" if tail else ""))


class BuildLedger(_Ledger[BuildFailure]):
    """The :class:`BuildFailure` records in a folder, one JSON file per spec digest."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder, BuildFailure)

    def get(self, spec: EnvSpec) -> BuildFailure | None:
        """The spec's record (None: never failed, or the record is unreadable)."""
        return self._get(spec.digest())

    def record(self, spec: EnvSpec, exc: InstallError) -> BuildFailure:
        """Count one more failed build of ``spec``; the updated record."""
        return self._count(spec.digest(), BuildFailure(
            digest=spec.digest(), repo=spec.repo, commit=spec.commit,
            recipe_version=spec.recipe_version, step=exc.step, limit=exc.limit,
            tail=(exc.tail or "")[-TAIL_CHARS:],
            log_path=str(exc.log_path) if exc.log_path else ""))

    def clear(self, spec: EnvSpec) -> None:
        """The spec built: forget its failures."""
        self._drop(spec.digest())


class SuiteFailure(RepeatedFailure):
    """The runs of one commit's own suite that did not run in one environment image.

    A mined fix at an old commit is judged in an environment of today (today's pytest, its
    plugins): at some commits the suite cannot run there at all (the tests call an API the
    runner dropped; the project shadows a module the runner imports). The judge finds that
    at the commit's clean state -- the candidate is not to blame, and it is not the sandbox
    either when it repeats.
    """

    key: str
    repo: str
    commit: str
    image: str
    reason: str  # the judge's infrastructure reason code of the last failure
    tail: str = ""

    @property
    def ledger_key(self) -> str:
        return self.key

    def describe(self) -> str:
        times = "once" if self.attempts == 1 else f"in {self.attempts} runs"
        return (f"the suite of {self.commit[:12]} does not run in its environment "
                f"{self.image} ({self.reason}, {times}, {self._span()}): "
                f"{self.tail.strip()[-TAIL_CHARS:]}")


def suite_key(image: str, commit: str) -> str:
    """The ledger key of one commit's suite in one image (file-name safe)."""
    return hashlib.sha256(f"{image}\0{commit}".encode()).hexdigest()[:24]


class SuiteLedger(_Ledger[SuiteFailure]):
    """The :class:`SuiteFailure` records in a folder, one JSON file per (image, commit):
    like :class:`BuildLedger`, a failure counts as a fact about the commit in that image
    once it repeats in another run; until then it is an infrastructure error."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder, SuiteFailure)

    def get(self, image: str, commit: str) -> SuiteFailure | None:
        return self._get(suite_key(image, commit))

    def record(self, repo: str, image: str, commit: str, reason: str,
               tail: str) -> SuiteFailure:
        """Count one more run in which the commit's suite did not run; the record."""
        key = suite_key(image, commit)
        return self._count(key, SuiteFailure(key=key, repo=repo, commit=commit, image=image,
                                             reason=reason, tail=tail[-TAIL_CHARS:]))

    def clear(self, image: str, commit: str) -> None:
        self._drop(suite_key(image, commit))
