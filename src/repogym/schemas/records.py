"""Typed records that flow one way through the pipeline.

    RepoSpec -> Checkout -> EnvSpec -> EnvImage -> Baseline -> Candidate -> Verdict -> TaskRow

Everything here is a pydantic model so it validates on the way in and serialises
to JSON (for caching, evidence and the dataset) on the way out.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Iterable

from pydantic import BaseModel, ConfigDict, Field


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def short_hash(*parts: str, n: int = 8) -> str:
    """Hex digest of the parts (order matters), ``n`` characters long."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:n]


class Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RepoSpec(Record):
    """What the user asked for: a git URL or local path, and an optional commit."""

    source: str
    commit: str | None = None
    name: str | None = None  # overrides the name derived from the source


class Checkout(Record):
    """A repository cloned on the host at a pinned commit."""

    spec: RepoSpec
    name: str  # "owner__repo" style, safe for file names and image tags
    path: Path
    commit: str  # full sha


class ImageLayer(Record):
    """What a toolchain adds to the base image for its language (a runtime, its package
    manager), built once per content and shared by every environment of that language.

    ``script`` runs as root with the network on; ``env`` are variables the layer's image
    sets (a ``PATH`` value may name ``$PATH``, the base image's). ``host_check`` is a shell
    command that succeeds on a host that has the same runtime (the ``local`` provider runs
    it instead of the script, and says what is missing when it fails).
    """

    name: str  # e.g. "node-20.20.2"
    script: str
    env: tuple[tuple[str, str], ...] = ()
    host_check: str = "true"

    def tag(self, base_image: str) -> str:
        """The layer image's tag over ``base_image``: a hash of both."""
        payload = json.dumps(self.model_dump(mode="json", exclude={"host_check"}),
                             sort_keys=True)
        name = re.sub(r"[^a-z0-9._-]+", "-", self.name.lower()).strip("-") or "layer"
        return f"repogym-layer/{name}:{short_hash(base_image, payload, n=16)}"


class EnvSpec(Record):
    """Everything that goes into a per-repo environment image; its hash is the image tag.

    ``install_steps`` run in the repository directory, in order, with network on, in the
    image ``build_from``: the base image, or the toolchain's ``layer`` over it.
    ``vendored`` names the dependency folders the install leaves in the work tree
    (``node_modules``): the environment keeps them outside it, read-only, linked from where
    they were, so a reset restores a link rather than thousands of files.
    """

    repo: str
    commit: str
    base_image: str
    toolchain: str
    install_steps: tuple[str, ...]
    recipe_version: str
    python: str = "python3"
    layer: ImageLayer | None = None
    vendored: tuple[str, ...] = ()

    @property
    def build_from(self) -> str:
        """The image the environment is built in: the layer's, or the base image."""
        return self.layer.tag(self.base_image) if self.layer else self.base_image

    def same_build(self, other: "EnvSpec") -> bool:
        """True when ``other`` differs from this spec at most in its commit and install
        steps: the same image to build from, toolchain, interpreter and recipe."""
        keep = {"commit", "install_steps"}
        return self.model_dump(exclude=keep) == other.model_dump(exclude=keep)

    def digest(self) -> str:
        # fields at their defaults are left out, so adding one keeps earlier digests
        unset = {k for k in ("layer", "vendored") if not getattr(self, k)}
        payload = self.model_dump(mode="json", exclude={"repo", *unset})
        return short_hash(json.dumps(payload, sort_keys=True), self.repo, n=16)


class EnvImage(Record):
    """A built environment: for docker an image tag, for local a directory.

    ``spec`` is None for an environment known only by its reference (a dataset row's image).
    """

    spec: EnvSpec | None = None
    provider: str
    ref: str  # image tag (docker) or env directory (local)
    repo_dir: str  # where the repository lives inside the sandbox
    build_seconds: float = 0.0
    reused: bool = False


class Outcome(str, Enum):
    passed = "passed"
    failed = "failed"
    error = "error"
    skipped = "skipped"
    xfail = "xfail"
    xpass = "xpass"

    @property
    def ok(self) -> bool:
        """Counts as a pass for grading (an xfail or skip never does)."""
        return self is Outcome.passed


