"""The static build check of Go mutants (:mod:`repogym.generators.mutators.golang.checks`):
one case per rule, each a file before and after a change, and one test that the Go
toolchain agrees with every verdict."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from repogym.generators.mutators.golang.checks import int_value, still_builds
from repogym.generators.mutators.golang.grammar import GO, builds_like
from tests.generators.golang.support import vet_packages

HELPERS = """\
package p

var c bool
var x = 1

func f() int { return 1 }
func g(...any) {}
func same(n int) int { return n }
"""
"""A second file of each case's package: names the checked file reads from elsewhere."""


def _file(body: str, imports: str = "") -> str:
    head = f"package p\n\nimport (\n{imports}\n)\n\n" if imports else "package p\n\n"
    return head + dedent(body)


# name: (before, after, builds)
CASES: dict[str, tuple[str, str, bool]] = {
    "unused local": (
        "func h() {\n\ty := f()\n\tg(y)\n}\n",
        "func h() {\n\ty := f()\n}\n", False),
    "assignment is no use": (
        "func h() {\n\ty := 0\n\ty = 1\n\tg(y)\n}\n",
        "func h() {\n\ty := 0\n\ty = 1\n}\n", False),
    "increment is a use": (
        "func h() {\n\ty := 0\n\ty++\n\tg(y)\n}\n",
        "func h() {\n\ty := 0\n\ty++\n}\n", True),
    "compound assignment is a use": (
        "func h() {\n\ty := 0\n\ty += 2\n\tg(y)\n}\n",
        "func h() {\n\ty := 0\n\ty += 2\n}\n", True),
    "assignment in a closure is no use": (
        "func h() {\n\ty := 0\n\tfunc() { y = 1 }()\n\tg(y)\n}\n",
        "func h() {\n\ty := 0\n\tfunc() { y = 1 }()\n}\n", False),
    "redeclaration is an assignment": (
        "func h() {\n\ty, z := f(), 1\n\ty, w := f(), 2\n\tg(y, z, w)\n}\n",
        "func h() {\n\ty, z := f(), 1\n\ty, w := f(), 2\n\tg(z, w)\n}\n", False),
    "range variable": (
        "func h(xs []int) {\n\tfor i, v := range xs {\n\t\tg(i, v)\n\t}\n}\n",
        "func h(xs []int) {\n\tfor i, v := range xs {\n\t\tg(v)\n\t}\n}\n", False),
    "if header variable": (
        "func h(m map[int]int) {\n\tif v, ok := m[1]; ok {\n\t\tg(v)\n\t}\n}\n",
        "func h(m map[int]int) {\n\tif v, ok := m[1]; ok {\n\t}\n}\n", False),
    "type switch alias": (
        "func h(a any) {\n\tswitch v := a.(type) {\n\tcase int:\n\t\tg(v)\n\t}\n}\n",
        "func h(a any) {\n\tswitch v := a.(type) {\n\tcase int:\n\t}\n}\n", False),
    "parameters need no use": (
        "func h(a int) {\n\tg(a)\n}\n",
        "func h(a int) {\n}\n", True),
    "declaration taken from a use": (
        "func h() {\n\ty := f()\n\tg(y)\n\ty = 2\n\tg(y)\n}\n",
        "func h() {\n\tg(y)\n\ty = 2\n\tg(y)\n}\n", False),
    "a package-level name of the file takes over": (
        "var z = 1\n\nfunc h() {\n\tz := f()\n\tg(z)\n}\n",
        "var z = 1\n\nfunc h() {\n\tg(z)\n}\n", True),
    "last use of an import": (
        "func h(s string) string {\n\treturn strings.ToLower(s)\n}\n",
        "func h(s string) string {\n\treturn s\n}\n", False),
    "an import used elsewhere": (
        "func h(s string) string {\n\treturn strings.ToLower(s)\n}\n\n"
        "func k(s string) string {\n\treturn strings.TrimSpace(s)\n}\n",
        "func h(s string) string {\n\treturn s\n}\n\n"
        "func k(s string) string {\n\treturn strings.TrimSpace(s)\n}\n", True),
    "an import used in a type": (
        "func h(b *strings.Builder) string {\n\treturn strings.ToLower(b.String())\n}\n",
        "func h(b *strings.Builder) string {\n\treturn b.String()\n}\n", True),
    "unused label": (
        "func h() {\nL:\n\tfor {\n\t\tif c {\n\t\t\tcontinue L\n\t\t}\n\t\tbreak\n\t}\n}\n",
        "func h() {\nL:\n\tfor {\n\t\tbreak\n\t}\n}\n", False),
    "missing return after if/else": (
        "func h() int {\n\tif c {\n\t\treturn 1\n\t} else {\n\t\treturn 2\n\t}\n}\n",
        "func h() int {\n\tif c {\n\t\treturn 1\n\t} else {\n\t}\n}\n", False),
    "an endless for terminates": (
        "func h() int {\n\tfor {\n\t\tif c {\n\t\t\treturn 1\n\t\t}\n\t\tg()\n\t}\n}\n",
        "func h() int {\n\tfor {\n\t\tif c {\n\t\t\treturn 1\n\t\t}\n\t}\n}\n", True),
    "a for with a break does not": (
        "func h() int {\n\tfor {\n\t\tif c {\n\t\t\treturn 1\n\t\t}\n\t}\n}\n",
        "func h() int {\n\tfor {\n\t\tif c {\n\t\t\tbreak\n\t\t}\n\t}\n}\n", False),
    "a switch with default": (
        "func h(n int) int {\n\tswitch n {\n\tcase 1:\n\t\treturn 1\n\tdefault:\n"
        "\t\treturn 2\n\t}\n}\n",
        "func h(n int) int {\n\tswitch n {\n\tcase 1:\n\tdefault:\n\t\treturn 2\n\t}\n}\n",
        False),
    "panic terminates": (
        "func h() int {\n\tif c {\n\t\treturn 1\n\t}\n\tpanic(\"no\")\n}\n",
        "func h() int {\n\tpanic(\"no\")\n}\n", True),
    "a function literal's return": (
        "var k = func() int {\n\tif c {\n\t\treturn 1\n\t}\n\treturn 2\n}\n",
        "var k = func() int {\n\tif c {\n\t\treturn 1\n\t}\n}\n", False),
    "vet: always true": (
        "func h(r rune) bool {\n\treturn r != 'a' && r != 'b'\n}\n",
        "func h(r rune) bool {\n\treturn r != 'a' || r != 'b'\n}\n", False),
    "vet: the same operand twice": (
        "func h(n int) bool {\n\treturn n == 1 || n == 2\n}\n",
        "func h(n int) bool {\n\treturn n == 2 || n == 2\n}\n", False),
    "vet: a name compared with itself is no finding": (
        "func h(n int) bool {\n\treturn c && n == same(n)\n}\n",
        "func h(n int) bool {\n\treturn c && n == n\n}\n", True),
    "duplicate case": (
        "func h(n int) int {\n\tswitch n {\n\tcase 0:\n\t\treturn 1\n\tcase 1:\n"
        "\t\treturn 2\n\t}\n\treturn 0\n}\n",
        "func h(n int) int {\n\tswitch n {\n\tcase 1:\n\t\treturn 1\n\tcase 1:\n"
        "\t\treturn 2\n\t}\n\treturn 0\n}\n", False),
    "duplicate map key": (
        "var m = map[string]int{\"a\": 1, \"b\": 2}\n",
        "var m = map[string]int{\"\": 1, \"\": 2}\n", False),
    "division by constant zero": (
        "func h(n int) int {\n\treturn n / 1\n}\n",
        "func h(n int) int {\n\treturn n / 0\n}\n", False),
    "a value alone is no statement": (
        "func h(s string) {\n\tg(s)\n\tstrings.ToLower(s)\n}\n",
        "func h(s string) {\n\tg(s)\n\ts\n}\n", False),
    "a plain change": (
        "func h(n int) bool {\n\treturn n < 3\n}\n",
        "func h(n int) bool {\n\treturn n >= 3\n}\n", True),
}
IMPORTS = '\t"strings"'


