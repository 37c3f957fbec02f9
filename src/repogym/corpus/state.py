"""Incremental state of a corpus: what each repository's earlier runs already did.

Layout, under the data folder (``settings.out``)::

    <out>/state/<repo>.json                       RepoState: one per repository
    <out>/state/baselines/<repo>-<key16>.json     cached Baseline, keyed by image + commit

``<repo>`` is the checkout name (``owner__repo`` or the folder name; already safe in paths).
Every file is written to a ``.tmp-*`` sibling, fsynced, then renamed into place, so a reader
sees the old file or the new one, never half of one.

What the state is for (see :mod:`repogym.flows.corpus_flow`):

* ``last_commit`` / ``image``: when a rerun finds the same commit and the same
  content-addressed image tag, the image is reused (the provider sees the tag exists) and the
  baseline is read from the cache instead of running the suite K times again.
* ``judged_ids``: every candidate id that has a verdict on the task (accept, reject,
  review). The dataset store is the authority for "already judged" (the pipeline's
  :func:`~repogym.pipeline.unseen` reads it); the state keeps the same ids per repository so
  a run's new work can be read off the state alone.
* ``last_mined_commit`` / ``last_mined_selection``: the tip from which the mined generator
  last walked the whole selection (its key: range, since, last), with every candidate it
  found given a verdict. The next run with the same selection walks only
  ``last_mined_commit..HEAD`` (a full walk when that commit is no longer an ancestor). A
  walk cut short by the ``max_mined`` budget, or with a mined candidate left without a
  verdict (``infra_error``), keeps the earlier value: the next run walks those commits again
  (the judged ones are skipped as seen), so nothing is lost.
* ``images``: each environment the repository's tasks run in (ref -> identity, e.g. the
  image id) as it was when they were last judged or re-verified. An environment rebuilt
  under the same ref (newer dependencies) has another identity: the corpus flow re-verifies
  the tasks in it (:func:`repogym.flows.corpus_flow.reverify_stage`).
* ``runs``: the last few runs, with the evidence of what was reused.

Baseline cache keys include the image tag (which hashes the commit, the base image and the
install recipe) and the image's identity (a rebuild under the same tag records anew), the
commit, the number of runs and the timeout: any of them changing
records a new baseline. An ``infra_error`` verdict is not a verdict on the task and is
never recorded as judged, so the next run judges that candidate again.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Iterable

from pydantic import Field, ValidationError

from repogym import baseline
from repogym.errors import DatasetError
from repogym.files import atomic_write
from repogym.schemas.records import Baseline, Record, short_hash, utcnow

STATE_DIR = "state"
BASELINES_DIR = "baselines"
KEEP_RUNS = 20  # run records kept per repository


class RunRecord(Record):
    """What one run did for one repository, with the evidence of reuse."""

    at: datetime = Field(default_factory=utcnow)
    commit: str = ""
    image: str = ""
    image_reused: bool = False
    baseline_cached: bool = False
    candidates: int = 0
    judged: int = 0
    accepted: int = 0
    mined_scanned: int | None = None  # commits the mined generator walked (None: no mining)
    error: str | None = None


class RepoState(Record):
    """Everything later runs need to know about a repository's earlier ones."""

    repo: str
    last_commit: str | None = None
    last_mined_commit: str | None = None
    last_mined_selection: str | None = None
    image: str | None = None
    judged_ids: tuple[str, ...] = ()
    runs: tuple[RunRecord, ...] = ()
    # env ref -> its identity (an image id) when the repository's tasks in it were last
    # judged or re-verified: a rebuild under the same ref is found by comparing the two
    images: dict[str, str] = {}

    def with_run(self, run: RunRecord, judged: Iterable[str] = (),
                 mined_up_to: str | None = None, mined_selection: str | None = None,
                 images: dict[str, str] | None = None) -> "RepoState":
        """This state after ``run``: a failed run (``run.error``) changes only the history.

        ``mined_up_to`` (with the key of the selection walked, ``mined_selection``) replaces
        the last mined commit; ``None`` keeps the earlier one (module docstring).
        ``images`` replaces the recorded environments (None: kept).
        """
        runs = (*self.runs, run)[-KEEP_RUNS:]
        if run.error is not None:
            return self.model_copy(update={"runs": runs})
        update: dict[str, object] = {"last_commit": run.commit, "image": run.image, "runs": runs,
                  "judged_ids": tuple(sorted(set(self.judged_ids) | set(judged)))}
        if mined_up_to is not None:
            update |= {"last_mined_commit": mined_up_to, "last_mined_selection": mined_selection}
        if images is not None:
            update["images"] = dict(images)
        return self.model_copy(update=update)


        raise


class StateStore:
    """Per-repository state and cached baselines under ``<out>/state`` (module docstring)."""

    def __init__(self, out: Path) -> None:
        self.root = Path(out) / STATE_DIR

    def path(self, repo: str) -> Path:
        if not repo or "/" in repo or repo.startswith("."):
            raise ValueError(f"not a repository name usable as a file name: {repo!r}")
        return self.root / f"{repo}.json"

    def load(self, repo: str) -> RepoState:
        """The state of ``repo``; a fresh one if it never ran.

        Raises:
            DatasetError: the state file exists but is not valid (the message names it).
        """
        path = self.path(repo)
        try:
            return RepoState.model_validate_json(path.read_text())
        except FileNotFoundError:
            return RepoState(repo=repo)
        except (ValidationError, ValueError) as exc:
            raise DatasetError(f"{path}: not a valid repogym repository state ({exc}); "
                               "delete it to start this repository afresh") from exc

    def save(self, state: RepoState) -> None:
        """Write the state atomically."""
        atomic_write(self.path(state.repo), state.model_dump_json(indent=2))

    def repos(self) -> list[str]:
        """Repositories with a state file, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(p.stem for p in self.root.glob("*.json") if not p.name.startswith("."))

    # -- baselines -----------------------------------------------------------------------

    @staticmethod
    def baseline_key(image: str, commit: str, runs: int, timeout: float,
                     identity: str = "") -> str:
        """The cache key of a baseline: everything its result depends on (the way it is
        recorded included, see :func:`repogym.baseline.baseline_format`); ``identity`` is
        the image's as it is now (:meth:`SandboxProvider.identity`)."""
        return short_hash(image, commit, str(runs), repr(float(timeout)),
                          baseline.baseline_format(), *([identity] if identity else []), n=16)

    def baseline_path(self, repo: str, key: str) -> Path:
        return self.root / BASELINES_DIR / f"{repo}-{key}.json"

    def cached_baseline(self, repo: str, key: str) -> Baseline | None:
        """The baseline recorded under ``key``, or None (a corrupt file counts as missing)."""
        path = self.baseline_path(repo, key)
        try:
            return Baseline.model_validate_json(path.read_text())
        except FileNotFoundError:
            return None
        except (ValidationError, ValueError, json.JSONDecodeError):
            return None  # re-recorded by the caller, which overwrites the bad file

    def put_baseline(self, repo: str, key: str, baseline: Baseline) -> None:
        atomic_write(self.baseline_path(repo, key), baseline.model_dump_json())
