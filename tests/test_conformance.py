"""The toolchain conformance suite (:mod:`repogym.conformance`) for every language, each on a
real repository: detected, built, a baseline, a candidate accepted, and through ``verify``
the gold patch 1, the empty patch 0 and every reward hack of the language 0."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from repogym.config import Settings
from repogym.conformance import check_toolchain
from repogym.toolchains import TOOLCHAINS

REPOS = Path(__file__).resolve().parents[2] / "shared" / "repos"
# one real repository per language, with a quick suite
SUBJECTS = {"python": "un33k+python-slugify", "javascript": "jshttp+mime-types",
            "go": "google+uuid", "rust": "rust-lang+glob", "java": "apache+commons-cli"}


def test_every_registered_language_has_a_subject() -> None:
    assert {TOOLCHAINS.get(n).language for n in TOOLCHAINS} == set(SUBJECTS)
    (runs,) = [m for m in test_toolchain_conforms.pytestmark if m.name == "parametrize"]
    assert sorted(runs.args[1]) == sorted(SUBJECTS)


@pytest.mark.docker
@pytest.mark.slow
# the longest first: under pytest-xdist each is a unit of work of its own (tests/conftest.py)
@pytest.mark.parametrize("language", ["java", "rust", "go", "python", "javascript"])
def test_toolchain_conforms(language: str, tmp_path: Path, base_image: str) -> None:
    source = tmp_path / SUBJECTS[language]
    subprocess.run(["git", "clone", "-q", str(REPOS / f"{SUBJECTS[language]}.bundle"),
                    str(source)], check=True)
    settings = Settings(out=tmp_path / "out", base_image=base_image, max_candidates=3,
                        max_combined=0, baseline_runs=2, oracle_runs=1)
    report = check_toolchain(source, language, settings)
    assert report.ok, report.problems
    assert report.accepted >= 1 and report.gold == 1.0 and report.empty == 0.0
    assert report.probes and set(report.probes.values()) == {0.0}
