"""The call tracer inside a real pytest process (no sandbox), and its host side."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from repogym.patches import unified_diff
from repogym.schemas.calls import CallKind, Target, TargetKind
from repogym.toolchains.python_calls import (
    PLUGIN_NAME,
    apply_file_patch,
    call_tracer,
    changed_functions,
    parse_calls,
)

CORE = '''\
import functools


def _suffix(n):
    n = abs(n)
    if n % 100 in (11, 12, 13):
        return "st"
    return {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def ordinal(number):
    return _suffix(number)


def apply(f, x, times=1, *, twice=False):
    for _ in range(times * (2 if twice else 1)):
        x = f(x)
    return x + len(_suffix(1)) * 0


def _logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


@_logged
def total(items):
    return sum(items) - 1


class Box:
    def __init__(self, w, h):
        self.w, self.h = w, h

    @property
    def area(self):
        return _suffix(self.w) and self.w + self.h

    def grow(self, k):
        return Box(self.w * k, _suffix(k) and self.h)

    def fail(self, key):
        _suffix(1)
        raise KeyError(key)
'''

TESTS = '''\
import sys
import pytest
from pkg import Box, apply, ordinal, total


class Local:
    pass


def test_ordinal():
    assert ordinal(-11) == "th"


def test_apply_lambda():
    assert apply(lambda v: v + 1, 1, 3) == 3


def test_methods():
    box = Box(2, 3)
    assert box.area == 5
    assert box.grow(2).w == 4


def test_raises():
    with pytest.raises(KeyError):
        Box(1, 1).fail(Local())


def test_wrapped():
    assert total([1, 2]) == 2


def test_not_selected():
    assert ordinal(2) == "nd"


SEEN = []


@pytest.fixture
def counting():
    previous = sys.gettrace()
    def tracer(frame, event, arg):
        SEEN.append(frame.f_code.co_name)
        return None
    sys.settrace(tracer)
    yield
    sys.settrace(previous)


def test_chained(counting):
    assert ordinal(1) == "st"
    assert "ordinal" in SEEN


def test_restored():
    assert sys.gettrace() is None
'''

SELECTED = ["tests/test_pkg.py::" + n for n in
            ("test_ordinal", "test_apply_lambda", "test_methods", "test_raises", "test_wrapped",
             "test_chained", "test_restored")]


def project(root: Path) -> None:
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg/__init__.py").write_text("from pkg._core import Box, apply, ordinal, total\n")
    (root / "pkg/_core.py").write_text(CORE)
    (root / "tests/test_pkg.py").write_text(TESTS)


def traced_run(root: Path, tests: list[str], targets: list[Target], timeout: float = 60,
               **limits: int) -> tuple[str, int]:
    plugin = call_tracer(tests, targets, **limits)
    scratch = root.parent / "scratch"
    scratch.mkdir(exist_ok=True)
    (scratch / "rg_calls_x.py").write_text(plugin.source)
    out = scratch / "calls.out"
    (scratch / "rg_calls_x.json").write_text(json.dumps({**plugin.config, "out": str(out)}))
    env = {**os.environ, "PYTHONPATH": f"{scratch}{os.pathsep}{root}"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "rg_calls_x",
                           "-p", "no:cacheprovider"], cwd=root, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert not (scratch / "rg_calls_x.json").exists(), "the tracer deletes its settings"
    return (out.read_text() if out.exists() else ""), proc.returncode


def core_targets() -> list[Target]:
    return changed_functions(unified_diff("pkg/_core.py", CORE, CORE.replace(
        '        return "st"\n', '        return "th"\n')), lambda p: CORE)


def test_changed_functions_on_both_sides_of_a_patch():
    before = ("import os\n\nLIMIT = 3\n\n\nclass Stack:\n    size = 1\n\n    def push(self, x):\n"
              "        return x\n\n\ndef outer():\n    def inner():\n        return 1\n"
              "    return inner\n")
    after = (before.replace("LIMIT = 3", "LIMIT = 4").replace("size = 1", "size = 2")
             .replace("        return 1\n", "        return 2\n")
             .replace("        return x\n", "        y = x\n        return y\n"))
    after += "\n\n@staticmethod\ndef added():\n    return 0\n"
    targets = changed_functions(unified_diff("m.py", before, after), {"m.py": before}.get)
    found = {(t.qualname, t.kind) for t in targets}
    assert found == {("<module>", TargetKind.module), ("Stack", TargetKind.klass),
                     ("Stack.push", TargetKind.function),
                     ("outer.<locals>.inner", TargetKind.function),
                     ("added", TargetKind.function)}
    push = [t for t in targets if t.qualname == "Stack.push"]
    assert {(t.first_line, t.last_line) for t in push} == {(9, 10), (9, 11)}  # old, new side
    added = next(t for t in targets if t.qualname == "added")
    assert added.first_line == after.splitlines().index("@staticmethod") + 1


def test_a_new_file_and_non_python_files():
    patch = unified_diff("pkg/new.py", "", "def f():\n    return 1\n") + unified_diff(
        "README.md", "a\n", "b\n")
    targets = changed_functions(patch, lambda p: None)
    assert [(t.path, t.qualname) for t in targets] == [("pkg/new.py", "f")]


def test_apply_file_patch_gives_the_new_side():
    old = "".join(f"line {i}\n" for i in range(1, 40))
    new = old.replace("line 5\n", "line five\n").replace("line 30\n", "line 30\nadded\n")
    new = "first\n" + new.replace("line 39\n", "")
    assert apply_file_patch(old, unified_diff("f.py", old, new), "f.py") == new


def test_tracer_in_a_real_pytest_run(tmp_path: Path):
    project(tmp_path / "proj")
    raw, code = traced_run(tmp_path / "proj", SELECTED, core_targets())
    trace = parse_calls(raw)
    calls = {t.split("::")[1]: [(c.call, c.kind, c.result, c.raised) for c in cs]
             for t, cs in trace.calls.items()}
    assert calls["test_ordinal"] == [("pkg.ordinal(-11)", CallKind.function, "'st'", None)]
    assert calls["test_apply_lambda"] == [("pkg.apply(<function>, 1, 3)", CallKind.function,
                                           "4", None)]
    assert calls["test_methods"] == [
        ("pkg.Box.area", CallKind.property, "5", None),
        ("pkg.Box.grow(2)", CallKind.method, "<Box w=4, h=3>", None)]
    assert calls["test_raises"] == [("pkg.Box.fail(<object>)", CallKind.method, None,
                                     "KeyError: <object>")]
    assert "test_not_selected" not in calls  # only the tests it is told about
    assert "test_wrapped" not in calls  # total() reaches no target
    assert calls["test_chained"] == [("pkg.ordinal(1)", CallKind.function, "'st'", None)]
    shown = " ".join(" ".join([*c.args, c.result or "", c.raised or "", c.receiver or ""])
                     for cs in trace.calls.values() for c in cs)
    assert "0x" not in shown and "Local" not in shown and "lambda" not in shown
    assert all(c.reached == ("pkg/_core.py::_suffix",) for cs in trace.calls.values() for c in cs)
    box = trace.calls["tests/test_pkg.py::test_methods"][1]
    assert box.receiver == "<Box w=2, h=3>" and box.args == ("2",)
    assert code == 1  # the assertions fail with the bug; the tracer changes no outcome


def test_a_wrapper_is_named_after_what_it_wraps(tmp_path: Path):
    project(tmp_path / "proj")
    targets = changed_functions(unified_diff("pkg/_core.py", CORE, CORE.replace(
        "return sum(items) - 1", "return sum(items)")), lambda p: CORE)
    raw, _ = traced_run(tmp_path / "proj", ["tests/test_pkg.py::test_wrapped"], targets)
    (call,) = parse_calls(raw).calls["tests/test_pkg.py::test_wrapped"]
    assert (call.call, call.result) == ("pkg.total([1, 2])", "2")


def test_a_call_that_never_returns_is_kept(tmp_path: Path):
    project(tmp_path / "proj")
    hang = CORE.replace('        return "st"\n', '        while True:\n            pass\n')
    (tmp_path / "proj/pkg/_core.py").write_text(hang)
    targets = changed_functions(unified_diff("pkg/_core.py", CORE, hang), lambda p: CORE)
    try:
        traced_run(tmp_path / "proj", ["tests/test_pkg.py::test_ordinal"], targets, timeout=5)
    except subprocess.TimeoutExpired:
        pass
    raw = (tmp_path / "scratch/calls.out").read_text()
    (call,) = parse_calls(raw).calls["tests/test_pkg.py::test_ordinal"]
    assert call.call == "pkg.ordinal(-11)" and not call.finished


def test_calls_per_test_are_capped(tmp_path: Path):
    project(tmp_path / "proj")
    (tmp_path / "proj/tests/test_many.py").write_text(
        "from pkg import ordinal\n\ndef test_many():\n"
        "    assert [ordinal(n) for n in range(500)]\n")
    raw, _ = traced_run(tmp_path / "proj", ["tests/test_many.py::test_many"], core_targets(),
                        max_calls=5)
    assert len(parse_calls(raw).calls["tests/test_many.py::test_many"]) == 5


def test_past_its_budget_the_tracer_steps_aside_without_inventing_a_hang(tmp_path: Path):
    project(tmp_path / "proj")
    (tmp_path / "proj/tests/test_long.py").write_text(
        "from pkg import apply, ordinal\n\ndef test_long():\n    assert ordinal(-11)\n"
        "    assert apply(lambda v: v + 1 + 0 * len(ordinal(v)), 0, 5000) == 5000\n"
        "    assert ordinal(-12)\n")
    raw, _ = traced_run(tmp_path / "proj", ["tests/test_long.py::test_long"], core_targets(),
                        max_events=1000)
    (call,) = parse_calls(raw).calls["tests/test_long.py::test_long"]  # apply() was dropped
    assert call.call == "pkg.ordinal(-11)" and call.finished and '"drop"' in raw
    assert "ordinal(-12)" not in raw  # and nothing after it was traced


def test_parse_calls_is_defensive():
    good = {"event": "call", "test": "t", "index": 0, "function": "pkg.f", "kind": "function",
            "args": ["<X object at 0xdeadbeef>"], "reached": ["a::f"], "result": "1" * 5000}
    text = "\n".join(["not json", json.dumps({"event": "call", "test": "t"}),
                      json.dumps({**good, "kind": "bogus", "index": 1}), json.dumps(good),
                      json.dumps({**good, "event": "start", "index": 2})])
    trace = parse_calls(text)
    (first, second) = trace.calls["t"]
    assert first.args == ("<X object>",) and len(first.result or "") <= 400
    assert second.index == 2 and not second.finished
    assert PLUGIN_NAME == call_tracer([], []).name


# -- end to end: a sandbox, the toolchain's runs, the statement ------------------------------

E2E_IMPL = '''\
def _suffix(n):
    n = abs(int(n))
    if n % 100 in (11, 12, 13):
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def ordinal(number):
    return _suffix(number)


class Tally:
    def __init__(self, items=()):
        self.items = list(items)

    def total(self):
        return sum(self.items)
'''
E2E_FILES = {
    "pyproject.toml": (
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "tinyord"\nversion = "0.1"\n\n'
        '[project.optional-dependencies]\ntest = ["pytest"]\n'
        '[tool.setuptools]\npackages = ["tinyord"]\n'),
    "tinyord/__init__.py": "from tinyord._impl import Tally, ordinal\n",
    "tinyord/_impl.py": E2E_IMPL,
    "tests/test_expected_first.py": (
        "import pytest\nfrom tinyord import Tally, ordinal\n\n\n"
        "@pytest.mark.parametrize('n,suffix', [(-11, 'th'), (2, 'nd')])\n"
        "def test_ordinal(n, suffix):\n    assert suffix == ordinal(n)\n\n\n"
        "def test_total():\n    assert 6 == Tally([1, 2, 3]).total()\n"),
    "tests/test_unittest_style.py": (
        "import unittest\nfrom tinyord import Tally, ordinal\n\n\n"
        "class OrdinalTest(unittest.TestCase):\n"
        "    def test_teens(self):\n        self.assertEqual('th', ordinal(-11))\n\n"
        "    def test_total(self):\n        self.assertEqual(6, Tally([1, 2, 3]).total())\n"),
}
E2E_BUG = E2E_IMPL.replace("(11, 12, 13)", "(12, 13)").replace(
    "return sum(self.items)", "return sum(self.items[1:])")
E2E_F2P = {
    "pytest": ("tests/test_expected_first.py::test_ordinal[-11-th]",
               "tests/test_expected_first.py::test_total"),
    "unittest": ("tests/test_unittest_style.py::OrdinalTest::test_teens",
                 "tests/test_unittest_style.py::OrdinalTest::test_total"),
}


@pytest.fixture(scope="module")
def e2e_sandbox(request, tmp_path_factory):
    from tests.conftest import build_tiny_env, commit_files

    request.getfixturevalue("base_image")
    out = tmp_path_factory.mktemp("calls-e2e")
    commit_files(out / "tinyord", E2E_FILES)
    tiny = build_tiny_env("docker", out / "tinyord", out)
    with tiny.provider.open(tiny.env) as sandbox:
        yield sandbox, tiny.toolchain


@pytest.mark.docker
@pytest.mark.parametrize("style", sorted(E2E_F2P))
def test_statements_from_sandbox_traces_are_the_right_way_round(style: str, e2e_sandbox):
    """``assert expected == ordinal(n)`` and ``assertEqual(expected, actual)``: the messages
    alone cannot tell the sides apart; the traces of the two states can."""
    from repogym.generators.statements import observations, offline_statement
    from repogym.patches import reverse_diff
    from repogym.schemas.calls import StatementEvidence
    from repogym.schemas.records import Candidate, CandidateKind
    from repogym.toolchains.warm import WarmPytest

    sandbox, toolchain = e2e_sandbox
    f2p = E2E_F2P[style]
    bug = unified_diff("tinyord/_impl.py", E2E_IMPL, E2E_BUG)
    tracer = call_tracer(f2p, changed_functions(bug, lambda p: E2E_FILES.get(p)))
    sandbox.reset()
    assert sandbox.apply_patch(bug)
    warm = WarmPytest(toolchain, sandbox)
    try:  # the broken state through the warm runner, the gold one through a fresh run
        broken = warm.run_tests(sandbox, timeout=300, select=list(f2p), plugins=[tracer])
    finally:
        warm.close()
    sandbox.reset()
    gold = toolchain.run_tests(sandbox, timeout=300, select=list(f2p), plugins=[tracer])
    assert broken.trusted and gold.trusted, (broken.log_tail, gold.log_tail)
    assert not broken.passing() & set(f2p) and gold.passing() >= set(f2p)
    evidence = StatementEvidence(
        fail_to_pass=f2p, messages={t: broken.results[t].message for t in f2p},
        broken=parse_calls(broken.extras[PLUGIN_NAME]), gold=parse_calls(gold.extras[PLUGIN_NAME]))
    assert observations(evidence) == [
        "`tinyord.ordinal(-11)` returns `'st'`; it should return `'th'`.",
        "`tinyord.Tally.total()` on `<Tally items=[1, 2, 3]>` returns `5`; it should return `6`."]
    cand = Candidate(kind=CandidateKind.synthetic, repo="tinyord", base_commit="0" * 40,
                     bug_patch=bug, gold_patch=reverse_diff(bug), generator="combined",
                     files=("tinyord/_impl.py",), provenance={"function": "_suffix"})
    text = offline_statement(cand, evidence)
    assert "### `tinyord.ordinal`" in text and "### `tinyord.Tally.total`" in text
    assert "0x" not in text and "test_" not in text and "_suffix" not in text, text