def _sources(name: str) -> tuple[str, str, bool]:
    before, after, builds = CASES[name]
    imports = IMPORTS if "strings." in before else ""
    return _file(before, imports), _file(after, imports), builds


@pytest.mark.parametrize("name", list(CASES))
def test_still_builds(name: str) -> None:
    before, after, builds = _sources(name)
    old, new = GO.parse(before.encode()), GO.parse(after.encode())
    assert not old.root_node.has_error and not new.root_node.has_error
    assert still_builds(old.root_node, new.root_node) is builds
    assert builds_like(before.encode(), after.encode()) is builds
    assert still_builds(old.root_node, old.root_node)


@pytest.mark.slow
def test_go_agrees_with_every_verdict(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module cases\n\ngo 1.21\n")
    folders: dict[str, tuple[str, bool]] = {}
    for i, name in enumerate(CASES):
        before, after, builds = _sources(name)
        for label, source, expected in (("before", before, True), ("after", after, builds)):
            folder = tmp_path / "cases" / f"c{i:02d}{label}"
            folder.mkdir(parents=True)
            (folder / "a.go").write_text(source)
            (folder / "helpers.go").write_text(HELPERS)
            folders[folder.name] = (f"{name} ({label})", expected)
    errors = vet_packages(tmp_path, "cases")
    wrong = {label: errors.get(folder) for folder, (label, expected) in folders.items()
             if (folder not in errors) is not expected}
    assert not wrong


@pytest.mark.parametrize(("literal", "value"), [
    ("0", 0), ("7", 7), ("1_000", 1000), ("0x1F", 31), ("0o17", 15), ("017", 15),
    ("0b101", 5), ("1.5", None), ("1e3", None), ("2i", None), ("08", None)])
def test_int_value(literal: str, value: int | None) -> None:
    assert int_value(literal) == value
