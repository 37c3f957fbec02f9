"""Statements checked against a labelled corpus of real failing tests (see the corpus module).

With the call traces, every statement must state each broken behaviour: the public call,
what it returns (raises, hangs) now and what it should return (raise), the right way round.
With the failure messages alone it must never put a value on the wrong side and must say
something true about each behaviour. Always: no address, no test name, no name only the
tests know, no line of the patch.
"""

import pytest

from repogym.generators.statements import offline_statement
from tests.generators.statement_corpus import TRUTH, Case, Mode, problems

CASES = [pytest.param(case, id=case.id) for case in TRUTH]


def test_the_corpus_is_large_and_varied():
    assert len({case.run_id or case.id for case in TRUTH}) >= 30
    assert {case.run["project"] for case in TRUTH} >= {"inflect", "stacks", "confkit", "geo",
                                                       "funcs", "textkit", "calc", "roots"}


@pytest.mark.parametrize("mode", list(Mode), ids=[m.value for m in Mode])
@pytest.mark.parametrize("case", CASES)
def test_statement_tells_the_truth(case: Case, mode: Mode):
    text = offline_statement(case.candidate(), case.evidence(mode))
    assert problems(text, case, mode) == [], text


@pytest.mark.parametrize("case", CASES[:6])
def test_a_reversed_statement_is_caught(case: Case):
    """The check itself: swapping what a call returns with what it should return fails."""
    behaviour = case.behaviours[0]
    if behaviour.got is None or behaviour.expected is None:
        pytest.skip("no value pair to swap")
    swapped = (f"# Wrong results from `{behaviour.function}`\n\n- `{behaviour.function}()` "
               f"returns `{behaviour.expected}`; it should return `{behaviour.got}`.\n")
    assert any("says it" in p for p in problems(swapped, case, Mode.messages))


def test_the_check_catches_addresses_test_names_and_test_local_names():
    case = next(c for c in TRUTH if c.id == "funcs.compose")
    good = offline_statement(case.candidate(), case.evidence(Mode.traced))
    for bad, why in ((good + "\nSee <Foo object at 0x7f00aa>.\n", "address"),
                     (good + "\nIt fails in test_compose.\n", "names a test"),
                     (good + "\nThe helper `double` is fine.\n", "test-local")):
        assert any(why in p for p in problems(bad, case, Mode.traced)), why
