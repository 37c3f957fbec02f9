"""``verl``: a Parquet file of RL prompts in verl's data format, graded by :mod:`.verl_reward`.

``OUT/train.parquet``, one row per task (sorted by ``instance_id``), schema :data:`VERL_SCHEMA`:

=============  ==============================================================================
column         value
=============  ==============================================================================
data_source    ``"repogym"``
prompt         chat messages ``[{role: system, content}, {role: user, content}]``: how to
               answer (a unified diff in a fenced ``diff`` block; the system message names the
               task's language), then the problem statement
ability        ``"swe"``
reward_model   ``{style: "rule", ground_truth: <JSON>}``; the JSON is the task's
               :class:`~repogym.grading.GradingSpec` (image, base_commit, bug_patch,
               test_patch, FAIL_TO_PASS, PASS_TO_PASS), so grading needs no dataset
extra_info     ``{split, index, instance_id, repo, language, image, base_commit, kind}``
=============  ==============================================================================

Trainers point their custom reward function at
``repogym.datasets.exports.verl_reward.compute_score`` (verl:
``custom_reward_function.path=<that file> custom_reward_function.name=compute_score``), which
grades the answer's diff with :func:`repogym.datasets.verify.verify` in a sandbox of
``image``, with the toolchain of the task's language (the ground truth's ``language``:
every language alike). For verl's batch reward manager
(``reward_model.reward_manager=batch``) name ``compute_score_batch`` instead: a batch is
graded several at a time in warm sandboxes of one pool, and an item whose sandbox broke
scores NaN with ``infra_error`` set, not 0. The prompt does not contain the repository: a single-turn policy answers from the
statement alone; an agent loop can open a sandbox on ``extra_info.image`` for tools.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from repogym.datasets.exports.base import EXPORTERS, Exporter, ExportOptions
from repogym.schemas.arrow import TaskRow

DATA_FILE = "train.parquet"
DATA_SOURCE = "repogym"
ABILITY = "swe"

SYSTEM_PROMPT = (
    "You fix bugs in {language} repositories. Reply with the fix as a unified diff in git "
    "format (`diff --git a/<path> b/<path>` headers, paths relative to the repository "
    "root), in one fenced ```diff block. Do not change the tests: changes to test files "
    "and test configuration are discarded when the fix is graded.")
LANGUAGE_NAMES = {"python": "Python", "javascript": "JavaScript/TypeScript"}

USER_PROMPT = """Repository: {repo}

{statement}"""


def _schema() -> Any:
    import pyarrow as pa

    s = pa.string()
    return pa.schema([
        pa.field("data_source", s, nullable=False),
        pa.field("prompt", pa.list_(pa.struct([("role", s), ("content", s)])), nullable=False),
        pa.field("ability", s, nullable=False),
        pa.field("reward_model", pa.struct([("style", s), ("ground_truth", s)]),
                 nullable=False),
        pa.field("extra_info", pa.struct([
            ("split", s), ("index", pa.int64()), ("instance_id", s), ("repo", s),
            ("language", s), ("image", s), ("base_commit", s), ("kind", s)]), nullable=False),
    ])


def system_prompt(language: str) -> str:
    """How to answer, for a task in ``language``."""
    return SYSTEM_PROMPT.format(language=LANGUAGE_NAMES.get(language, language))


def verl_row(row: TaskRow, index: int) -> dict[str, Any]:
    """One verl record of a task."""
    from repogym.datasets.verify import spec_of

    return {
        "data_source": DATA_SOURCE,
        "prompt": [{"role": "system", "content": system_prompt(row.language)},
                   {"role": "user", "content": USER_PROMPT.format(
                       repo=row.repo, statement=row.problem_statement.strip())}],
        "ability": ABILITY,
        "reward_model": {"style": "rule", "ground_truth": spec_of(row).model_dump_json()},
        "extra_info": {"split": "train", "index": index, "instance_id": row.instance_id,
                       "repo": row.repo, "language": row.language, "image": row.image, "base_commit": row.base_commit,
                       "kind": row.kind.value},
    }


@EXPORTERS.register("verl")
class VerlExporter(Exporter):
    """verl RL data (Parquet) with a rule reward that calls ``verify``."""

    description = "verl Parquet (prompt, reward_model, extra_info) + verl_reward.compute_score"
    version = "2"

    def write(self, rows: Sequence[TaskRow], dest: Path, options: ExportOptions) -> None:
        """Write ``train.parquet``."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist([verl_row(r, i) for i, r in enumerate(rows)],
                                     schema=_schema())
        pq.write_table(table, dest / DATA_FILE)
