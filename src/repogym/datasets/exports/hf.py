"""``hf``: a Hugging Face ``datasets`` folder (``Dataset.save_to_disk``) with explicit Features.

``OUT`` itself is the saved dataset: ``datasets.load_from_disk(OUT)`` gives one row per task
(sorted by ``instance_id``) with every column of the dataset's
:data:`~repogym.schemas.arrow.TASK_SCHEMA`, typed by :func:`features` (``provenance`` and
``evidence`` stay JSON strings). Push it with ``Dataset.push_to_hub`` where a hub is reachable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from repogym.datasets.exports.base import EXPORTERS, Exporter, ExportOptions
from repogym.errors import RepogymError
from repogym.schemas.arrow import TaskRow

_STRING_COLUMNS = ("instance_id", "repo", "language", "base_commit", "image", "bug_patch",
                   "patch",
                   "test_patch", "problem_statement", "kind", "generator", "mutator",
                   "provenance", "status", "reason", "detail", "evidence", "pipeline_version")


def _datasets() -> Any:
    try:
        import datasets
    except ImportError as exc:
        raise RepogymError("the hf export needs the `datasets` package "
                           "(pip install 'repogym[hf]')") from exc
    return datasets


def features() -> Any:
    """The explicit ``datasets.Features`` of the export (one per TASK_SCHEMA column)."""
    ds = _datasets()
    seq = getattr(ds, "List", None) or ds.Sequence
    feats = {name: ds.Value("string") for name in _STRING_COLUMNS}
    feats.update({
        "FAIL_TO_PASS": seq(ds.Value("string")), "PASS_TO_PASS": seq(ds.Value("string")),
        "files": seq(ds.Value("string")), "lines": seq(ds.Value("int32")),
        "judge_seconds": ds.Value("float64"), "confidence": ds.Value("float64"),
        "created_at": ds.Value("timestamp[us, tz=UTC]"),
        "schema_version": ds.Value("int16"),
    })
    from repogym.schemas.arrow import TASK_SCHEMA

    return ds.Features({name: feats[name] for name in TASK_SCHEMA.names})


@EXPORTERS.register("hf")
class HfExporter(Exporter):
    """A ``datasets.Dataset`` saved to disk, typed column by column."""

    description = "Hugging Face datasets folder (save_to_disk) with explicit Features"

    def write(self, rows: Sequence[TaskRow], dest: Path, options: ExportOptions) -> None:
        """Save the dataset into ``dest``."""
        ds = _datasets()
        data = ds.Dataset.from_list([r.to_arrow_row() for r in rows], features=features())
        bars = ds.utils.logging  # no progress bar on the caller's terminal; restored after
        was_enabled = bars.is_progress_bar_enabled()
        bars.disable_progress_bar()
        try:
            data.save_to_disk(str(dest))
        finally:
            if was_enabled:
                bars.enable_progress_bar()
