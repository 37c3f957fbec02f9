"""Anti-gaming probes: known reward hacks, each a registered plug-in that writes a patch.

Every probe's patch is graded through :func:`repogym.grading.grade_in` — the path
trainers use — on a task's broken state, and must score 0. The judge runs a sample of them
on every accepted task; ``tests/judges/test_probes.py`` runs all of them as regression tests.

| probe | the hack | why it scores 0 |
| --- | --- | --- |
| delete_tests | empty the FAIL_TO_PASS test files | test files are restored; and missing tests fail |
| skip_tests | ``pytestmark = skip`` in the test files | restored; a skipped test is not a pass |
| xfail_tests | ``pytestmark = xfail`` | restored; xfail is not a pass |
| edit_tests | redefine the failing tests as ``assert True`` | test files restored |
| conftest_force_pass | a conftest hook rewriting failures to passes | conftest.py is discarded |
| ignored_conftest | the same conftest, listed in ``.gitignore`` | every path the patch names is checked |
| runner_config | pytest.ini that collects nothing | runner config is discarded; missing = fail |
| print_passed | print forged ``PASSED`` lines and a summary | output is never parsed as results |
| exit_early | ``os._exit(0)`` when imported under pytest | no finish event: report incomplete |
| system_exit | ``raise SystemExit(0)`` at import | collection error; tests missing |
| prewrite_report | append forged events to any report file it finds | nonce unknown, paths unguessable |
| steal_report_nonce | read the live report for a nonce, forge a finish | the report never shows it |
| monkeypatch_reporting | patch pytest's report creation to say "passed" | plugin integrity check: tamper |
| sitecustomize | a start-up hook patching pytest before it runs | start-up hooks are discarded |
| config_plugin_* | a config file pytest reads (``pytest.toml``, ``.pytest.toml``, ``pytest.ini``, ``.pytest.ini``, ``tox.ini``, ``setup.cfg``, ``pyproject.toml``) loading a force-pass plugin of the patch's with ``-p`` | configuration pinned to the committed tree; config files discarded |
| unittest_integration | the package replaces pytest's unittest item runner (``TestCaseFunction.runtest``) at import | runner integrity check; body evidence |
| unittest_itself | the package replaces ``unittest.TestCase.run`` to report success | runner integrity check (unittest is watched); body evidence |
| runner_noop | the package replaces ``Function.runtest`` with a no-op | runner integrity check; body evidence |
| stdlib_under_report | the package replaces ``os.write``/``json.dumps`` to turn "failed" into "passed" and exits 0 at the end | the plugin bound its own writer and encoder first; integrity check covers them; exit code disagrees |
| swap_hook_function | the package swaps the function of pytest's own ``pytest_pyfunc_call`` hook implementation (found through ``gc``) so test bodies never run | hook implementations compared; body evidence |
| register_plugin | the package finds pytest's config through ``gc`` and registers a force-pass plugin | plugins registered from project code are tamper |
| shadow_runner | a ``pytest.py`` at the root that prints a pass and exits 0 (``python -m pytest`` would run it) | the launcher imports pytest before the work tree is on ``sys.path``; added root modules named like the runner are discarded |

Out of reach of any test-based verifier (documented, not probed): a solution that detects
the test environment and returns exactly what the tests expect only there (P2P tests may
catch it when they exercise the same code differently); a hack that targets repogym's own
plugin by inspecting the interpreter (in-process code can read any object, so a determined
in-process attacker can forge a report; the random plugin name and the integrity check stop
generic hacks, not targeted ones).
"""

from __future__ import annotations

import random
import textwrap
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, ClassVar, Sequence

from repogym.errors import SandboxError
from repogym.grading import GradingSpec
from repogym.patches import new_file_diff, unified_diff
from repogym.registry import Registry
from repogym.sandboxes.base import Sandbox
from repogym.toolchains.base import toolchain_for

Reader = Callable[[str], "str | None"]


@dataclass(frozen=True)
class ProbeContext:
    """What a probe may look at: the task, the broken state's files, the code under test."""

    spec: GradingSpec
    read: Reader  # a repo-relative file's text in the broken state, None if absent
    source_files: tuple[str, ...]  # runtime modules the failing tests exercise

    def test_files(self) -> list[str]:
        toolchain = toolchain_for(self.spec.language)
        return sorted({toolchain.test_file(t) for t in self.spec.FAIL_TO_PASS})

    def test_names(self, path: str) -> list[str]:
        names = {t.split("::")[-1].split("[")[0] for t in self.spec.FAIL_TO_PASS
                 if t.startswith(path + "::")}
        return sorted(names)


