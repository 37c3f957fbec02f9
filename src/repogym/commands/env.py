"""``repogym env ...``: live environments over OpenEnv.

    repogym env serve [--dataset DIR] [--snapshot NAME] [--host 127.0.0.1] [--port 8000]
                      [--sessions 8] [--max-steps 50] [--episode-seconds 1800] [--partial]
                      [--journal FILE] [--namespace NAME]

Serves the dataset's accepted tasks (see :mod:`repogym.envs.server`); each ended episode's
reward is appended to ``--journal`` (default ``DIR/episodes/episodes.jsonl``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from repogym.commands.dataset import DATASET_OPTION, _errors, _root

app = typer.Typer(help="env", no_args_is_help=True)


@app.command("serve")
def serve(dataset: Optional[Path] = DATASET_OPTION,
          snapshot: Optional[str] = typer.Option(None, help="Serve this snapshot's tasks."),
          host: str = typer.Option("127.0.0.1", help="Address to listen on."),
          port: int = typer.Option(8000, help="Port to listen on."),
          sessions: int = typer.Option(8, min=1, help="Concurrent episodes (pool size)."),
          max_steps: int = typer.Option(50, min=1, help="Actions per episode."),
          episode_seconds: float = typer.Option(1800.0, min=1, help="Seconds per episode."),
          partial: bool = typer.Option(False, help="Reward: share of listed tests passing."),
          journal: Optional[Path] = typer.Option(None, help="Where episodes' rewards go."),
          namespace: Optional[str] = typer.Option(
              None, help="Label of this server's sandboxes (repogym.namespace=...; default: "
                         "a fresh one). They are removed when the server exits.")
          ) -> None:
    """Serve the dataset's tasks as an OpenEnv environment (HTTP, WebSocket, MCP)."""
    from repogym.envs.environment import EnvLimits
    from repogym.envs.server import serve as run

    with _errors():
        run(_root(dataset), snapshot=snapshot, host=host, port=port, sessions=sessions,
            journal=journal, namespace=namespace, limits=EnvLimits(max_steps=max_steps,
                                              episode_seconds=episode_seconds,
                                              partial=partial))
