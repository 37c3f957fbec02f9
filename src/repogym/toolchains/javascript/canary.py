"""Canaries: checks that must fail, planted beside the tests a graded run selects.

In JavaScript the code under test shares the test's realm: when it is loaded it can replace
node's ``assert`` functions, override ``expect``'s matchers (``expect.extend``) or the global
``expect`` itself, and every check after that passes. A report cannot show that. So a run
that grades a patch (``check_runner``) plants, next to each selected test file, a file that
loads what that test file loads (its ``import`` and ``require`` statements, copied) and then
makes checks in the same styles that are certain to fail: ``expect(1).toBe(2)``,
``assert.strictEqual(1, 2)``, ... . They run in the same run; any of them that passes means
the checks were neutralised, and the run is not believed.

This stops generic hacks (the probes ``js_assert_noop``, ``js_expect_accepts``,
``js_expect_global``), not a patch written against this file (which could recognise the
canary's tests and spare them): the random names make that a targeted attack.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import tree_sitter_javascript
import tree_sitter_typescript
from tree_sitter import Language, Node, Parser

from repogym.schemas.records import Outcome, TestRun
from repogym.toolchains.javascript.report import test_id

_JS = Language(tree_sitter_javascript.language())
_TS = Language(tree_sitter_typescript.language_typescript())
_TSX = Language(tree_sitter_typescript.language_tsx())
_ASSERT_BINDING = re.compile(
    r"(?:const|let|var)\s+(\w+)\s*=\s*require\(\s*['\"](?:node:)?assert(?:/strict)?['\"]\s*\)"
    r"|import\s+(?:\*\s+as\s+)?(\w+)\s+from\s+['\"](?:node:)?assert(?:/strict)?['\"]")
_WORDS = ("handles", "keeps", "returns", "parses", "formats", "checks", "maps", "reads")
_UVU_ASSERT = re.compile(
    r"import\s+\*\s+as\s+(\w+)\s+from\s+['\"]uvu/assert['\"]"
    r"|(?:const|let|var)\s+(\w+)\s*=\s*require\(\s*['\"]uvu/assert['\"]\s*\)")
_UVU_NAMED = re.compile(r"import\s*\{([^}]*)\}\s*from\s*['\"]uvu/assert['\"]"
                        r"|(?:const|let|var)\s*\{([^}]*)\}\s*=\s*require\(\s*['\"]uvu/assert")
_AVA = re.compile(r"import\s+(\w+)\s+from\s+['\"]ava['\"]"
                  r"|(?:const|let|var)\s+(\w+)\s*=\s*require\(\s*['\"]ava['\"]\s*\)")
CANARY_RUNNERS = frozenset({"jest", "vitest", "mocha", "uvu", "ava", "node-test", "tap"})


@dataclass
class Canary:
    """The canary files planted for one run and the ids of their tests."""

    files: dict[str, str] = field(default_factory=dict)  # repo-relative path -> text
    tests: list[str] = field(default_factory=list)

    def check(self, run: TestRun) -> TestRun:
        """``run`` without the canary's tests, and a problem for each that did not fail."""
        if not self.tests:
            return run
        wrong = [t for t in self.tests if (o := run.outcome(t)) is not None
                 and o in (Outcome.passed, Outcome.xpass)]
        missing = [t for t in self.tests if run.outcome(t) is None]
        problems = list(run.problems)
        if wrong:
            problems.append(f"checks that must fail passed ({len(wrong)} of {len(self.tests)}):"
                            " the code under test neutralised the assertions")
        if missing and run.finished and not wrong:
            problems.append(f"{len(missing)} canary check(s) did not run")
        results = {k: v for k, v in run.results.items() if k not in set(self.tests)}
        return run.model_copy(update={"results": results, "problems": tuple(problems),
                                      "collected": len(results)})


def plant(files: dict[str, str], runner: str) -> Canary:
    """A canary beside each test file (``files``: path -> text) for ``runner``."""
    canary = Canary()
    if runner not in CANARY_RUNNERS:
        return canary
    for path, text in sorted(files.items()):
        planted = {"uvu": _uvu, "ava": _ava, "node-test": _node_test,
                   "tap": _tap}.get(runner, _one)(
            path, text)
        if planted is not None:
            where, body, ids = planted
            canary.files[where] = body
            canary.tests += ids
    return canary


