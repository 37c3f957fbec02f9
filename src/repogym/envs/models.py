"""The typed actions, observations and state of a repogym episode, on OpenEnv's base
models (so ``/schema`` publishes them and OpenEnv's clients validate against them)."""

from __future__ import annotations

from enum import Enum
from typing import Any

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field, model_validator


class Tool(str, Enum):
    """What an action does."""

    run = "run"  # a shell command in the repository (``command``, optional ``timeout_s``)
    read = "read"  # a file's text (``path``)
    write = "write"  # a file's new text (``path``, ``content``)
    apply = "apply"  # a unified diff applied to the working copy (``patch``)
    submit = "submit"  # end the episode; the reward is the grade of the changes made


_NEEDS: dict[Tool, tuple[str, ...]] = {
    Tool.run: ("command",), Tool.read: ("path",), Tool.write: ("path", "content"),
    Tool.apply: ("patch",), Tool.submit: (),
}


class RepoAction(Action):
    """One action of the agent. ``tool`` says which; the fields it needs must be set."""

    tool: Tool
    command: str | None = Field(default=None, description="run: the shell command")
    timeout_s: float | None = Field(default=None, gt=0,
                                    description="run: its time limit (capped by the server)")
    path: str | None = Field(default=None, min_length=1,
                             description="read/write: a path, relative to the repository")
    content: str | None = Field(default=None, description="write: the file's new text")
    patch: str | None = Field(default=None, description="apply: a unified diff")

    @model_validator(mode="after")
    def _fields_for_tool(self) -> "RepoAction":
        missing = [name for name in _NEEDS[self.tool] if getattr(self, name) is None]
        if missing:
            raise ValueError(f"a {self.tool.value} action needs {', '.join(missing)}")
        return self


class EndedBy(str, Enum):
    """Why an episode ended."""

    submit = "submit"
    step_limit = "step_limit"
    time_limit = "time_limit"


class RepoObservation(Observation):
    """What the agent sees after a reset or an action.

    On reset: ``task_id``, ``statement`` and ``files`` (the repository's layout). After an
    action: ``output`` (truncated with a marker past the server's limit) and ``exit_code``.
    At the end (``done``): ``reward`` (None when grading itself failed: ``error`` says why)
    and ``ended_by``.
    """

    task_id: str = ""
    statement: str = ""
    files: list[str] = Field(default_factory=list)
    output: str = ""
    exit_code: int | None = None
    truncated: bool = False
    error: str | None = None
    ended_by: EndedBy | None = None
    steps_left: int | None = None
    seconds_left: float | None = None


class RepoState(State):
    """The session's episode, for ``state`` calls."""

    task_id: str | None = None
    language: str | None = None
    done: bool = False
    reward: float | None = None
    ended_by: EndedBy | None = None
    max_steps: int = 0


def truncate(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to about ``limit`` characters, its head and tail kept around a marker
    saying how much was left out."""
    if len(text) <= limit:
        return text, False
    head, tail = limit * 2 // 3, limit // 3
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters truncated ...]\n{text[-tail:]}", True


def dump(model: Any) -> dict[str, Any]:
    return dict(model.model_dump(mode="json"))


__all__ = ["EndedBy", "RepoAction", "RepoObservation", "RepoState", "Tool", "truncate"]
