"""``swebench``: SWE-bench instances (JSONL), the per-task images the official harness runs
them in, and a self-contained ``eval_script`` that grades with repogym's rules.

Layout of ``OUT/``::

    instances.jsonl                 one SWE-bench instance per line, sorted by instance_id
    build_images.sh                 builds every task image below (``docker build -t``)
    images/<instance_id>/           the Docker build context of the task's image:
        Dockerfile                  FROM the environment image, the broken state committed
                                    without history (harbor's, see
                                    :func:`repogym.datasets.exports.harbor.environment_files`),
                                    then ``/testbed`` -> ``/repo``, ``WORKDIR /testbed``,
                                    ``STOPSIGNAL SIGKILL``
        prepare.sh, bug.patch       used at build time only

Instance fields:

========================  =====================================================================
field                     value
========================  =====================================================================
instance_id               the task's id
repo                      ``owner/name`` (the dataset's ``owner__name``; as is without ``__``)
base_commit               the commit the broken state starts from
patch                     the gold fix, a diff against the broken state
test_patch                diff adding the tests (mined tasks; "" for synthetic ones)
problem_statement         the statement shown to the solver
hints_text                "" (SWE-bench's field; repogym has no hints)
FAIL_TO_PASS              JSON-encoded list of test ids, as SWE-bench stores them
PASS_TO_PASS              JSON-encoded list of test ids
version                   the environment image's tag (one environment per version)
created_at                ISO 8601 time of the verdict
environment_setup_commit  ``base_commit`` (the environment is named by ``image_name``)
image                     the task image ``build_images.sh`` builds:
                          ``repogym-task/<repo>:<hash of its build context>``, labelled
                          ``repogym=task`` and ``repogym.task=<instance_id>``; ``/testbed``
                          holds the broken state (SWE-bench 5.x runs ``image``)
log_parser                SWE-bench's parser registry name: ``parse_log_jest_json``
                          (Python, JavaScript and Java: ``[PASSED] <id>`` / ``[FAILED] <id>``
                          lines, which keep ids with spaces whole -- pytest's own
                          ``parse_log_pytest`` cuts ``test_x[Donald E. Knuth]`` at its first
                          space, and the gold patch goes unresolved), ``parse_log_gotest`` (Go:
                          ``--- PASS: <id> (0.00s)`` / ``--- FAIL: <id> (0.00s)`` lines),
                          ``parse_log_cargo`` (Rust: ``test <id> ... ok`` /
                          ``test <id> ... FAILED`` lines)
language                  the task's language (``python``, ``javascript``, ``go``,
                          ``rust``, ``java``)
eval_type                 ``pass_and_fail``
image_name                the environment image (repository at ``base_commit``, clean): the
                          ``eval_script`` also grades in a fresh container of it
eval_script               bash, see below
bug_patch, kind           repogym's own: the broken state is ``base_commit`` + ``bug_patch``
========================  =====================================================================

``eval_script`` runs as root in a **fresh** container of ``image`` or of ``image_name``
(network off is fine), with the candidate's diff at ``$REPOGYM_PATCH`` (default
``/tmp/patch.diff``, where SWE-bench harnesses copy it). It unpacks an embedded bundle
(prepare script, grader, spec, bug patch; for Python the report plugin and pytest launcher,
for Go and Rust the reader of their runs, for Java the module of a Maven run, for
JavaScript the spec's grading plan holds the reporter files); in ``image_name`` it first
builds the broken state
(:data:`~repogym.datasets.exports.grading.PREPARE_SCRIPT`; a task image already holds it).
The grader puts ``/repo`` back to the broken state itself (so a harness that already
applied the patch in ``/testbed`` changes nothing), applies the diff, grades it with
repogym's rules and prints ``[PASSED]``/``[FAILED] <test>`` lines (Python, JavaScript and
Java; Go: ``--- PASS``/``--- FAIL: <test> (0.00s)``, Rust:
``test <test> ... ok``/``... FAILED``; from the trusted report only) between SWE-bench's ``>>>>> Start/End Test Output`` markers, then
``REPOGYM_REWARD=1`` or ``=0``; ``reward.txt`` and ``result.json`` go to ``$REPOGYM_OUT``
(default ``/tmp/repogym-eval``). Exit status 0: graded; 2: bad input (no patch file); 3: the
environment is broken. The script's last command before its ``End Test Output`` comment line
exits 0 exactly when the reward is 1: SWE-bench's harness records that status as the test
exit code (``>>>>> Test Exit Code: N``) and refuses a log that shows no failure with a
non-zero code, so its verdict is repogym's even where the two rule sets differ (a skipped
PASS_TO_PASS test, say).

Grading with the official harness (``pip install swebench``, 5.x)::

    bash OUT/build_images.sh
    python -m swebench.harness.run_evaluation --dataset_name OUT/instances.jsonl \\
        --predictions_path preds.jsonl --run_id my-run --max_workers 2

``preds.jsonl`` holds ``{"instance_id", "model_name_or_path", "model_patch"}`` per line
(``--predictions_path gold`` grades the gold patches); the report lands in
``<model>.<run_id>.json``, the logs under ``logs/run_evaluation/<run_id>/``. The command
line skips empty predictions (reported as empty patches, never resolved); a patch that
neither ``git apply`` nor ``patch`` takes is an error for its instance, not resolved.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Sequence

from repogym.datasets.exports.base import EXPORTERS, Exporter, ExportOptions
from repogym.datasets.exports.grading import (
    ANCHOR,
    GRADER_COMMAND,
    GRADER_FILE,
    PREPARE_FILE,
    PREPARE_SCRIPT,
    REPO_DIR,
    Plan,
    bundle,
    grader_args,
    grading_files,
    quoted,
    require_docker_images,
    require_language,
)
from repogym.datasets.exports.harbor import environment_files, task_dirname
from repogym.datasets.exports.plans import grading_plans
from repogym.errors import InputError
from repogym.schemas.arrow import TaskRow

INSTANCES_FILE = "instances.jsonl"
BUILD_SCRIPT = "build_images.sh"
IMAGES_DIR = "images"
DEFAULT_PATCH_PATH = "/tmp/patch.diff"
DEFAULT_RESULT_DIR = "/tmp/repogym-eval"
TESTBED = "/testbed"  # SWE-bench's CONTAINER_WORKDIR: where its harness applies the patch
TASK_IMAGE_REPO = "repogym-task"
TASK_IMAGE_LABEL = "task"  # LABEL repogym=task (the env image's is repogym=env)
# Test ids hold spaces (pytest's parametrized ids ``test_x[Donald E. Knuth]``, JavaScript's
# ``file > suite > test``, JUnit Jupiter's display names), which SWE-bench's pytest parser
# cuts at the first one; this parser reads ``[PASSED] <id>`` / ``[FAILED] <id>`` lines whole
WHOLE_LINE_PARSER = "parse_log_jest_json"
LOG_PARSERS = {"python": WHOLE_LINE_PARSER, "javascript": WHOLE_LINE_PARSER,
               "go": "parse_log_gotest", "rust": "parse_log_cargo",
               "java": WHOLE_LINE_PARSER}
EVAL_TYPE = "pass_and_fail"  # swebench.harness.constants.EvalType.PASS_AND_FAIL
END_TEST_OUTPUT = ">>>>> End Test Output"

# Appended to harbor's Dockerfile: SWE-bench's harness runs `git apply` as root in /testbed;
# /repo belongs to the test user, so root's git must be told it is safe. Its containers run
# `tail -f /dev/null` as PID 1, which ignores SIGTERM: STOPSIGNAL spares `docker stop` its
# 15 s wait on each instance.
TESTBED_LINES = f"""# SWE-bench's harness applies the candidate's patch in {TESTBED}, as root.
STOPSIGNAL SIGKILL
RUN ln -sfn {REPO_DIR} {TESTBED} \\
 && git config --system --add safe.directory {REPO_DIR} \\
 && git config --system --add safe.directory {TESTBED}
