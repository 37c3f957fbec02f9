"""The exporter contract and its registry.

An exporter turns accepted dataset rows (:class:`~repogym.schemas.arrow.TaskRow`) into the
files one consumer loads (a trainer, a harness, a hub). It reads rows only, never the
pipeline's internals, and writes into an empty directory it is given;
:func:`repogym.datasets.exports.writer.export_rows` owns everything around that (the target
directory, atomic replacement, idempotency, ``export.json``).

    @EXPORTERS.register("myformat")
    class MyExporter(Exporter):
        description = "one line for --help"
        version = "1"          # bump when the files it writes change

        def write(self, rows, dest, options): ...

Every registered exporter passes the conformance suite in ``tests/exports``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from pathlib import Path
from typing import ClassVar, Sequence

from pydantic import Field

from repogym.registry import Registry
from repogym.schemas.arrow import TaskRow
from repogym.schemas.records import Record

EXPORT_MANIFEST = "export.json"


class ExportOptions(Record):
    """Knobs shared by the exporters (each uses the ones that apply to it)."""

    test_timeout: float = Field(600.0, gt=0)  # one grading test run (harbor, swebench)
    agent_timeout: float = Field(3600.0, gt=0)  # harbor: the solver's time
    cpus: float = Field(1.0, gt=0)  # harbor: environment resources
    memory_mb: int = Field(2048, gt=0)
    storage_mb: int = Field(10240, gt=0)


class Exporter(ABC):
    """Writes one export format. Registered by name in :data:`EXPORTERS`."""

    name: ClassVar[str]  # set by the registry
    description: ClassVar[str] = ""
    version: ClassVar[str] = "1"

    @abstractmethod
    def write(self, rows: Sequence[TaskRow], dest: Path, options: ExportOptions) -> None:
        """Write ``rows`` (sorted by ``instance_id``, at least one) into ``dest``.

        Args:
            rows: accepted tasks.
            dest: an existing, empty directory; everything written goes under it. It is
                renamed into place only when this returns, so a failure leaves no export.
            options: shared knobs.

        Raises:
            InputError: a row cannot be exported in this format (the message says which
                and why).
        """


EXPORTERS: Registry[type[Exporter]] = Registry("export format")


class ExportManifest(Record):
    """``export.json``: what an export directory holds and how it was made.

    ``fingerprint`` is a hash of the format, its version and every exported row; an
    export of the same rows in the same format is recognised by it and not redone.
    """

    format: str
    exporter_version: str
    fingerprint: str
    tasks: int
    instance_ids: tuple[str, ...]
    source: str
    created_at: datetime
    pipeline_version: str


class ExportReport(Record):
    """What one export did: where, how many tasks, bytes and files, seconds, and whether
    the directory already held this very export (``unchanged``: nothing was written)."""

    format: str
    out: Path
    tasks: int
    files: int
    bytes: int
    seconds: float
    unchanged: bool = False
