"""Exports trainers and harnesses load: ``repogym export --format FORMAT --out DIR``.

Formats, each a plug-in registered by name in :data:`EXPORTERS`:

=========  ===================================================================================
name       what OUT holds
=========  ===================================================================================
harbor     one Harbor task directory per task (:mod:`.harbor`)
hf         a Hugging Face ``datasets`` folder with explicit Features (:mod:`.hf`)
swebench   ``instances.jsonl`` with SWE-bench's fields + ``eval_script`` (:mod:`.swebench`)
verl       ``train.parquet`` for verl + the reward function :mod:`.verl_reward`
=========  ===================================================================================

Every export also writes ``OUT/export.json``; re-exporting the same rows to the same
directory is a no-op, anything else there is refused unless ``overwrite`` (see
:mod:`.writer`). Exporters read accepted dataset rows only. The harbor and swebench formats
grade inside their own containers with :mod:`.container_grader`, which follows the rules of
:mod:`repogym.datasets.verify` for Python and JavaScript tasks alike (a JavaScript task
carries a grading plan read at export time in a container of its environment image:
:mod:`.plans`). verl and hf carry every row with its ``language``.
"""

from repogym.datasets.exports import harbor, hf, swebench, verl  # noqa: F401  (registration)
from repogym.datasets.exports.base import (
    EXPORT_MANIFEST,
    EXPORTERS,
    Exporter,
    ExportManifest,
    ExportOptions,
    ExportReport,
)
from repogym.datasets.exports.writer import export_dataset, export_rows, load_rows, read_manifest

__all__ = [
    "EXPORTERS",
    "EXPORT_MANIFEST",
    "ExportManifest",
    "ExportOptions",
    "ExportReport",
    "Exporter",
    "export_dataset",
    "export_rows",
    "load_rows",
    "read_manifest",
]