def _one(path: str, text: str) -> tuple[str, str, list[str]] | None:
    checks = _checks(text)
    if not checks:
        return None
    where = _sibling(path)
    suite = f"{secrets.choice(_WORDS)} {secrets.token_hex(3)}"
    titles = [f"{secrets.choice(_WORDS)} case {secrets.token_hex(3)}" for _ in checks]
    lines = [*_loads(path, text), f"describe({_js(suite)}, () => {{"]
    lines += [f"  it({_js(t)}, () => {{ {c} }});" for t, c in zip(titles, checks)]
    lines.append("});")
    return where, "\n".join(lines) + "\n", [test_id(where, [suite, t]) for t in titles]


def _uvu(path: str, text: str) -> tuple[str, str, list[str]] | None:
    """uvu: tests registered with its default ``test`` and started with ``test.run()``."""
    checks = _uvu_checks(text)
    if not checks:
        return None
    where = _sibling(path)
    esm = bool(re.search(r"^\s*import\s", text, re.M))
    head = ("import { test as __rgTest } from 'uvu';" if esm
            else "const { test: __rgTest } = require('uvu');")
    titles = [f"{secrets.choice(_WORDS)} case {secrets.token_hex(3)}" for _ in checks]
    lines = [*_loads(path, text), head]
    lines += [f"__rgTest({_js(t)}, () => {{ {c} }});" for t, c in zip(titles, checks)]
    lines.append("__rgTest.run();")
    return where, "\n".join(lines) + "\n", [test_id(where, [t]) for t in titles]


def _ava(path: str, text: str) -> tuple[str, str, list[str]] | None:
    """ava: ``test(title, t => ...)`` with the binding the test file gives ava."""
    m = _AVA.search(text)
    if m is None:
        return None
    test = m.group(1) or m.group(2)
    checks = ["t.is(1, 2);", "t.deepEqual([1], [2]);", "t.true(false);"]
    where = _sibling(path)
    titles = [f"{secrets.choice(_WORDS)} case {secrets.token_hex(3)}" for _ in checks]
    lines = [*_loads(path, text)]
    lines += [f"{test}({_js(t)}, (t) => {{ {c} }});" for t, c in zip(titles, checks)]
    return where, "\n".join(lines) + "\n", [test_id(where, [t]) for t in titles]


def _node_test(path: str, text: str) -> tuple[str, str, list[str]] | None:
    """node's own runner: top-level ``test(...)`` from ``node:test``, checks with the test
    file's ``assert`` (or ``expect``-style checks where it uses them)."""
    checks = _checks(text)
    if not checks:
        return None
    where = _sibling(path)
    esm = bool(re.search(r"^\s*import\s", text, re.M))
    head = ("import { test as __rgTest } from 'node:test';" if esm
            else "const { test: __rgTest } = require('node:test');")
    titles = [f"{secrets.choice(_WORDS)} case {secrets.token_hex(3)}" for _ in checks]
    lines = [*_loads(path, text), head]
    lines += [f"__rgTest({_js(t)}, () => {{ {c} }});" for t, c in zip(titles, checks)]
    return where, "\n".join(lines) + "\n", [test_id(where, [t]) for t in titles]


def _tap(path: str, text: str) -> tuple[str, str, list[str]] | None:
    """node-tap: subtests of its root ``t``, each making one of its assertions (shared by
    every test object: patched in one, patched in all). The file runs in a process of its
    own, so one that exits before its checks (``process.exit(0)`` when the code under test
    loads) leaves them unreported."""
    if not re.search(r"""(?:from\s+|require\(\s*)['"]tap['"]""", text):
        return None
    where = _sibling(path)
    esm = bool(re.search(r"^\s*import\s", text, re.M))
    head = ("import { t as __rgTap } from 'tap';" if esm
            else "const { t: __rgTap } = require('tap');")
    checks = ["t.equal(1, 2);", "t.same([1], [2]);", "t.ok(false);",
              "t.strictSame({ a: 1 }, { a: 2 });", "t.match('a', /b/);"]
    titles = [f"{secrets.choice(_WORDS)} case {secrets.token_hex(3)}" for _ in checks]
    lines = [*_loads(path, text), head]
    lines += [f"__rgTap.test({_js(t)}, (t) => {{ {c} t.end(); }});"
              for t, c in zip(titles, checks)]
    return where, "\n".join(lines) + "\n", [test_id(where, [t]) for t in titles]


