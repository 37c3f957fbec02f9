"""The toolchain conformance suite: what every language must do, checked on a real
repository of that language through the same pipeline a user runs.

:func:`check_toolchain` takes a git repository and, in order:

1. **detects** it (the expected language's toolchain must claim it);
2. **builds** its environment and records the **baseline** (some tests pass, none flaky);
3. **generates and judges** synthetic candidates until at least one is **accepted**;
4. grades the first accepted task with :func:`repogym.verify` -- the path trainers use:
   the **gold patch** must score 1, the **empty patch** 0, and **every probe** (known reward
   hack) of the language 0.

It returns a :class:`ConformanceReport` whose ``problems`` list each failed expectation (empty:
the toolchain conforms). The tests run it for every language (``tests/test_conformance.py``);
``repogym toolchain check PATH`` runs it on any repository.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from repogym.config import Settings
from repogym.datasets import DatasetStore
from repogym.datasets.verify import spec_of, verify
from repogym.judges.probe_sets import ProbeSet, verifier_version
from repogym.judges.probes import context_in, probe_patches
from repogym.pipeline import prepare, provider_for, run_repo
from repogym.schemas.arrow import TaskRow
from repogym.schemas.records import RepoSpec


@dataclass
class ConformanceReport:
    """What :func:`check_toolchain` found; ``ok`` when nothing failed."""

    repo: str
    language: str = ""
    baseline_passing: int = 0
    baseline_flaky: int = 0
    candidates: int = 0
    accepted: int = 0
    task: str = ""
    gold: float | None = None
    empty: float | None = None
    probes: dict[str, float] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def check_toolchain(source: Path, language: str, settings: Settings) -> ConformanceReport:
    """Run the conformance checks on the repository at ``source`` (see the module doc).

    ``settings`` choose the provider, the output folder and how many candidates are tried
    (``max_candidates``); generation is the procedural generator only.

    Raises:
        InputError: the repository cannot be read.
        InfraError: the sandbox or an image build failed (not a finding on the toolchain).
    """
    settings = conformance_settings(settings)
    report = ConformanceReport(repo=str(source))
    prepared = prepare(RepoSpec(source=str(source)), settings)
    report.language = prepared.toolchain.language
    if report.language != language:
        report.problems.append(f"detected as {report.language}, not {language}")
        return report
    summary = run_repo(RepoSpec(source=str(source)), settings)
    report.baseline_passing, report.baseline_flaky = (summary.baseline_passing,
                                                      summary.baseline_flaky)
    report.candidates, report.accepted = summary.candidates, summary.accepted
    if not summary.baseline_passing:
        report.problems.append("no test passes at the baseline")
    if summary.baseline_flaky:
        report.problems.append(f"{summary.baseline_flaky} flaky test(s) at the baseline")
    tasks = [r for r in DatasetStore(settings.out).rows("tasks") if r.language == language]
    if not tasks:
        report.problems.append(f"no candidate accepted of {summary.candidates}: "
                               f"{summary.rejected}")
        return report
    _grade(report, tasks, settings)
    return report


def conformance_settings(settings: Settings) -> Settings:
    """The settings a conformance run uses: procedural candidates only, probes on."""
    return settings.model_copy(update={"generators": ("procedural",),
                                       "probes": max(settings.probes, 1)})


def _grade(report: ConformanceReport, tasks: list[TaskRow], settings: Settings) -> None:
    """Gold 1, empty 0 and every probe 0, through :func:`verify` (the grading trainers use).
    The probes are read from the probe set the judge graded on this repository's first
    accepted task (the same path, :func:`repogym.grading.grade_in`); graded here when none."""
    known = _probe_set(tasks, settings)
    task = next((t for t in tasks if known and t.instance_id == known.task), tasks[0])
    report.task = task.instance_id
    report.gold = verify(task, task.patch, provider=settings.provider, settings=settings).reward
    report.empty = verify(task, "", provider=settings.provider, settings=settings).reward
    if report.gold != 1.0:
        report.problems.append(f"{task.instance_id}: the gold patch scores {report.gold}")
    if report.empty != 0.0:
        report.problems.append(f"{task.instance_id}: the empty patch scores {report.empty}")
    if known is not None:
        report.probes = dict(known.scores)
    else:
        for name, patch in _probe_patches(task, settings).items():
            report.probes[name] = verify(task, patch, provider=settings.provider,
                                         settings=settings).reward
    for name, reward in sorted(report.probes.items()):
        if reward != 0.0:
            report.problems.append(f"{task.instance_id}: the reward hack {name} scores {reward}")
    if not report.probes:
        report.problems.append(f"no probe applies to {task.instance_id}")


def _probe_set(tasks: list[TaskRow], settings: Settings) -> ProbeSet | None:
    """The judge's probe set of this verifier on one of ``tasks``, if it made one."""
    ids = {t.instance_id for t in tasks}
    for path in sorted((settings.cache_dir / "probes").glob("*.json")):
        try:
            found = ProbeSet.model_validate_json(path.read_text())
        except ValueError:
            continue
        if found.task in ids and found.verifier == verifier_version() and found.steady:
            return found
    return None


def _probe_patches(task: TaskRow, settings: Settings) -> dict[str, str]:
    provider = provider_for(settings)
    spec = spec_of(task)
    with provider.open(provider.env_for(task.image)) as sandbox:
        return probe_patches(context_in(sandbox, spec, task.files or ()))


__all__ = ["ConformanceReport", "check_toolchain"]
