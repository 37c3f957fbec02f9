"""Warm pytest runs: one forking server per sandbox instead of a fresh interpreter per run.

:class:`WarmPytest` starts ``plugins/repogym_warm.py`` in the sandbox through
:meth:`Sandbox.spawn`. The server imports pytest and every module the suite imports once,
forgets the project's own modules, and forks one child per run; the child imports the
project and its tests from disk (patched or not) and runs pytest with the same report
plugin, arguments, report checks and nonce as :meth:`PythonToolchain.run_tests`. A child
collects only the test files its selection names.

It falls back to fresh runs, for good, when the sandbox cannot spawn processes (the local
provider) or the server says warm runs cannot be trusted here (the runner itself imports
the project); and for one run when the server dies (code under test may kill it: a new one
starts next time). It is the judge's tool for its own candidates: grading a policy's patch
(:func:`repogym.datasets.verify.grade_in`) always runs a fresh process.
"""

from __future__ import annotations

import functools
import json
import logging
import secrets
from importlib import resources
from typing import TYPE_CHECKING, Sequence

from repogym.errors import SandboxError
from repogym.sandboxes.base import Sandbox
from repogym.sandboxes.channel import Channel, ChannelClosed, ChannelTimeout, new_tag
from repogym.schemas.records import TestRun

if TYPE_CHECKING:
    from repogym.toolchains.python import PythonToolchain

log = logging.getLogger(__name__)

START_TIMEOUT = 300.0  # importing and collecting a whole suite once
HOST_GRACE = 10.0  # past a run's own timeout, before the server counts as hung


@functools.lru_cache(maxsize=None)
def _plugin(name: str) -> str:
    """A plugin's source, read once per process (it is sent with every run)."""
    return resources.files("repogym.toolchains.plugins").joinpath(name).read_text()


class WarmPytest:
    """``run_tests`` through a warm, forking pytest server in one sandbox.

    Attributes:
        cold_reason: why warm runs are off in this sandbox ("" while they are on).
        warm_runs / fresh_runs: how many runs took each path.
    """

    def __init__(self, toolchain: PythonToolchain, sandbox: Sandbox) -> None:
        self.toolchain, self.sandbox = toolchain, sandbox
        self.channel: Channel | None = None
        self.cold_reason = ""
        self.warm_runs = self.fresh_runs = 0

    def run_tests(self, sandbox: Sandbox, *, timeout: float,
                  select: Sequence[str] | None = None) -> TestRun:
        """Like :meth:`PythonToolchain.run_tests` (same outcomes), in a forked child.

        Raises:
            SandboxError: the sandbox broke.
        """
        if sandbox is not self.sandbox:
            raise ValueError("a WarmPytest runs tests only in the sandbox it was made for")
        channel = self._server()
        if channel is not None:
            try:
                run = self._run(channel, timeout=timeout, select=select)
                self.warm_runs += 1
                return run
            except ChannelClosed as exc:  # killed by code under test, OOM, a replaced sandbox
                log.info("warm pytest server gone (%s); this run is a fresh one", exc)
                self._stop()
            except ChannelTimeout:
                self._stop()
                raise SandboxError("the warm pytest server stopped answering") from None
        self.fresh_runs += 1
        return self.toolchain.run_tests(sandbox, timeout=timeout, select=select)

    def close(self) -> None:
        self._stop()

    # -- the server ---------------------------------------------------------------------

    def _server(self) -> Channel | None:
        if self.cold_reason:
            return None
        if self.channel is not None and not self.channel.closed:
            return self.channel
        tag = new_tag()
        try:
            channel = self.sandbox.spawn(["python", "-u", "-c", _plugin("repogym_warm.py"), tag],
                                         tag=tag)
        except NotImplementedError as exc:
            self.cold_reason = str(exc)
            return None
        try:
            answer = channel.request({"op": "start"}, timeout=START_TIMEOUT)
        except (ChannelClosed, ChannelTimeout) as exc:
            channel.close()
            self.cold_reason = f"the warm server did not start: {exc}"
            return None
        channel.pid = int(answer.get("pid") or 0) or None
        if not answer.get("warm"):
            channel.close()
            self.cold_reason = str(answer.get("why") or answer.get("error") or "not warm")
            log.info("warm pytest runs off in this sandbox: %s", self.cold_reason)
            return None
        self.channel = channel
        return channel

    def _stop(self) -> None:
        if self.channel is not None:
            self.channel.close()  # reset() no longer spares it, and kills what is left
            self.channel = None

    def _run(self, channel: Channel, *, timeout: float,
             select: Sequence[str] | None) -> TestRun:
        from repogym.toolchains.python import PYTEST_ARGS, parse_report

        scratch = self.sandbox.scratch_path()
        nonce = secrets.token_hex(16)
        report = f"{scratch}/r-{secrets.token_hex(8)}.jsonl"
        config = {"report": report, "nonce": nonce,
                  "select": sorted(select) if select is not None else None}
        paths = sorted({t.split("::", 1)[0] for t in select}) if select else []
        request = {
            "op": "run", "dir": scratch, "plugin": f"rg_{secrets.token_hex(8)}",
            "source": _plugin("repogym_report.py"), "config": json.dumps(config),
            "report": report, "args": list(PYTEST_ARGS), "paths": paths, "timeout": timeout,
            "env": {"REPOGYM_PLUGIN_CONFIG": f"{scratch}/config.json", "PYTHONPATH": scratch,
                    "PYTHONDONTWRITEBYTECODE": "1"},
        }
        answer = channel.request(request, timeout=timeout + HOST_GRACE)
        if "error" in answer:
            raise ChannelClosed(f"the warm server failed a run: {answer['error']}")
        return parse_report(str(answer.get("report") or ""), nonce=nonce,
                            exit_code=int(answer["exit_code"]),
                            duration=float(answer["duration"]),
                            timed_out=bool(answer["timed_out"]),
                            log_tail=str(answer.get("log") or "")[-4000:])