WORKDIR {TESTBED}
"""

EVAL_SCRIPT = """#!/bin/bash
# repogym grading script for {iid} (generated by `repogym export --format swebench`).
# Run as root in a fresh container of the task image {task_image} or of the environment
# image {image}, with the candidate's diff at $REPOGYM_PATCH (default {patch}). Prints
# REPOGYM_REWARD=<1|0>; writes reward.txt and result.json to $REPOGYM_OUT (default
# {result}). Exit: 0 graded, 2 bad input, 3 broken env.
set -uo pipefail
patch="${{REPOGYM_PATCH:-{patch}}}"
out="${{REPOGYM_OUT:-{result}}}"
work="$(mktemp -d /var/tmp/repogym-eval.XXXXXX)"
trap 'rm -rf "$work"' EXIT
fail() {{
  mkdir -p "$out"; echo 0 > "$out/reward.txt"
  echo "repogym: $1" >&2; echo "REPOGYM_REWARD=0"; exit 3
}}
base64 -d > "$work/bundle.tgz" <<'REPOGYM_BUNDLE'
{payload}
REPOGYM_BUNDLE
tar -xzf "$work/bundle.tgz" -C "$work" || fail "corrupt bundle"
if [ ! -f {anchor}/commit ]; then  # the environment image: build the broken state first
  bash "$work/{prepare}" {base_commit} "$work/bug.patch" || fail "cannot build the broken state"
