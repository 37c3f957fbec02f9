"""Where each repository of a corpus stands, read from the state and the dataset alone.

``repogym corpus status`` prints it: no clone, no engine, no Prefect. A repository is listed
when it is in the corpus file or has a state file (one removed from the corpus keeps its
history and its rows).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Iterable

from repogym.corpus.state import StateStore
from repogym.datasets.store import DatasetStore
from repogym.schemas.records import Record


class RepoStanding(Record):
    """One repository's standing.

    Attributes:
        in_corpus: listed in the corpus file (False: only its state and rows remain).
        runs: runs recorded in its state (the last few are kept).
        last_run: when the last run ended; None when it never ran.
        last_error: the last run's error; None when it succeeded (or never ran).
        last_commit / last_mined_commit: from the last successful run.
        judged: candidates judged over all runs.
        tasks / rejected / infra: its rows in each table of the dataset (``infra``: judged
            again by the next run).
    """

    repo: str
    in_corpus: bool
    runs: int = 0
    last_run: datetime | None = None
    last_error: str | None = None
    last_commit: str | None = None
    last_mined_commit: str | None = None
    judged: int = 0
    tasks: int = 0
    rejected: int = 0
    infra: int = 0


def corpus_standing(names: Iterable[str], out: Path) -> list[RepoStanding]:
    """The standing of the corpus' repositories (``names``, in order) and of any other
    repository with a state under ``out``.

    Raises:
        DatasetError: a state file or a part file is unreadable.
    """
    states, store = StateStore(out), DatasetStore(out)
    listed = list(dict.fromkeys(names))
    counts = {t: store.counts(t).repos for t in ("tasks", "rejected", "infra")}
    rows = []
    for repo in listed + [r for r in states.repos() if r not in listed]:
        state = states.load(repo)
        last = state.runs[-1] if state.runs else None
        rows.append(RepoStanding(
            repo=repo, in_corpus=repo in listed, runs=len(state.runs),
            last_run=last.at if last else None, last_error=last.error if last else None,
            last_commit=state.last_commit, last_mined_commit=state.last_mined_commit,
            judged=len(state.judged_ids), tasks=counts["tasks"].get(repo, 0),
            rejected=counts["rejected"].get(repo, 0), infra=counts["infra"].get(repo, 0)))
    return rows