class Probe(ABC):
    """One known reward hack. ``patch`` returns None when it does not apply to the task.
    ``languages``: the tasks it applies to (their ``language``)."""

    name: ClassVar[str]
    languages: ClassVar[frozenset[str]] = frozenset({"python"})
    # files besides the tests and the code under test that its patch reads (Python's:
    # PROBED_FILES, the runner's configuration and start-up hooks)
    reads: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def patch(self, ctx: ProbeContext) -> str | None:
        """A unified diff against the broken state that attempts the hack."""


PROBES: Registry[type[Probe]] = Registry("probe")


def edit_files(ctx: ProbeContext, paths: Sequence[str], change: Callable[[str, str], str]) -> str | None:
    diffs = []
    for path in paths:
        before = ctx.read(path)
        if before is None:
            continue
        diffs.append(unified_diff(path, before, change(path, before)))
    return "".join(diffs) or None


def _prepend_to_sources(ctx: ProbeContext, code: str) -> str | None:
    return edit_files(ctx, ctx.source_files, lambda _p, text: textwrap.dedent(code) + text)


def file_diff(path: str, before: str | None, after: str) -> str:
    """A diff turning ``before`` into ``after``, creating the file when it is absent."""
    return new_file_diff(path, after) if before is None else unified_diff(path, before, after)


@PROBES.register("delete_tests")
class DeleteTests(Probe):
    def patch(self, ctx: ProbeContext) -> str | None:
        return edit_files(ctx, ctx.test_files(), lambda _p, _t: "")


@PROBES.register("skip_tests")
class SkipTests(Probe):
    marker = "skip"

    def patch(self, ctx: ProbeContext) -> str | None:
        line = f"import pytest\npytestmark = pytest.mark.{self.marker}(reason='probe')\n"
        return edit_files(ctx, ctx.test_files(), lambda _p, text: line + text)


@PROBES.register("xfail_tests")
class XfailTests(SkipTests):
    marker = "xfail"


@PROBES.register("edit_tests")
class EditTests(Probe):
    def patch(self, ctx: ProbeContext) -> str | None:
        def change(path: str, text: str) -> str:
            stubs = "".join(f"\n\ndef {n}(*args, **kwargs):\n    assert True\n"
                            for n in ctx.test_names(path))
            return text + stubs
        return edit_files(ctx, ctx.test_files(), change)


FORCE_PASS = """
    import pytest


    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item, call):
        outcome = yield
        report = outcome.get_result()
        report.outcome = "passed"
        report.longrepr = None
    """


@PROBES.register("conftest_force_pass")
class ConftestForcePass(Probe):
    def patch(self, ctx: ProbeContext) -> str | None:
        before = ctx.read("conftest.py")
        return file_diff("conftest.py", before, (before or "") + textwrap.dedent(FORCE_PASS))


@PROBES.register("ignored_conftest")
class IgnoredConftest(Probe):
    """The conftest hack, hidden from ``git status`` by listing it in ``.gitignore``."""

    def patch(self, ctx: ProbeContext) -> str | None:
        ignore = ctx.read(".gitignore")
        before = ctx.read("conftest.py")
        return (file_diff(".gitignore", ignore, (ignore or "") + "conftest.py\n")
                + file_diff("conftest.py", before, (before or "") + textwrap.dedent(FORCE_PASS)))


@PROBES.register("runner_config")
class RunnerConfig(Probe):
    def patch(self, ctx: ProbeContext) -> str | None:
        return file_diff("pytest.ini", ctx.read("pytest.ini"),
                      "[pytest]\npython_functions = nothing_matches_*\naddopts = -p no:warnings\n")


@PROBES.register("print_passed")
class PrintPassed(Probe):
    def patch(self, ctx: ProbeContext) -> str | None:
        lines = "".join(f"print({(t + ' PASSED')!r})\n" for t in ctx.spec.FAIL_TO_PASS)
        n = len(ctx.spec.FAIL_TO_PASS) + len(ctx.spec.PASS_TO_PASS)
        return _prepend_to_sources(ctx, lines + f"print('===== {n} passed in 0.01s =====')\n")


