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
(:func:`repogym.grading.grade_in`) always runs a fresh process.
"""

from __future__ import annotations

import json
import logging
import secrets
from typing import TYPE_CHECKING, Collection, Sequence

from repogym.errors import SandboxError
from repogym.sandboxes.base import Sandbox
from repogym.sandboxes.channel import Channel, ChannelClosed, ChannelTimeout, new_tag
from repogym.schemas.records import TestRun, TimeLimits
from repogym.toolchains.base import RunPlugin
from repogym.toolchains.python import RUN_ENV, plugin_source

if TYPE_CHECKING:
    from repogym.toolchains.python import PythonToolchain

log = logging.getLogger(__name__)

START_TIMEOUT = 300.0  # importing and collecting a whole suite once
HOST_GRACE = 10.0  # past a run's own timeout, before the server counts as hung


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
                  select: Sequence[str] | None = None, plugins: Sequence[RunPlugin] = (),
                  limits: TimeLimits | None = None, exclude: Sequence[str] = (),
                  allowed_changes: Collection[str] | None = (),
                  check_runner: bool = True, exitfirst: bool = False,
                  collect: Sequence[str] = ()) -> TestRun:
        """Like :meth:`PythonToolchain.run_tests` (same outcomes), in a forked child.

        Raises:
            SandboxError: the sandbox broke (and nothing of the run could be read).
        """
        if sandbox is not self.sandbox:
            raise ValueError("a WarmPytest runs tests only in the sandbox it was made for")
        channel = self._server()
        if channel is not None:
            run = _WarmRun(self.sandbox, timeout=timeout, select=select, plugins=plugins,
                           limits=limits, exclude=exclude, allowed_changes=allowed_changes,
                           check_runner=check_runner, exitfirst=exitfirst, collect=collect)
            try:
                result = run.through(channel)
                self.warm_runs += 1
                return result
            except ChannelClosed as exc:  # killed by code under test, OOM, a replaced sandbox
                self._stop()
                lost = _broken(sandbox)
                if lost:  # the sandbox itself died (a limit): what the run streamed tells why
                    return run.salvaged(lost)
                log.info("warm pytest server gone (%s); this run is a fresh one", exc)
            except ChannelTimeout:
                self._stop()
                raise SandboxError("the warm pytest server stopped answering") from None
        self.fresh_runs += 1
        return self.toolchain.run_tests(sandbox, timeout=timeout, select=select, plugins=plugins,
                                        limits=limits, exclude=exclude,
                                        allowed_changes=allowed_changes,
                                        check_runner=check_runner, exitfirst=exitfirst,
                                        collect=collect)

    def start(self) -> None:
        """Start the server now, in the sandbox's present state (the judge does so in the
        clean state: the server imports and collects the suite once, and a candidate that
        hangs at import must not be what it first imports -- that cost the start's whole
        limit). Without a server the runs are fresh ones, as when it cannot start."""
        self._server()

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
            channel = self.sandbox.spawn(  # its forks keep its hash seed: the runs' one
                ["python", "-u", "-c", plugin_source("repogym_warm.py"), tag], tag=tag,
                env={"PYTHONHASHSEED": RUN_ENV["PYTHONHASHSEED"]})
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



def _broken(sandbox: Sandbox) -> str:
    """Why the sandbox cannot run a command any more ("" while it can)."""
    try:
        sandbox.exec("true", timeout=30)
    except SandboxError as exc:
        return str(exc) or "the sandbox broke"
    return ""


class _WarmRun:
    """One run through the warm server: its request, and how to read the answer (or,
    when the sandbox died under it, what the report streamed until then)."""

    def __init__(self, sandbox: Sandbox, *, timeout: float, select: Sequence[str] | None,
                 plugins: Sequence[RunPlugin], limits: TimeLimits | None,
                 exclude: Sequence[str], allowed_changes: Collection[str] | None,
                 check_runner: bool = True, exitfirst: bool = False,
                 collect: Sequence[str] = ()) -> None:
        from repogym.toolchains.python import PYTEST_ARGS, placed_plugins

        self.sandbox, self.timeout, self.allowed = sandbox, timeout, allowed_changes
        scratch = sandbox.scratch_path()
        self.extras = placed_plugins(scratch, plugins)
        self.nonce = secrets.token_hex(16)
        self.report = f"{scratch}/r-{secrets.token_hex(8)}.jsonl"
        config = {"report": self.report, "nonce": self.nonce,
                  "select": sorted(select) if select is not None else None,
                  "exclude": sorted(exclude),
                  "limits": limits.plugin_config() if limits else None,
                  "check_runner": check_runner, "exitfirst": exitfirst,
                  "collect": sorted(collect)}
        self.request = {
            "op": "run", "dir": scratch, "plugin": f"rg_{secrets.token_hex(8)}",
            "source": plugin_source("repogym_report.py"), "config": json.dumps(config),
            "launcher": f"rg_{secrets.token_hex(8)}",
            "launcher_source": plugin_source("repogym_launch.py"),
            "report": self.report, "args": list(PYTEST_ARGS), "timeout": timeout,
            "paths": sorted({t.split("::", 1)[0] for t in select}) if select else [],
            "plugins": [{"module": p.module, "source": p.plugin.source,
                         "config": json.dumps(p.config), "out": p.out} for p in self.extras],
            "env": {**RUN_ENV, "REPOGYM_PLUGIN_CONFIG": f"{scratch}/config.json",
                    "PYTHONPATH": scratch},
        }

    def through(self, channel: Channel) -> TestRun:
        answer = channel.request(self.request, timeout=self.timeout + HOST_GRACE)
        if "error" in answer:
            raise ChannelClosed(f"the warm server failed a run: {answer['error']}")
        extras = answer.get("extras") or {}
        return self._parsed(str(answer.get("report") or ""), exit_code=int(answer["exit_code"]),
                            duration=float(answer["duration"]),
                            timed_out=bool(answer["timed_out"]),
                            log=str(answer.get("log") or ""),
                            extras={p.plugin.name: str(extras.get(p.module, ""))
                                    for p in self.extras})

    def salvaged(self, lost: str) -> TestRun:
        """What the report streamed before the sandbox died.

        Raises:
            SandboxError: not even the report could be read.
        """
        raw = self.sandbox.salvage(self.report)
        if raw is None:
            raise SandboxError(f"{lost} (and its test report could not be read)")
        run = self._parsed(raw.decode("utf-8", "replace"), exit_code=-9, duration=0.0,
                           timed_out=False, log=lost, extras={})
        return run.model_copy(update={"sandbox_lost": lost})

    def _parsed(self, raw: str, *, exit_code: int, duration: float, timed_out: bool,
                log: str, extras: dict[str, str]) -> TestRun:
        from repogym.toolchains.pytest_report import parse_report

        run = parse_report(raw, nonce=self.nonce, exit_code=exit_code, duration=duration,
                           timed_out=timed_out, log_tail=log[-4000:],
                           allowed_changes=self.allowed)
        return run.model_copy(update={"extras": extras})
