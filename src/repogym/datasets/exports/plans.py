"""The grading plans of JavaScript, Go, Rust and Java tasks, made at export time (see
:mod:`repogym.toolchains.javascript.export`, :mod:`repogym.toolchains.go.export`,
:mod:`repogym.toolchains.rust.export` and :mod:`repogym.toolchains.java.export` for what a
plan holds).

A Go, Rust or Java task's plan is its toolchain's own, the same for every task
(:func:`~repogym.datasets.exports.grading.own_plan`): no sandbox is needed. A JavaScript
task's is read as follows.

A plan depends on files of the task's graded state that no dataset row holds (the
``package.json`` that names the runner and its arguments, the listed tests' files the
canaries load what they load from), so it is read where ``grade_in`` would read them: in a
sandbox of the task's environment image, reset to ``base_commit``, with ``bug_patch`` and
``test_patch`` applied. Every file read there is protected, so a graded run sees the same
ones. One sandbox per environment image; plans are remembered per process (by everything
they depend on), so exporting the same tasks to several formats reads them once.
"""

from __future__ import annotations

import hashlib
import json
from typing import Sequence

from repogym.config import Settings
from repogym.datasets.exports.grading import JsPlan, Plan, own_plan, spec_limits
from repogym.errors import InputError, NoTestsError, RepogymError
from repogym.schemas.arrow import TaskRow

_CACHE: dict[str, JsPlan] = {}


def plan_key(row: TaskRow, timeout: float) -> str:
    """What a row's plan depends on, hashed."""
    h = hashlib.sha256()
    for part in (row.image, row.base_commit, row.bug_patch, row.test_patch,
                 json.dumps([*row.FAIL_TO_PASS, *row.PASS_TO_PASS]),
                 spec_limits(row, timeout).model_dump_json()):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def grading_plans(rows: Sequence[TaskRow], timeout: float,
                  settings: Settings | None = None) -> dict[str, Plan]:
    """instance_id -> plan of every JavaScript, Go, Rust and Java row of ``rows`` (Python
    rows need none).

    Raises:
        InputError: a JavaScript row's environment image is not in the local Docker engine, its
            patches do not apply there, or its project has no runner the plan can describe.
    """
    wanted = [r for r in rows if r.language == "javascript"]
    todo: dict[str, list[TaskRow]] = {}
    for row in wanted:
        if plan_key(row, timeout) not in _CACHE:
            todo.setdefault(row.image, []).append(row)
    for image, group in sorted(todo.items()):
        _read_plans(image, group, timeout, settings or Settings())
    plans: dict[str, Plan] = {r.instance_id: _CACHE[plan_key(r, timeout)] for r in wanted}
    for row in rows:
        shared = own_plan(row.language)
        if shared is not None:
            plans[row.instance_id] = shared
    return plans


def _read_plans(image: str, rows: list[TaskRow], timeout: float, settings: Settings) -> None:
    from repogym.sandboxes import get_provider
    from repogym.toolchains.javascript.export import grading_plan

    first = rows[0].instance_id
    try:
        provider = get_provider("docker", settings)
        with provider.open(provider.env_for(image)) as sandbox:
            for row in rows:
                sandbox.reset(commit=row.base_commit)
                for what, patch in (("bug_patch", row.bug_patch),
                                    ("test_patch", row.test_patch)):
                    if not sandbox.apply_patch(patch):
                        raise InputError(f"task {row.instance_id}: its {what} does not apply "
                                         f"in {image} at {row.base_commit}")
                tests = [*row.FAIL_TO_PASS, *row.PASS_TO_PASS]
                limits = spec_limits(row, timeout)  # the run's, capped as grade_in caps it
                limits = limits.model_copy(update={"run": min(limits.run, timeout)})
                try:
                    plan = grading_plan(sandbox, tests, limits)
                except (NoTestsError, ValueError) as exc:
                    raise InputError(f"task {row.instance_id}: cannot describe how its tests "
                                     f"run: {exc}") from exc
                _CACHE[plan_key(row, timeout)] = JsPlan.model_validate(plan)
    except InputError:
        raise
    except RepogymError as exc:
        raise InputError(f"task {first}: exporting a JavaScript task reads its grading plan "
                         f"in a container of its environment image {image}, which failed "
                         f"(is the image in the local Docker engine?): {exc}") from exc


__all__ = ["grading_plans", "plan_key"]
