"""The episode's actions as MCP tools, for OpenEnv's ``/mcp`` route (``tools/list``,
``tools/call``) and agents that speak MCP. Each tool is one :class:`RepoAction` through
the session's environment, so a tool call and a ``step`` do the same thing."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from fastmcp import FastMCP

from repogym.envs.models import RepoAction, Tool

if TYPE_CHECKING:
    from repogym.envs.environment import RepoEnvironment


def mcp_tools(env: RepoEnvironment) -> FastMCP:
    """A FastMCP server whose tools act in ``env``'s episode."""
    mcp = FastMCP("repogym")

    async def act(**fields: Any) -> dict[str, Any]:
        obs = await asyncio.to_thread(env.step, RepoAction(**fields))
        return dict(obs.model_dump(mode="json"))

    async def run(command: str, timeout_s: float | None = None) -> dict[str, Any]:
        """Run a shell command in the repository (as the sandbox's user, no network)."""
        return await act(tool=Tool.run, command=command, timeout_s=timeout_s)

    async def read(path: str) -> dict[str, Any]:
        """Read a file (a path relative to the repository)."""
        return await act(tool=Tool.read, path=path)

    async def write(path: str, content: str) -> dict[str, Any]:
        """Write a file's whole text (a path relative to the repository)."""
        return await act(tool=Tool.write, path=path, content=content)

    async def apply(patch: str) -> dict[str, Any]:
        """Apply a unified diff to the repository."""
        return await act(tool=Tool.apply, patch=patch)

    async def submit() -> dict[str, Any]:
        """End the episode: the changes made are graded by the task's tests."""
        return await act(tool=Tool.submit)

    for fn in (run, read, write, apply, submit):
        mcp.tool(fn, name=fn.__name__)
    return mcp


__all__ = ["mcp_tools"]
