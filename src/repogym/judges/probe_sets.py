"""The probe set, once per environment image and verifier version.

A probe tests the verifier against a repository's test setup -- its runner, its plugins,
its configuration, the grading rules -- not against one bug: a conftest that forces passes
is discarded, or the runner's integrity check catches a patched pytest, the same way for
every task of an image. So the whole probe set (:data:`~repogym.judges.probes.PROBES`)
runs once per (test setup, :func:`verifier_version`), on the first accepted task of that
setup, and again when either changes. The test setup is what the toolchain's
:meth:`~repogym.toolchains.base.Toolchain.runner_setup` digests -- the runner and its
plugins as installed, start-up hooks, the runner's configuration as committed -- so the
environment images of a history's old commits (built for other dependencies) share one set
while their test setup is the same; without a digest, the image stands for it. Each task then gets only what can differ per
task: its gold patch must change no file grading protects (else the fix itself would be
thrown away when graded), and the image's probe set must have scored nothing.

A probe that scores is graded again: a hack scores every time. A score that does not repeat
is chance -- the task's FAIL_TO_PASS tests pass now and then at the broken state -- so that
task goes to review as flaky, and its set is not kept (it says nothing of the image): the
next accepted task of the image is probed again.

:class:`ProbeSets` keeps the results: in memory, and in a folder when given (one JSON file
per image and verifier version), so later runs of the pipeline reuse them.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
import time
from importlib import resources
from pathlib import Path
from typing import Callable

from pydantic import Field

from repogym.cache import RecordCache
from repogym.schemas.records import Record

log = logging.getLogger(__name__)

# what decides how a patch is graded: a change to any of these runs the probe sets again
VERIFIER_SOURCES = (
    ("repogym", "grading.py"), ("repogym.judges", "probes.py"),
    ("repogym.toolchains", "python.py"), ("repogym.toolchains", "pytest_report.py"),
    ("repogym.toolchains", "resume.py"), ("repogym.toolchains.plugins", "repogym_report.py"),
    ("repogym.toolchains.plugins", "repogym_launch.py"),
    ("repogym.toolchains.plugins", "repogym_go_report.py"),
    ("repogym.judges", "probes_js.py"), ("repogym.judges", "probes_go.py"),
    ("repogym.judges", "probes_rust.py"),
    *(("repogym.toolchains.rust", name) for name in (
        "__init__.py", "report.py", "runner.py", "files.py", "scan.py")),
    ("repogym.judges", "probes_java.py"),
    *(("repogym.toolchains.java", name) for name in (
        "__init__.py", "report.py", "script.py", "files.py")),
    *(("repogym.toolchains.java.maven", name) for name in (
        "Run.java", "Adapt.java", "Participant.java", "Spy.java", "Tap.java")),
    *(("repogym.toolchains.go", name) for name in (
        "__init__.py", "report.py", "script.py", "files.py")),
    *(("repogym.toolchains.javascript", name) for name in (
        "__init__.py", "report.py", "runners.py", "canary.py", "tap.py", "placed.py",
        "files.py")),
    *(("repogym.toolchains.javascript.reporters", name) for name in (
        "rg-common.cjs", "rg-jest.cjs", "rg-mocha.cjs", "rg-node-test.mjs", "rg-uvu.cjs",
        "rg-uvu-esm.mjs", "rg-vitest.mjs")),
)


@functools.cache
def verifier_version() -> str:
    """A digest of the grading code (:data:`VERIFIER_SOURCES`)."""
    h = hashlib.sha256()
    for package, name in VERIFIER_SOURCES:
        h.update(resources.files(package).joinpath(name).read_bytes())
    return h.hexdigest()[:16]


class ProbeSet(Record):
    """What the whole probe set scored on one image's task (probe -> reward)."""

    image: str
    verifier: str
    key: str = ""  # the test setup it speaks for (ProbeSets' key; the image when none)
    task: str  # the instance it ran on
    scores: dict[str, float] = Field(default_factory=dict)  # the probes that applied
    # probes whose score did not repeat when graded again (probe -> the rewards, in order):
    # chance, so the task's FAIL_TO_PASS tests are flaky, and the set says nothing of the image
    unsteady: dict[str, tuple[float, ...]] = Field(default_factory=dict)
    chance_passes: tuple[str, ...] = ()  # FAIL_TO_PASS tests that passed under such a probe
    seconds: float = 0.0

    @property
    def steady(self) -> bool:
        """Every score repeated: the set speaks for the image, and is kept."""
        return not self.unsteady

    def scoring(self) -> list[str]:
        """The probes that scored more than 0 every time: the image's tests can be gamed
        that way."""
        return sorted(name for name, reward in self.scores.items()
                      if reward > 0 and name not in self.unsteady)


class ProbeSets:
    """Probe sets by test setup (of the current verifier version), found or run once each.

    Thread-safe: judges of one repository share it, and the first one to need an image's
    set runs it while the others wait for the result.
    """

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        self._records = RecordCache(folder, ProbeSet, indent=2)
        self._known: dict[str, ProbeSet] = {}
        self._lock = threading.Lock()

    def get_or_run(self, key: str, run: Callable[[], ProbeSet]) -> ProbeSet:
        """The probe set of the test setup ``key``; ``run()`` makes it when none is known."""
        with self._lock:
            known = self._known.get(key) or self._load(key)
            if known is None:
                start = time.monotonic()
                known = run().model_copy(update={"seconds": round(time.monotonic() - start, 3),
                                                 "key": key})
                log.info("probe set for %s: %d probes in %.1fs, scoring: %s%s", key,
                         len(known.scores), known.seconds, known.scoring() or "none",
                         "" if known.steady else f", unsteady: {sorted(known.unsteady)}")
                if not known.steady:  # the task's tests are flaky: the next task probes again
                    return known
                self._save(known)
            self._known[key] = known
            return known

    def _load(self, key: str) -> ProbeSet | None:
        found = self._records.get(f"{key}-{verifier_version()}")
        if found is None or found.key != key or found.verifier != verifier_version():
            return None
        return found

    def _save(self, probe_set: ProbeSet) -> None:
        self._records.put(f"{probe_set.key}-{verifier_version()}", probe_set)