fi
{grader_cmd} "$work/{grader}" {grader_args} \\
  --patch "$patch" --out "$out"
status=$?
[ "$status" -eq 0 ] && [ "$(cat "$out/reward.txt" 2>/dev/null)" = 1 ]
# {end_marker} was printed by the grader; SWE-bench's harness records the status above
# (0 exactly when the reward is 1) as the test exit code at this line.
exit $status
"""

BUILD_SH = """#!/bin/bash
# Builds the task images of this SWE-bench export (generated by `repogym export --format
# swebench`): one `docker build` per task, from images/<instance_id>/, FROM its environment
# image, which must be present locally (repogym builds it). An image already present is
# kept (its tag is a hash of its build context); REPOGYM_REBUILD=1 builds them all again.
set -euo pipefail
cd "$(dirname "${{BASH_SOURCE[0]}}")"
build() {{  # build TAG CONTEXT ENV_IMAGE
  if [ "${{REPOGYM_REBUILD:-0}}" != 1 ] && docker image inspect "$1" >/dev/null 2>&1; then
    echo "present $1"; return
  fi
  if ! docker image inspect "$3" >/dev/null 2>&1; then
    echo "build_images.sh: environment image $3 is missing (build it with repogym)" >&2
    exit 1
  fi
  docker build -q -t "$1" "$2" >/dev/null
  echo "built $1"
}}
{builds}
"""


def swebench_repo(repo: str) -> str:
    """``owner__name`` -> ``owner/name`` (SWE-bench's form); other names unchanged."""
    owner, sep, name = repo.partition("__")
    return f"{owner}/{name}" if sep and owner and name else repo


def image_context(row: TaskRow) -> dict[str, bytes]:
    """The task image's build context: harbor's (broken state without history, labelled
    ``repogym=task``) with ``/testbed`` added for SWE-bench's harness."""
    files = environment_files(row, label=TASK_IMAGE_LABEL, fmt="swebench")
    files["Dockerfile"] += TESTBED_LINES.encode()
    return files


def docker_repo_name(repo: str) -> str:
    """``repo`` as one Docker repository path component (lowercase alphanumerics joined by
    single ``-``, at most 100 characters); ``task`` when nothing is left."""
    name = re.sub(r"[^a-z0-9]+", "-", repo.lower()).strip("-")
    return name[:100] or "task"


def task_image_tag(row: TaskRow, context: dict[str, bytes]) -> str:
    """``repogym-task/<repo>:<16 hex>``, the hex a hash of the build context (which names
    the instance and its environment image): a changed context gets a new tag."""
    digest = hashlib.sha256()
    for name in sorted(context):
        digest.update(name.encode() + b"\0" + hashlib.sha256(context[name]).digest())
    return f"{TASK_IMAGE_REPO}/{docker_repo_name(row.repo)}:{digest.hexdigest()[:16]}"


def eval_script(row: TaskRow, options: ExportOptions, task_image: str = "",
                plan: Plan | None = None) -> str:
    """The bash script that grades ``$REPOGYM_PATCH`` for ``row`` (see the module docstring;
    ``plan``: a JavaScript, Go, Rust or Java task's grading plan)."""
    files = grading_files(row, options.test_timeout, plan)
    files[PREPARE_FILE] = PREPARE_SCRIPT.encode()
    files["bug.patch"] = row.bug_patch.encode()
    raw = bundle(files)
    payload = "\n".join(raw[i:i + 76] for i in range(0, len(raw), 76))
    return EVAL_SCRIPT.format(
        iid=row.instance_id, image=row.image, task_image=task_image or "(none)",
        patch=DEFAULT_PATCH_PATH, result=DEFAULT_RESULT_DIR, payload=payload,
        prepare=PREPARE_FILE, anchor=ANCHOR, base_commit=quoted(row.base_commit),
        grader_cmd=GRADER_COMMAND, grader=GRADER_FILE,
        grader_args=grader_args(row, "$work"), end_marker=END_TEST_OUTPUT)


def instance(row: TaskRow, options: ExportOptions, task_image: str = "",
             plan: Plan | None = None) -> dict[str, Any]:
    """One SWE-bench instance (see the module docstring for the fields); ``task_image`` is
    its ``image`` (default: the tag :func:`task_image_tag` gives it); ``plan``: a
    JavaScript, Go, Rust or Java task's grading plan."""
    task_image = task_image or task_image_tag(row, image_context(row))
    return {
        "instance_id": row.instance_id,
        "repo": swebench_repo(row.repo),
        "base_commit": row.base_commit,
        "patch": row.patch,
        "test_patch": row.test_patch,
        "problem_statement": row.problem_statement,
        "hints_text": "",
        "FAIL_TO_PASS": json.dumps(list(row.FAIL_TO_PASS)),
        "PASS_TO_PASS": json.dumps(list(row.PASS_TO_PASS)),
        "version": row.image.rpartition(":")[2] or row.image,
        "created_at": row.created_at.isoformat(),
        "environment_setup_commit": row.base_commit,
        "image": task_image,
        "log_parser": LOG_PARSERS[row.language],
        "eval_type": EVAL_TYPE,
        "language": row.language,
        "image_name": row.image,
        "eval_script": eval_script(row, options, task_image, plan),
        "bug_patch": row.bug_patch,
        "kind": row.kind.value,
    }


def build_script(builds: Sequence[tuple[str, str, str]]) -> str:
    """``build_images.sh`` for ``(tag, context dir relative to OUT, env image)`` triples."""
    lines = [f"build {quoted(tag)} {quoted(ctx)} {quoted(env)}" for tag, ctx, env in builds]
    return BUILD_SH.format(builds="\n".join(lines))


@EXPORTERS.register("swebench")
class SwebenchExporter(Exporter):
    """SWE-bench instances (JSONL), their task images' build contexts and a build script;
    each ``eval_script`` grades with repogym's rules (also under SWE-bench's own harness)."""

    description = "SWE-bench JSONL + per-task image Dockerfiles, self-contained eval_script"
    version = "3"

    def write(self, rows: Sequence[TaskRow], dest: Path, options: ExportOptions) -> None:
        """Write ``instances.jsonl``, ``images/<instance_id>/`` and ``build_images.sh``.

        Raises:
            InputError: a row's image is not a Docker image, its language has no grader,
                two ids map to one directory, or a JavaScript row's plan cannot be read
                (:mod:`.plans`).
        """
        require_docker_images(rows, self.name)
        for row in rows:
            require_language(row)
        plans = grading_plans(rows, options.test_timeout)
        builds: list[tuple[str, str, str]] = []
        with open(dest / INSTANCES_FILE, "w", encoding="utf-8") as fh:
            for row in rows:
                context = image_context(row)
                tag = task_image_tag(row, context)
                ctx_dir = dest / IMAGES_DIR / task_dirname(row)
                if ctx_dir.exists():
                    raise InputError(f"two tasks map to the directory {ctx_dir.name!r}")
                ctx_dir.mkdir(parents=True)
                for name, data in context.items():
                    (ctx_dir / name).write_bytes(data)
                builds.append((tag, f"{IMAGES_DIR}/{ctx_dir.name}", row.image))
                inst = instance(row, options, tag, plans.get(row.instance_id))
                fh.write(json.dumps(inst, ensure_ascii=False) + "\n")
        script = dest / BUILD_SCRIPT
        script.write_text(build_script(builds), encoding="utf-8")
        script.chmod(0o755)
