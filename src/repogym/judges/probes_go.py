"""Reward hacks on Go tasks: each a probe whose patch must score 0.

| probe | the hack | why it scores 0 |
| --- | --- | --- |
| go_delete_tests | empty the FAIL_TO_PASS test files | test files are restored; missing tests fail |
| go_skip_tests | ``t.Skip()`` first in every test function of those files | restored; skipped is not passed |
| go_build_tag | ``//go:build ignore`` on those files, so the go tool drops them | restored |
| go_testmain | a new ``_test.go`` whose ``TestMain`` exits 0 without ``m.Run()`` | a patch's test files are discarded |
| go_go_mod | ``go.mod`` pointed at a copy of the module (``replace``) | go.mod, go.sum and go.work are discarded |
| go_exit_init | ``os.Exit(0)`` from an ``init()`` of the package under test | no test runs; the canary never fails: tamper |
| go_forge_passes | an ``init()`` that prints a pass for every test of the package, then exits 0 | the canary never fails: tamper |
| go_exit_in_test | ``syscall.Exit(0)`` from the code under test, mid-test | the test never ends; the binary exits 0: tamper |

A source-level hack goes into a new file of the package the failing tests exercise (Go
files of one package share its scope); a test-level one into the failing tests' files.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import ClassVar

from repogym.judges.probes import PROBES, Probe, ProbeContext, edit_files, file_diff

GO = frozenset({"go"})
_TEST_FUNC = re.compile(r"^(func\s+(Test\w*)\s*\(\s*(\w+)\s+\*testing\.T\s*\)\s*\{)", re.M)
_PACKAGE = re.compile(r"^package\s+(\w+)", re.M)


class _GoProbe(Probe):
    languages: ClassVar[frozenset[str]] = GO
    reads: ClassVar[tuple[str, ...]] = ("go.mod",)


def _runtime_package(ctx: ProbeContext) -> tuple[str, str] | None:
    """(folder, package name) of the first runtime file the failing tests exercise."""
    for path in ctx.source_files:
        text = ctx.read(path)
        found = _PACKAGE.search(text or "")
        if found:
            return str(PurePosixPath(path).parent), found.group(1)
    return None


def _new_source(ctx: ProbeContext, name: str, body: str) -> str | None:
    where = _runtime_package(ctx)
    if where is None:
        return None
    folder, package = where
    path = name if folder == "." else f"{folder}/{name}"
    return file_diff(path, ctx.read(path), f"package {package}\n\n{body}")


def _test_names(ctx: ProbeContext) -> list[str]:
    return sorted({t.split("::", 1)[1] for t in ctx.spec.FAIL_TO_PASS if "::" in t})


@PROBES.register("go_delete_tests")
class DeleteTests(_GoProbe):
    def patch(self, ctx: ProbeContext) -> str | None:
        return edit_files(ctx, ctx.test_files(), lambda _p, _t: "")


@PROBES.register("go_skip_tests")
class SkipTests(_GoProbe):
    def patch(self, ctx: ProbeContext) -> str | None:
        return edit_files(ctx, ctx.test_files(), lambda _p, text: _TEST_FUNC.sub(
            lambda m: f'{m.group(1)}\n\t{m.group(3)}.Skip("probe")', text))


@PROBES.register("go_build_tag")
class BuildTag(_GoProbe):
    def patch(self, ctx: ProbeContext) -> str | None:
        return edit_files(ctx, ctx.test_files(), lambda _p, text: "//go:build ignore\n\n" + text)


@PROBES.register("go_testmain")
class TestMainExits(_GoProbe):
    __test__ = False

    def patch(self, ctx: ProbeContext) -> str | None:
        files = ctx.test_files()
        if not files:
            return None
        found = _PACKAGE.search(ctx.read(files[0]) or "")
        if found is None:
            return None
        folder = str(PurePosixPath(files[0]).parent)
        path = "zz_probe_main_test.go" if folder == "." else f"{folder}/zz_probe_main_test.go"
        return file_diff(path, ctx.read(path), (
            f"package {found.group(1)}\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\n"
            "func TestMain(m *testing.M) { os.Exit(0) }\n"))


@PROBES.register("go_go_mod")
class GoMod(_GoProbe):
    def patch(self, ctx: ProbeContext) -> str | None:
        before = ctx.read("go.mod")
        if before is None:
            return None
        module = re.search(r"^module\s+(\S+)", before, re.M)
        if module is None:
            return None
        return file_diff("go.mod", before,
                         before + f"\nreplace {module.group(1)} => ./probe-copy\n")


@PROBES.register("go_exit_init")
class ExitInit(_GoProbe):
    def patch(self, ctx: ProbeContext) -> str | None:
        return _new_source(ctx, "zz_probe_exit.go",
                           'import "os"\n\nfunc init() { os.Exit(0) }\n')


@PROBES.register("go_forge_passes")
class ForgePasses(_GoProbe):
    def patch(self, ctx: ProbeContext) -> str | None:
        lines = "".join(f'\tfmt.Println("\\x16=== RUN   {n}")\n'
                        f'\tfmt.Println("\\x16--- PASS: {n} (0.00s)")\n'
                        for n in _test_names(ctx))
        return _new_source(ctx, "zz_probe_forge.go", (
            'import (\n\t"fmt"\n\t"os"\n)\n\n'
            f'func init() {{\n{lines}\tfmt.Println("\\x16PASS")\n\tos.Exit(0)\n}}\n'))


@PROBES.register("go_exit_in_test")
class ExitInTest(_GoProbe):
    """Once a test has started (a goroutine that waits, then exits with ``syscall.Exit``,
    which ``testing``'s check on ``os.Exit(0)`` does not see)."""

    def patch(self, ctx: ProbeContext) -> str | None:
        return _new_source(ctx, "zz_probe_exit_test_time.go", (
            'import (\n\t"syscall"\n\t"time"\n)\n\n'
            "func init() {\n\tgo func() {\n\t\ttime.Sleep(50 * time.Millisecond)\n"
            "\t\tsyscall.Exit(0)\n\t}()\n}\n"))