def _uvu_checks(text: str) -> list[str]:
    if m := _UVU_ASSERT.search(text):
        name = m.group(1) or m.group(2)
        return [f"{name}.is(1, 2);", f"{name}.equal([1], [2]);", f"{name}.ok(false);"]
    if m := _UVU_NAMED.search(text):
        names = {n.split(":")[-1].split(" as ")[-1].strip() for n in (m.group(1) or m.group(2)).split(",")}
        calls = {"is": "is(1, 2);", "equal": "equal([1], [2]);", "ok": "ok(false);",
                 "not": "not(true);"}
        return [c for n, c in calls.items() if n in names]
    return _checks(text)


def _checks(text: str) -> list[str]:
    """Checks certain to fail, in the styles the test file uses."""
    out: list[str] = []
    if re.search(r"\bexpect\s*\(", text):
        if re.search(r"\bexpect\s*\([^)]*\)\s*\.to\.", text):  # chai
            out += ["expect(1).to.equal(2);", "expect([1]).to.deep.equal([2]);"]
        else:
            out += ["expect(1).toBe(2);", "expect([1]).toEqual([2]);",
                    "expect({ a: 1 }).toStrictEqual({ a: 2 });", "expect('a').toMatch(/b/);"]
    for m in _ASSERT_BINDING.finditer(text):
        name = m.group(1) or m.group(2)
        out += [f"{name}.strictEqual(1, 2);", f"{name}.deepStrictEqual([1], [2]);",
                f"{name}.ok(false);"]
        if "assert/strict" not in m.group(0):
            out.append(f"{name}.equal(1, 2);")
        break
    return out


def _loads(path: str, text: str) -> list[str]:
    """The file's top-level ``import`` statements and ``require`` declarations, in order;
    each import followed by a bare ``import 'x'`` of its module, which TypeScript never
    elides (the canary uses none of the names, and an unused import is dropped)."""
    language = _TSX if path.endswith(".tsx") else _TS if re.search(r"\.[cm]?ts$", path) else _JS
    root = Parser(language).parse(text.encode()).root_node
    out: list[str] = []
    for node in root.named_children:
        if not _loads_something(node):
            continue
        out.append(_text(node))
        source = node.child_by_field_name("source")
        if node.type == "import_statement" and source is not None \
                and not re.match(r"import\s+type\b", _text(node)):
            out.append(f"import {_text(source)};")
    return out


def _loads_something(node: Node) -> bool:
    if node.type == "import_statement":
        return True
    if node.type in ("lexical_declaration", "variable_declaration", "expression_statement"):
        return "require(" in _text(node) and "=>" not in _text(node) \
            and "function" not in _text(node)
    return False


def _sibling(path: str) -> str:
    """A new file beside ``path`` that its runner's patterns still match."""
    p = PurePosixPath(path)
    stem = f"rg{secrets.token_hex(4)}"
    m = re.search(r"\.(test|spec)(\.[cm]?[jt]sx?)$", p.name)
    if m:
        name = f"{stem}.{m.group(1)}{m.group(2)}"
    elif {"test", "tests", "__tests__"}.intersection(p.parts[:-1]):
        name = f"{stem}{_suffix(p)}"
    else:  # a test file named for itself (test.js): the sibling says what it is
        name = f"{stem}.test{_suffix(p)}"
    return str(p.with_name(name))


def _suffix(p: PurePosixPath) -> str:
    return "".join(p.suffixes[-1:]) or ".js"


def _js(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


__all__ = ["CANARY_RUNNERS", "Canary", "plant"]
