"""The dataset: accepted tasks and rejected candidates as versioned, partitioned Parquet.

See :mod:`repogym.datasets.store` for the layout and guarantees, and
:mod:`repogym.schemas.arrow` for the columns.
"""

from repogym.datasets.snapshots import (
    SnapshotFile,
    SnapshotManifest,
    content_hash,
    create_snapshot,
    list_snapshots,
    load_snapshot,
    read_snapshot_rows,
    row_hash,
    verify_snapshot,
)
from repogym.datasets.store import (
    TABLES,
    CompactedPartition,
    CompactResult,
    DatasetStore,
    Manifest,
    PartFileGone,
    TableCounts,
    TableName,
    WriteResult,
    is_part_file,
    partition_dirname,
    read_part,
    rows_of,
    table_for,
)

__all__ = [
    "TABLES",
    "CompactResult",
    "CompactedPartition",
    "DatasetStore",
    "Manifest",
    "PartFileGone",
    "SnapshotFile",
    "SnapshotManifest",
    "TableCounts",
    "TableName",
    "WriteResult",
    "content_hash",
    "create_snapshot",
    "is_part_file",
    "list_snapshots",
    "load_snapshot",
    "partition_dirname",
    "read_part",
    "read_snapshot_rows",
    "row_hash",
    "rows_of",
    "table_for",
    "verify_snapshot",
]