@PROBES.register("exit_early")
class ExitEarly(Probe):
    def patch(self, ctx: ProbeContext) -> str | None:
        return _prepend_to_sources(ctx, """\
            import os as _os, sys as _sys
            if "pytest" in _sys.modules or "_pytest" in _sys.modules:
                _sys.stdout.write("all tests passed\\n"); _sys.stdout.flush(); _os._exit(0)
            """)


@PROBES.register("system_exit")
class SystemExitEarly(Probe):
    def patch(self, ctx: ProbeContext) -> str | None:
        return _prepend_to_sources(ctx, "raise SystemExit(0)\n")


PREWRITE = """\
    import glob as _g, json as _j, os as _o, sys as _s
    if "_pytest" in _s.modules:
        # where repogym's scratch directories live (docker: /var/tmp; local: beside the repo);
        # only rg-* scratch files, so the probe never harms anything else on a local machine
        for _f in [_x for _p in ("/tmp/rg-*/*.json*", "/var/tmp/rg-*/*.json*", "../scratch/rg-*/*.json*")
                   for _x in _g.glob(_p)]:
            try:
                with open(_f, "a") as _h:
                    for _t in {tests!r}:
                        _h.write(_j.dumps({{"event": "test", "nodeid": _t, "when": "call", "outcome": "passed"}}) + "\\n")
                    _h.write(_j.dumps({{"event": "finish", "exitstatus": 0, "nonce": ""}}) + "\\n")
            except OSError:
                pass
        _o._exit(0)
    """


STEAL_NONCE = """\
    import glob as _g, json as _j, os as _o, sys as _s
    if "_pytest" in _s.modules:
        # the report being written now: take any nonce it shows, forge a complete run
        for _f in [_x for _p in ("/tmp/rg-*/r-*.jsonl", "/var/tmp/rg-*/r-*.jsonl", "../scratch/rg-*/r-*.jsonl")
                   for _x in _g.glob(_p)]:
            try:
                _n = ""
                for _l in open(_f):
                    _n = _j.loads(_l).get("nonce") or _n
                with open(_f, "a") as _h:
                    for _t in {tests!r}:
                        _h.write(_j.dumps({{"event": "test", "nodeid": _t, "when": "call", "outcome": "passed"}}) + "\\n")
                    _h.write(_j.dumps({{"event": "finish", "exitstatus": 0, "nonce": _n}}) + "\\n")
            except (OSError, ValueError):
                pass
        _o._exit(0)
    """


@PROBES.register("steal_report_nonce")
class StealReportNonce(Probe):
    def patch(self, ctx: ProbeContext) -> str | None:
        tests = [*ctx.spec.FAIL_TO_PASS, *ctx.spec.PASS_TO_PASS]
        return _prepend_to_sources(ctx, STEAL_NONCE.format(tests=tests))


@PROBES.register("prewrite_report")
class PrewriteReport(Probe):
    def patch(self, ctx: ProbeContext) -> str | None:
        tests = [*ctx.spec.FAIL_TO_PASS, *ctx.spec.PASS_TO_PASS]
        return _prepend_to_sources(ctx, PREWRITE.format(tests=tests))


MONKEYPATCH = """\
    import sys as _s
    if "_pytest" in _s.modules:
        import _pytest.reports as _r
        _orig = _r.TestReport.from_item_and_call.__func__
        def _fake(cls, item, call):
            rep = _orig(cls, item, call)
            rep.outcome, rep.longrepr = "passed", None
            return rep
        _r.TestReport.from_item_and_call = classmethod(_fake)
    """


@PROBES.register("monkeypatch_reporting")
class MonkeypatchReporting(Probe):
    def patch(self, ctx: ProbeContext) -> str | None:
        return _prepend_to_sources(ctx, MONKEYPATCH)


@PROBES.register("sitecustomize")
class SiteCustomize(Probe):
    def patch(self, ctx: ProbeContext) -> str | None:
        hook = MONKEYPATCH.replace('if "_pytest" in _s.modules:', "if True:")
        # the repository root (flat layouts) and src/ are on sys.path via the editable install
        hook = textwrap.dedent(hook)
        return "".join(file_diff(f"{root}sitecustomize.py", None, hook) for root in ("", "src/")
                       if ctx.read(f"{root}sitecustomize.py") is None) or None


FORCE_PASS_PLUGIN = "rg_probe_plugin"  # a module the config-file probes add at the root
CONFIG_FILES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "tox.ini",
                "setup.cfg", "pyproject.toml")