class TestResult(Record):
    """One test's outcome in one run."""

    __test__ = False

    nodeid: str
    outcome: Outcome
    duration: float = 0.0
    message: str = ""  # short failure text (assertion message), empty on pass
    # what the test did beyond computing (network beyond loopback, writes outside the work
    # tree, processes left running); such a test is kept out of a task's test lists
    side_effects: tuple[str, ...] = ()
    timed_out: bool = False  # it ran past its time limit (then it is ``failed``)
    setup_duration: float = 0.0  # of ``duration``, what setup and teardown took


class TimeLimits(Record):
    """How long the tests of one run may take (seconds); see :mod:`repogym.limits`.

    ``tests`` gives a test its own limit (setup to teardown); others get ``default`` (None:
    no per-test limit). ``run`` bounds the whole run; ``grace`` is how long a test past its
    limit has to stop once interrupted before the run is killed.
    """

    tests: dict[str, float] = Field(default_factory=dict)
    default: float | None = None
    run: float = 600.0
    grace: float = 1.0

    def plugin_config(self) -> dict[str, object]:
        """The ``limits`` setting of the report plugin."""
        return {"tests": self.tests, "default": self.default, "grace": self.grace}


class TestRun(Record):
    """A whole run of the test command in a sandbox, parsed from its structured report."""

    __test__ = False

    results: dict[str, TestResult]
    exit_code: int
    duration: float
    timed_out: bool = False
    collected: int = 0
    collection_errors: tuple[str, ...] = ()
    finished: bool = False  # the runner reached its end and said so (with our nonce)
    problems: tuple[str, ...] = ()  # reasons not to believe the report (exit code mismatch...)
    log_tail: str = ""
    # the test that was running when the run died (killed, out of memory, past a hard time
    # limit, the sandbox stopped); the tests after it never ran
    died_in: str | None = None
    # every test a part of this run died in, when it was run to the end in parts
    # (repogym.toolchains.resume): each was set aside and the rest ran again
    culprits: tuple[str, ...] = ()
    # why the sandbox broke under the run (what it streamed was salvaged); reset it first
    sandbox_lost: str = ""
    # runner functions, classes and plugins that differ from before project code ran
    # (those the caller allowed as the environment's own are not problems)
    runner_changes: tuple[str, ...] = ()
    # work-tree modules the runner loaded as pytest plugins (besides conftests)
    plugin_files: tuple[str, ...] = ()
    # what each extra in-process helper of the run wrote (its name -> its output), see
    # repogym.toolchains.base.RunPlugin; untrusted: code under test could have written it
    extras: dict[str, str] = Field(default_factory=dict)

    @property
    def trusted(self) -> bool:
        """The report is complete and consistent with the process's exit code."""
        return self.finished and not self.timed_out and not self.problems

    def outcome(self, nodeid: str) -> Outcome | None:
        r = self.results.get(nodeid)
        return r.outcome if r else None

    def passing(self) -> set[str]:
        return {n for n, r in self.results.items() if r.outcome.ok}

    def durations(self) -> dict[str, float]:
        return {n: r.duration for n, r in self.results.items()}

    def startup(self) -> float:
        """What the run spent outside its tests (interpreter, imports, collection)."""
        return max(0.0, self.duration - sum(r.duration for r in self.results.values()))

    def misbehaving(self) -> dict[str, str]:
        """Tests that had side effects in this run -> the first one noted."""
        return {n: r.side_effects[0] for n, r in self.results.items() if r.side_effects}

    def all_errored(self) -> bool:
        return bool(self.results) and all(r.outcome is Outcome.error for r in self.results.values())


class Baseline(Record):
    """The suite at the pinned commit, run K times."""

    repo: str
    commit: str
    image: str
    runs: int
    passing: tuple[str, ...]  # passed in every run
    flaky: tuple[str, ...]  # outcomes disagreed between runs
    outcomes: dict[str, Outcome]  # outcome of the first run
    durations: dict[str, float]  # mean duration per test
    seconds: float
    # tests with side effects in any run (see TestResult.side_effects) -> what they did;
    # neither passing nor flaky, so no task lists them; also the tests a run died in or
    # that ran past their time limit (see TestRun.died_in), set aside the same way
    misbehaving: dict[str, str] = Field(default_factory=dict)
    # time limits are derived from these (see repogym.limits)
    setup_max: float = 0.0  # the longest setup + teardown of any test
    startup: float = 0.0  # the longest time a run spent outside the tests (start, collection)
    # runner functions and plugins changed at the clean state by the environment itself
    # (a pytest plugin of the image patching pytest): not tamper when a graded run shows them
    runner_changes: tuple[str, ...] = ()
    # work-tree modules the runner loads as plugins (``-p`` in the configuration, a
    # conftest's ``pytest_plugins``): a graded patch may not change them
    plugin_files: tuple[str, ...] = ()

    def stable_passing(self) -> set[str]:
        return set(self.passing) - set(self.flaky) - set(self.misbehaving)


