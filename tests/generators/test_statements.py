"""Offline statements: written from test evidence, never quoting the patch or test names."""

from repogym.generators.diffs import reverse_diff, unified_diff
from repogym.generators.statements import leaks, offline_statement
from repogym.schemas.records import Candidate, CandidateKind

BEFORE = "def area(w, h):\n    width_times_height = w * h\n    return width_times_height\n"
AFTER = "def area(w, h):\n    width_times_height = w + h\n    return width_times_height\n"


def cand() -> Candidate:
    patch = unified_diff("geo/shapes.py", BEFORE, AFTER)
    return Candidate(kind=CandidateKind.synthetic, repo="geo", base_commit="0" * 40,
                     bug_patch=patch, gold_patch=reverse_diff(patch), generator="procedural",
                     files=("geo/shapes.py",), provenance={"function": "area"})


def test_statement_names_behaviour_and_evidence():
    text = offline_statement(cand(), ["tests/test_geo.py::test_area_of_square"],
                             {"tests/test_geo.py::test_area_of_square": "assert 4 == 9"})
    assert "`geo.shapes.area`" in text
    assert "I get `4` where `9` is expected." in text
    assert "Expected" in text or "expected" in text


def test_statement_drops_lines_quoting_the_patch_and_test_names():
    msg = "width_times_height = w + h\nassert 4 == 9\nin test_area_of_square"
    text = offline_statement(cand(), ["tests/test_geo.py::test_area_of_square"],
                             {"tests/test_geo.py::test_area_of_square": msg})
    assert not leaks(text, cand().gold_patch) and not leaks(text, cand().bug_patch)
    assert "test_area_of_square" not in text
    assert "`4`" in text and "`9`" in text


def test_leak_detector_finds_quoted_lines():
    assert leaks("see `width_times_height = w * h`", cand().gold_patch)
    assert not leaks("area is wrong", cand().gold_patch)


def test_statement_without_messages_is_still_an_issue():
    text = offline_statement(cand(), ["t.py::x"], {})
    assert text.startswith("# ") and "`geo.shapes.area`" in text


def test_observation_from_assert_with_where_clause():
    from repogym.generators.statements import observe

    obs = observe("assert -1 == 5\n +  where -1 = add(2, 3)")
    assert obs.sentence() == "`add(2, 3)` returns `-1`; I expected `5`."


def test_observation_from_plain_equality_and_from_errors():
    from repogym.generators.statements import observe

    assert observe("AssertionError: assert 'fishs' == 'fish'\n- fish\n+ fishs").sentence() == (
        "I get `'fishs'` where `'fish'` is expected.")
    assert observe("TypeError: unsupported operand type(s)").sentence() == (
        "It raises `TypeError: unsupported operand type(s)`.")
    assert observe("assert False\n +  where False = is_even(4)").sentence() == (
        "`is_even(4)` returns `False`, which is wrong.")
    assert observe("something odd happened") is None


def test_statement_speaks_of_observed_and_expected():
    text = offline_statement(cand(), ["t.py::test_a"], {"t.py::test_a": "assert 4 == 9\n +  where 4 = area(2, 2)"})
    assert "`area(2, 2)` returns `4`; I expected `9`." in text
    assert "## Expected behaviour" in text


def test_unreadable_message_is_quoted_raw_but_scrubbed():
    msg = "ValueError raised deep inside\nwidth_times_height = w + h"
    text = offline_statement(cand(), ["t.py::test_a"], {"t.py::test_a": msg})
    assert "ValueError raised deep inside" in text and "w + h" not in text
