"""Targets (which functions, what context) and splicing an answer back in."""

from __future__ import annotations

import pytest

from repogym.generators.llm.functions import (
    RejectedAnswer,
    extract_code,
    file_targets,
    select_targets,
)
from repogym.generators.llm.splice import splice_answer, strip_comments
from repogym.schemas.records import Checkout
from tests.generators.llm.conftest import ANSWERS, LIB


def _target(qualname: str):
    return next(t for t in file_targets("demo/lib.py", LIB) if t.qualname == qualname)


def test_targets_are_functions_with_three_statements_besides_the_docstring() -> None:
    names = [t.qualname for t in file_targets("demo/lib.py", LIB)]
    assert names == ["clamp", "mean", "Stack.push_all"]


def test_target_context_is_signature_docstring_imports_and_class() -> None:
    t = _target("Stack.push_all")
    assert t.stub == 'def push_all(self, values):\n    """Push every value; return the new size."""\n    ...\n'
    assert t.imports == ("import math",) and t.class_header == "class Stack:"
    assert t.indent == " " * 8 and "size = len(self.items)" in t.code


def test_decorated_method_stub_shows_decorators() -> None:
    src = ("class A:\n    @property\n    def p(self):\n        a = 1\n        b = 2\n"
           "        return a + b\n")
    (t,) = file_targets("m.py", src)
    assert t.stub.startswith("@property\ndef p(self):") and t.line == 3


def test_selection_is_deterministic_in_the_seed(demo_checkout: Checkout) -> None:
    files = ["demo/lib.py"]
    order = lambda seed: [t.qualname for t in select_targets(  # noqa: E731
        demo_checkout.path, files, seed=seed, salt="s")]
    assert order(1) == order(1)
    assert {tuple(order(s)) for s in range(8)} != {tuple(order(1))}
    assert sorted(order(3)) == ["Stack.push_all", "clamp", "mean"]


def test_lines_restrict_targets_to_covering_functions(demo_checkout: Checkout) -> None:
    mean_line = LIB.splitlines().index("    total = 0") + 1
    got = select_targets(demo_checkout.path, ["demo/lib.py"], seed=0, salt="s",
                         lines={"demo/lib.py": {mean_line}})
    assert [t.qualname for t in got] == ["mean"]


def test_extract_code_prefers_the_first_python_block() -> None:
    assert extract_code("x\n```\nplain\n```\n```python\nfirst\n```\n```py\nsecond\n```") == "first\n"
    assert extract_code("```\nplain\n```") == "plain\n"
    assert extract_code("def f():\n    pass\n") == "def f():\n    pass\n"


def test_splice_keeps_header_and_docstring_and_reindents_methods() -> None:
    t = _target("Stack.push_all")
    answer = ("```python\nclass Stack:\n    def push_all(self, values):\n"
              "        \"\"\"Other words.\"\"\"\n        self.items += list(values)\n"
              "        return len(self.items)\n```")
    new = splice_answer(t, answer)
    assert '"""Push every value; return the new size."""' in new and "Other words" not in new
    assert "        self.items += list(values)\n        return len(self.items)\n" in new
    assert new.endswith(LIB[LIB.index("        return size\n") + len("        return size\n"):])


def test_modify_answers_lose_added_comments() -> None:
    new = splice_answer(_target("Stack.push_all"), ANSWERS["Stack.push_all"],
                        strip_new_comments=True)
    assert "BUG" not in new and "self.items.extend(values[1:])\n" in new


def test_strip_comments_keeps_known_ones_and_strings() -> None:
    code = "def f():\n    # keep\n    # off by one here\n    x = '# not a comment'  # bug\n    return x\n"
    assert strip_comments(code, keep={"# keep"}) == (
        "def f():\n    # keep\n    x = '# not a comment'\n    return x\n")


@pytest.mark.parametrize("answer, reason", [
    ("```python\ndef clamp(x, lo):\n    return x\n```", "signature"),
    ("```python\nasync def clamp(x, lo, hi):\n    return x\n```", "signature"),
    ("def clamp(x, lo, hi)\n    return x\n", "does not parse"),
    ("import os\ndef clamp(x, lo, hi):\n    return x\n", "other top-level code"),
    ("def mean(values):\n    return 0\n", "other top-level code"),
    ("def clamp(x, lo, hi):\n    return x\ndef clamp(x, lo, hi):\n    return lo\n",
     "defines 'clamp' 2 times"),
    ("class Other:\n    def clamp(x, lo, hi):\n        return x\n", "other top-level code"),
    ("def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n"
     "        return hi\n    return x  # same code\n", "original code"),
    ("def clamp(x, lo, hi):\n    \"\"\"Only a docstring.\"\"\"\n", "no body"),
    ("", "empty"),
])
def test_unusable_answers_are_rejected_with_a_reason(answer: str, reason: str) -> None:
    with pytest.raises(RejectedAnswer, match=reason):
        splice_answer(_target("clamp"), answer)


def test_known_imports_may_come_with_the_answer() -> None:
    new = splice_answer(_target("clamp"), "import math\ndef clamp(x, lo, hi):\n"
                                          "    return math.floor(max(lo, min(x, hi)))\n")
    assert "    return math.floor(max(lo, min(x, hi)))\n" in new