class CoverageMap(Record):
    """Which tests execute which lines: file (repo-relative) -> line -> test node ids.

    Only lines some test executes are present; lines run at import or collection time
    belong to no test.
    """

    files: dict[str, dict[int, tuple[str, ...]]]
    import_lines: dict[str, tuple[int, ...]] = Field(default_factory=dict)  # run outside tests

    def tests_for(self, changed: dict[str, list[int]]) -> set[str] | None:
        """The tests that execute any of the changed lines (file -> old-side line numbers).

        None means "every test": a changed line runs at import time (module level), so any
        test importing the module may see it. An empty set means no test runs the change.
        """
        tests: set[str] = set()
        for path, lines in changed.items():
            by_line = self.files.get(path, {})
            for line in lines:
                if line in by_line:
                    tests.update(by_line[line])
                elif line in self.import_lines.get(path, ()):
                    return None
        return tests

    def tests_in_files(self, paths: Iterable[str]) -> set[str] | None:
        """The tests that execute any line of these files; None when a file has no line
        any test runs (new, or only run at import: every test may depend on it)."""
        tests: set[str] = set()
        for path in paths:
            by_line = self.files.get(path)
            if not by_line:
                return None
            for names in by_line.values():
                tests.update(names)
        return tests

    def lines_covered_by(self, tests: set[str]) -> dict[str, set[int]]:
        """Per file, the lines at least one of ``tests`` executes."""
        out: dict[str, set[int]] = {}
        for path, lines in self.files.items():
            hit = {ln for ln, ts in lines.items() if tests.intersection(ts)}
            if hit:
                out[path] = hit
        return out


class CandidateKind(str, Enum):
    synthetic = "synthetic"
    mined = "mined"


class Candidate(Record):
    """A proposed task before the judge has seen it.

    ``bug_patch`` turns ``base_commit`` into the broken state; ``gold_patch`` turns the
    broken state back into a working one; ``test_patch`` (mined tasks) adds the tests.
    ``language`` is the toolchain's (:attr:`repogym.toolchains.base.Toolchain.language`):
    grading, statements and exports ask that toolchain.
    """

    kind: CandidateKind
    repo: str
    language: str = "python"
    base_commit: str
    bug_patch: str
    gold_patch: str
    test_patch: str = ""
    statement: str = ""
    generator: str
    mutator: str = ""
    files: tuple[str, ...] = ()
    lines: tuple[int, ...] = ()
    provenance: dict[str, str] = Field(default_factory=dict)

    @property
    def instance_id(self) -> str:
        return make_instance_id(self.repo, self.base_commit, self.kind.value,
                                self.bug_patch, self.gold_patch, self.test_patch)


def make_instance_id(repo: str, commit: str, kind: str, *patches: str) -> str:
    """``<repo>.<commit8>.<kind>.<hash8(patches)>``: stable across reruns, so reruns dedup."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", repo)
    return f"{safe}.{commit[:8]}.{kind}.{short_hash(*patches)}"


class Status(str, Enum):
    accept = "accept"
    reject = "reject"
    review = "review"
    infra_error = "infra_error"


class Verdict(Record):
    """The judge's decision on one candidate, with the evidence behind it."""

    instance_id: str
    status: Status
    reason: str = ""  # machine-readable reason code, e.g. "no_op:no_failing_test"
    detail: str = ""  # human-readable explanation
    fail_to_pass: tuple[str, ...] = ()
    pass_to_pass: tuple[str, ...] = ()
    evidence: dict[str, str] = Field(default_factory=dict)
    seconds: float = 0.0
    # how long grading may let each listed test and the whole run take (from the baseline)
    time_limits: TimeLimits | None = None
    # test-runner changes the environment itself makes (not tamper when grading sees them)
    runner_changes: tuple[str, ...] = ()
    # runner plugin modules of the work tree (a grading patch may not change them)
    protected_files: tuple[str, ...] = ()


class Judged(Record):
    """A candidate together with its verdict and final statement."""

    candidate: Candidate
    verdict: Verdict
    statement: str
    image: str
    created_at: datetime = Field(default_factory=utcnow)
