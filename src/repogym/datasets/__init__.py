"""The dataset: accepted tasks and rejected candidates as versioned, partitioned Parquet.

See :mod:`repogym.datasets.store` for the layout and guarantees, and
:mod:`repogym.schemas.arrow` for the columns.
"""

from repogym.datasets.store import (
    TABLES,
    DatasetStore,
    Manifest,
    TableCounts,
    TableName,
    WriteResult,
    is_part_file,
    partition_dirname,
    read_part,
    table_for,
)

__all__ = [
    "TABLES",
    "DatasetStore",
    "Manifest",
    "TableCounts",
    "TableName",
    "WriteResult",
    "is_part_file",
    "partition_dirname",
    "read_part",
    "table_for",
]
