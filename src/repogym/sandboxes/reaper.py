"""Remove a process's sandboxes when it dies, however it dies.

A long-lived process that holds sandboxes (``repogym env serve``) gives its containers a
namespace label and starts :func:`start_reaper`: a small process of its own session that
waits on a pipe only its parent holds. When the parent exits -- normally, by an exception,
or killed with SIGKILL -- the pipe closes and the reaper removes every container of that
namespace (the provider's ``cleanup()``), then exits. Nothing is left running.

    python -m repogym.sandboxes.reaper PROVIDER NAMESPACE   (stdin: the parent's pipe)
"""

from __future__ import annotations

import subprocess
import sys
from typing import Sequence


def start_reaper(provider: str, namespace: str) -> subprocess.Popen[bytes]:
    """Start the reaper for ``namespace``'s sandboxes; it acts when this process exits
    (or when the returned process's stdin is closed)."""
    return subprocess.Popen(
        [sys.executable, "-m", "repogym.sandboxes.reaper", provider, namespace],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True)


def reap(provider: str, namespace: str) -> int:
    """Remove every sandbox of ``namespace``; returns how many."""
    from repogym.config import Settings
    from repogym.sandboxes import get_provider

    kwargs = {"namespace": namespace} if provider == "docker" else {}
    return get_provider(provider, Settings(), **kwargs).cleanup()


def main(argv: Sequence[str]) -> int:
    provider, namespace = argv
    while sys.stdin.buffer.read(65536):  # until the parent's end of the pipe closes
        pass
    removed = reap(provider, namespace)
    print(f"reaper: removed {removed} sandbox(es) of {namespace}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