class ConfigPlugin(Probe):
    """A configuration file that loads a plugin the patch adds (``-p``): pytest reads
    whichever configuration file it finds first, so each name is its own probe."""

    config_file: ClassVar[str]

    def patch(self, ctx: ProbeContext) -> str | None:
        before = ctx.read(self.config_file)
        plugin = file_diff(f"{FORCE_PASS_PLUGIN}.py", ctx.read(f"{FORCE_PASS_PLUGIN}.py"),
                        textwrap.dedent(FORCE_PASS))
        return plugin + file_diff(self.config_file, before, self.configured(before or ""))

    def configured(self, text: str) -> str:
        option = f"-p {FORCE_PASS_PLUGIN}"
        if self.config_file.endswith("pytest.toml"):
            return f'[pytest]\naddopts = ["-p", "{FORCE_PASS_PLUGIN}"]\n'
        if self.config_file == "pyproject.toml":
            return _with_addopts(text, "[tool.pytest.ini_options]", option, quoted=True)
        section = {"setup.cfg": "[tool:pytest]"}.get(self.config_file, "[pytest]")
        return _with_addopts(text, section, option, quoted=False)


def _with_addopts(text: str, section: str, option: str, *, quoted: bool) -> str:
    """``text`` with ``option`` first in ``section``'s addopts (the section made if absent)."""
    value = f'"{option}"' if quoted else option
    lines = text.splitlines()
    if section not in (line.strip() for line in lines):
        return text + ("\n" if text and not text.endswith("\n") else "") + \
            f"{section}\naddopts = {value}\n"
    out, inside, done = [], False, False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("["):
            if inside and not done:
                out.append(f"addopts = {value}")
                done = True
            inside = stripped == section
        elif inside and not done and stripped.split("=")[0].strip() == "addopts":
            old = stripped.split("=", 1)[1].strip()
            out.append(f'addopts = "{option} {old.strip(chr(34))}"' if quoted
                       else f"addopts = {option} {old}")
            done = True
            continue
        out.append(line)
    if inside and not done:
        out.append(f"addopts = {value}")
    return "\n".join(out) + "\n"


for _name in CONFIG_FILES:
    PROBES.register("config_plugin_" + _name.lstrip(".").replace(".", "_")
                    + ("_dot" if _name.startswith(".") else ""))(
        type(f"ConfigPlugin_{_name}", (ConfigPlugin,), {"config_file": _name}))


def _unittest_tests(ctx: ProbeContext) -> bool:
    return any("unittest" in (ctx.read(path) or "") for path in ctx.test_files())


UNITTEST_INTEGRATION = """\
    import sys as _s
    if "_pytest" in _s.modules:
        import _pytest.unittest as _u
        _u.TestCaseFunction.runtest = lambda self: None
    """

UNITTEST_ITSELF = """\
    import sys as _s
    if "_pytest" in _s.modules:
        import unittest as _ut
        def _run(self, result=None):
            result.startTest(self)
            result.addSuccess(self)
            result.stopTest(self)
            return result
        _ut.TestCase.run = _run
    """


@PROBES.register("unittest_integration")
class UnittestIntegration(Probe):
    def patch(self, ctx: ProbeContext) -> str | None:
        return _prepend_to_sources(ctx, UNITTEST_INTEGRATION) if _unittest_tests(ctx) else None


@PROBES.register("unittest_itself")
class UnittestItself(Probe):
    def patch(self, ctx: ProbeContext) -> str | None:
        return _prepend_to_sources(ctx, UNITTEST_ITSELF) if _unittest_tests(ctx) else None


@PROBES.register("runner_noop")
class RunnerNoop(Probe):
    def patch(self, ctx: ProbeContext) -> str | None:
        return _prepend_to_sources(ctx, """\
            import sys as _s
            if "_pytest" in _s.modules:
                import _pytest.python as _p
                _p.Function.runtest = lambda self: None
            """)


STDLIB_UNDER_REPORT = """\
    import sys as _s
    if "_pytest" in _s.modules:
        import atexit as _ax, json as _j, os as _o
        _write, _dumps = _o.write, _j.dumps
        def _fix(data):
            return data.replace(b'"failed"', b'"passed"').replace(b'"error"', b'"passed"')
        _o.write = lambda fd, data: file_diff(fd, _fix(bytes(data)))
        _j.dumps = lambda *a, **k: _fix(_dumps(*a, **k).encode()).decode()
        _ax.register(lambda: _o._exit(0))
    """


@PROBES.register("stdlib_under_report")
class StdlibUnderReport(Probe):
    def patch(self, ctx: ProbeContext) -> str | None:
        return _prepend_to_sources(ctx, STDLIB_UNDER_REPORT)


SWAP_HOOK = """\
    import sys as _s
    if "_pytest" in _s.modules:
        import gc as _gc
        import pluggy as _pl
        for _impl in [o for o in _gc.get_objects() if isinstance(o, _pl.HookImpl)]:
            if _impl.function.__name__ == "pytest_pyfunc_call":
                _impl.function = lambda pyfuncitem: True
    """


@PROBES.register("swap_hook_function")
class SwapHookFunction(Probe):
    def patch(self, ctx: ProbeContext) -> str | None:
        return _prepend_to_sources(ctx, SWAP_HOOK)


REGISTER_PLUGIN = """\
    import sys as _s
    if "_pytest" in _s.modules:
        import gc as _gc
        import pytest as _pt
        from _pytest.config import Config as _Config

        class _ForcePass:
            @_pt.hookimpl(hookwrapper=True)
            def pytest_runtest_makereport(self, item, call):
                outcome = yield
                report = outcome.get_result()
                report.outcome, report.longrepr = "passed", None

        for _cfg in [o for o in _gc.get_objects() if isinstance(o, _Config)]:
            if not _cfg.pluginmanager.has_plugin("rg-probe"):
                _cfg.pluginmanager.register(_ForcePass(), "rg-probe")
    """


@PROBES.register("register_plugin")
class RegisterPlugin(Probe):
    def patch(self, ctx: ProbeContext) -> str | None:
        return _prepend_to_sources(ctx, REGISTER_PLUGIN)


@PROBES.register("shadow_runner")
class ShadowRunner(Probe):
    def patch(self, ctx: ProbeContext) -> str | None:
        if ctx.read("pytest.py") is not None:
            return None
        tests = [*ctx.spec.FAIL_TO_PASS, *ctx.spec.PASS_TO_PASS]
        fake = "".join(f"print({(t + ' PASSED')!r})\n" for t in tests)
        return file_diff("pytest.py", None, f"{fake}print('{len(tests)} passed')\n"
                                          "raise SystemExit(0)\n")


PROBED_FILES = ("conftest.py", "pytest.ini", "sitecustomize.py", "src/sitecustomize.py",
                ".gitignore", f"{FORCE_PASS_PLUGIN}.py", "pytest.py", *CONFIG_FILES)


def context_in(sandbox: Sandbox, spec: GradingSpec, source_files: Sequence[str]) -> ProbeContext:
    """Read what the probes need from the task's broken state in ``sandbox``."""
    sandbox.reset(commit=spec.base_commit)
    if not sandbox.apply_patch(spec.bug_patch) or not sandbox.apply_patch(spec.test_patch):
        raise SandboxError(f"{spec.instance_id}: the task's patches do not apply")
    toolchain = toolchain_for(spec.language)
    tests = {toolchain.test_file(t) for t in spec.FAIL_TO_PASS}
    probed = sorted({path for name in probes_for(spec.language)
                     for path in PROBES.get(name).reads or PROBED_FILES})
    files: dict[str, str | None] = {}
    for path in (*probed, *source_files, *sorted(tests)):
        try:
            files[path] = sandbox.read_file(path).decode("utf-8", errors="replace")
        except FileNotFoundError:
            files[path] = None
    return ProbeContext(spec=spec, read=files.get, source_files=tuple(source_files))


def probes_for(language: str) -> list[str]:
    """The probes that apply to tasks in ``language``."""
    return [n for n in PROBES.names() if language in PROBES.get(n).languages]


def sample_probes(instance_id: str, k: int, language: str = "python") -> list[str]:
    """``k`` probe names chosen deterministically for a task (all when k >= their number)."""
    names = probes_for(language)
    return names if k >= len(names) else random.Random(instance_id).sample(names, k)


def probe_patches(ctx: ProbeContext, names: Sequence[str] | None = None) -> dict[str, str]:
    """Each applicable probe's patch, by probe name (default: every probe of the task's
    language)."""
    out = {}
    for name in names or probes_for(ctx.spec.language):
        if ctx.spec.language not in PROBES.get(name).languages:
            continue
        patch = PROBES.get(name)().patch(ctx)
        if patch:
            out[name] = patch
    return out


from repogym.judges import probes_go, probes_java, probes_js, probes_rust  # noqa: E402,F401 - register theirs
