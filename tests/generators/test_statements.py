"""Offline statements: the truth from the evidence, never the patch or the tests' names.

The labelled corpus of real runs is in ``test_statement_corpus.py``; these are the rules
one at a time, on small hand-written evidence.
"""

from repogym.generators.statements import (
    evidence_from_messages,
    leaks,
    observations,
    offline_statement,
    scrub,
)
from repogym.patches import reverse_diff, unified_diff
from repogym.schemas.calls import CallKind, CallRecord, CallTrace, StatementEvidence
from repogym.schemas.records import Candidate, CandidateKind

BEFORE = "def area(w, h):\n    width_times_height = w * h\n    return width_times_height\n"
AFTER = "def area(w, h):\n    width_times_height = w + h\n    return width_times_height\n"
TEST = "tests/test_geo.py::test_area_of_square"


def cand(generator: str = "procedural", salt: str = "") -> Candidate:
    patch = unified_diff("geo/shapes.py", BEFORE, AFTER + salt)
    return Candidate(kind=CandidateKind.synthetic, repo="geo", base_commit="0" * 40,
                     bug_patch=patch, gold_patch=reverse_diff(patch), generator=generator,
                     files=("geo/shapes.py",), provenance={"function": "area"})


def text_for(message: str, **extra) -> str:
    return offline_statement(cand(), StatementEvidence(fail_to_pass=(TEST,),
                                                       messages={TEST: message}, **extra))


def record(result: str | None = None, raised: str | None = None, test: str = TEST,
           function: str = "geo.area", args: tuple[str, ...] = ("2", "2")) -> CallRecord:
    return CallRecord(test=test, index=0, function=function, args=args, result=result,
                      raised=raised, reached=("geo/shapes.py::area",))


def traced(broken: list[CallRecord], gold: list[CallRecord], message: str = "",
           **extra) -> str:
    tests = tuple(dict.fromkeys(r.test for r in broken + gold)) or (TEST,)
    def by_test(records: list[CallRecord]) -> CallTrace:
        return CallTrace(calls={t: tuple(r for r in records if r.test == t) for t in tests})

    return offline_statement(cand(), StatementEvidence(
        fail_to_pass=tests, messages={t: message for t in tests}, broken=by_test(broken),
        gold=by_test(gold), **extra))


def test_a_where_line_tells_which_side_the_code_computed():
    actual_first = "AssertionError: assert 4 == 9\n+  where 4 = area(2, 2)"
    assert "`area(2, 2)` returns `4`; it should return `9`." in observations(
        evidence_from_messages([TEST], {TEST: actual_first}))
    reversed_style = "AssertionError: assert 9 == 4\n+  where 4 = area(2, 2)"  # expected == actual
    assert "`area(2, 2)` returns `4`; it should return `9`." in observations(
        evidence_from_messages([TEST], {TEST: reversed_style}))


def test_without_a_where_line_or_a_source_no_side_is_guessed():
    text = text_for("AssertionError: assert 'fishs' == 'fish'\n- fish\n+ fishs")
    assert "compares `'fishs'` with `'fish'`, and they differ" in text
    assert "should return" not in text and "instead of" not in text


def test_the_test_source_tells_the_side_of_an_expected_first_assert():
    source = "from geo import area\n\ndef test_area_of_square():\n    assert 9 == area(2, 2)\n"
    ev = StatementEvidence(fail_to_pass=(TEST,), messages={TEST: "AssertionError: assert 9 == 4"},
                           test_sources={"tests/test_geo.py": source})
    assert observations(ev) == ["`area(2, 2)` returns `4`; it should return `9`."]


def test_unittest_assert_equal_read_either_way_round_from_the_source():
    node = "tests/test_geo.py::GeoTest::test_area"
    source = ("import unittest\nfrom geo import area\n\nclass GeoTest(unittest.TestCase):\n"
              "    def test_area(self):\n        self.assertEqual({})\n")
    for args in ("9, area(2, 2)", "area(2, 2), 9"):
        message = "AssertionError: 9 != 4" if args.startswith("9") else "AssertionError: 4 != 9"
        ev = StatementEvidence(fail_to_pass=(node,), messages={node: message},
                               test_sources={"tests/test_geo.py": source.format(args)})
        assert observations(ev) == ["`area(2, 2)` returns `4`; it should return `9`."], args
    neutral = observations(evidence_from_messages([node], {node: "AssertionError: 9 != 4"}))
    assert neutral == ["A check compares `9` with `4`, and they differ."]


def test_a_traced_call_outranks_the_message_and_names_the_public_function():
    text = traced([record("4")], [record("9")], message="AssertionError: assert 9 == 4")
    assert "`geo.area(2, 2)`" in text and "`4`" in text and "`9`" in text
    assert observations(StatementEvidence(
        fail_to_pass=(TEST,), broken=CallTrace(calls={TEST: (record("4"),)}),
        gold=CallTrace(calls={TEST: (record("9"),)}))) == [
        "`geo.area(2, 2)` returns `4`; it should return `9`."]


def test_the_first_changed_call_is_the_one_the_message_shows():
    same = record("1", args=("1", "1"))
    broken = [same, record("4", args=("2", "2")), record("7", args=("3", "3"))]
    gold = [same, record("5", args=("2", "2")), record("9", args=("3", "3"))]
    ev = StatementEvidence(fail_to_pass=(TEST,), messages={TEST: "assert 7 == 9"},
                           broken=CallTrace(calls={TEST: tuple(broken)}),
                           gold=CallTrace(calls={TEST: tuple(gold)}))
    assert observations(ev) == ["`geo.area(3, 3)` returns `7`; it should return `9`."]
    ev = ev.model_copy(update={"messages": {TEST: "something unreadable"}})
    assert observations(ev) == ["`geo.area(2, 2)` returns `4`; it should return `5`."]


def test_raises_returns_and_hangs_are_said_as_such():
    def ev(broken: CallRecord, gold: CallRecord, **kw) -> list[str]:
        return observations(StatementEvidence(
            fail_to_pass=(TEST,), broken=CallTrace(calls={TEST: (broken,)}),
            gold=CallTrace(calls={TEST: (gold,)}), **kw))

    assert ev(record(raised="ValueError: bad"), record("9")) == [
        "`geo.area(2, 2)` raises `ValueError: bad`; it should return `9`."]
    assert ev(record("0"), record(raised="ValueError: empty")) == [
        "`geo.area(2, 2)` returns `0`; it should raise `ValueError: empty`."]
    assert ev(record(), record("9"), hung=(TEST,)) == [
        "`geo.area(2, 2)` never returns (it hangs), where it should return `9`."]


def test_a_combined_bug_describes_every_broken_function():
    tests = [f"tests/test_geo.py::test_{n}" for n in ("a", "b", "c")]
    broken = [record(str(i), test=t, function=f"geo.f{i}") for i, t in enumerate(tests)]
    gold = [record(str(i + 10), test=t, function=f"geo.f{i}") for i, t in enumerate(tests)]
    text = traced(broken, gold)
    for i in range(3):
        assert f"### `geo.f{i}`" in text and f"`geo.f{i}(2, 2)`" in text
        assert f"`{i}`" in text and f"`{i + 10}`" in text


def test_methods_show_their_class_and_an_instance_that_reads_as_its_constructor():
    method = CallRecord(test=TEST, index=0, function="geo.Rect.scaled", kind=CallKind.method,
                        args=("3",), receiver="Rect(1, 2)", result="Rect(3, 2)")
    assert method.call == "geo.Rect(1, 2).scaled(3)"
    prop = method.model_copy(update={"function": "geo.Rect.area", "kind": CallKind.property,
                                     "args": (), "receiver": "Rect(2, 3)"})
    assert prop.call == "geo.Rect(2, 3).area"
    closure = method.model_copy(update={"function": "geo.compose.<locals>.inner",
                                        "kind": CallKind.function, "receiver": None})
    assert closure.call == "geo.compose(...)(3)"


def test_operations_read_as_written_and_a_private_inner_class_by_its_public_one():
    """A method Python calls for an operation reads as the operation; one of a private
    class nested in a public one (``LFUCache._Link``) names the class the user holds."""
    eq = CallRecord(test=TEST, index=0, function="geo.Point.__eq__", kind=CallKind.method,
                    args=("Point(1, 3)",), receiver="Point(1, 2)", result="True")
    assert (eq.call, eq.api) == ("Point(1, 2) == Point(1, 3)", "geo.Point")
    item = eq.model_copy(update={"function": "geo.Grid.__getitem__", "args": ("(0, 1)",),
                                 "receiver": "Grid(2, 2)"})
    assert item.call == "Grid(2, 2)[(0, 1)]"
    shown = eq.model_copy(update={"function": "geo.Point.__repr__", "args": (),
                                  "receiver": "Point(9, 9)"})
    assert shown.call == "repr(<Point object>)"  # the receiver's repr is the broken one
    link = CallRecord(test=TEST, index=0, function="cachetools.LFUCache._Link.__reduce__",
                      kind=CallKind.method, receiver="<_Link object>",
                      reached=("src/cachetools/__init__.py::LFUCache._Link.__reduce__",))
    assert (link.call, link.api) == ("pickle.dumps(<LFUCache object>)", "cachetools.LFUCache")
    gold = link.model_copy(update={"result": "(<class>, ())"})
    text = traced([link], [gold], hung=(TEST,))
    assert "- `pickle.dumps(<LFUCache object>)` " in text and "never returns" in text
    assert "_Link" not in text and "__reduce__" not in text
    assert text.startswith("# `cachetools.LFUCache` ")
    # pickle.dumps gives bytes: the tuple __reduce__ returns is no value of that call
    assert not link.gives_result and "<class>" not in text and "should return" not in text
    assert "<class>" not in "".join(observations(StatementEvidence(
        fail_to_pass=(TEST,), messages={TEST: "assert b'x' == b'y'"},
        broken=CallTrace(calls={TEST: (link.model_copy(update={"result": "(<class>, (1,))"}),)}),
        gold=CallTrace(calls={TEST: (gold,)}))))
    assert gold.model_copy(update={"function": "cachetools.Cache.__copy__"}).gives_result
    plain = link.model_copy(update={"function": "pkg._impl.Store.close"})  # private module
    assert (plain.call, plain.api) == ("pkg._impl.Store.close()", "pkg._impl.Store.close")


def test_a_keyword_the_code_lacks_is_said_as_such():
    """A mined feature: the test passes a keyword the broken code does not take, so the call
    never runs (nothing is traced); the statement says which parameter is missing."""
    message = "TypeError: slugify() got an unexpected keyword argument 'allow_unicode'"
    assert observations(evidence_from_messages([TEST], {TEST: message})) == [
        "`slugify()` does not accept the keyword argument `allow_unicode`: a call with it "
        "raises `TypeError`."]


def test_addresses_and_the_tests_own_objects_never_show():
    assert scrub("<geo.shapes.Point object at 0x7fbe7c147dd0>") == "<Point object>"
    assert scrub("<test_shapes.Origin object at 0x7fbe7c147dd0>") == "<object>"
    assert scrub("<function test_x.<locals>.<lambda> at 0x7ff1a2337b00>") == "<function>"
    assert scrub("<function compose.<locals>.composed at 0x7ff1a2337b00>") == "compose(...)"
    message = ("AssertionError: assert 7 == 5\n"
               "+  where 7 = distance(<test_s.Origin object at 0x7f01>)\n"
               "+    where distance = <geo.Point object at 0x7f02>.distance\n"
               "+      where <geo.Point object at 0x7f02> = Point(3, 4)\n"
               "+    and   <test_s.Origin object at 0x7f01> = Origin()")
    assert observations(evidence_from_messages([TEST], {TEST: message})) == [
        "`Point(3, 4).distance(<object>)` returns `7`; it should return `5`."]
    text = text_for(message)
    assert "0x" not in text and "Origin" not in text


def test_unittest_and_pytest_special_messages():
    def read(message: str, **kw) -> list[str]:
        return observations(StatementEvidence(fail_to_pass=(TEST,), messages={TEST: message},
                                              **kw))

    assert read("Failed: DID NOT RAISE <class 'ValueError'>") == [
        "It does not raise; it should raise `ValueError`."]
    assert read("AssertionError: EmptyStack not raised") == [
        "It does not raise; it should raise `EmptyStack`."]
    assert read("AssertionError: False is not true") == [
        "It returns `False`; it should return a true value."]
    assert read("AssertionError: '' is not None") == ["I get `''` where `None` is expected."]
    assert read("AssertionError: Expected 'send' to be called once. Called 0 times.") == [
        "It should call `send` once; `send` is called 0 times."]
    assert read("AssertionError: 2 not found in (1, 3)") == [
        "A check looks for `2` in `(1, 3)` and does not find it."]
    assert read("AssertionError: Lists differ: [1, 2] != [2, 1]\n\nFirst differing element 0:") == [
        "A check compares `[1, 2]` with `[2, 1]`, and they differ."]
    assert read("Failed: Timeout (>2.0s) from pytest-timeout.") == ["It never returns (it hangs)."]
    source = ("import pytest\nfrom geo import area\n\ndef test_area_of_square():\n"
              "    with pytest.raises(ValueError):\n        area(-1, 2)\n")
    assert read("Failed: DID NOT RAISE ValueError",
                test_sources={"tests/test_geo.py": source}) == [
        "`area(-1, 2)` does not raise; it should raise `ValueError`."]


def test_statement_drops_lines_quoting_the_patch_and_test_names():
    msg = "width_times_height = w + h\nassert 4 == 9\nin test_area_of_square"
    text = text_for(msg)
    assert not leaks(text, cand().gold_patch) and not leaks(text, cand().bug_patch)
    assert "test_area_of_square" not in text and "test_geo" not in text


def test_leak_detector_finds_quoted_lines():
    assert leaks("see `width_times_height = w * h`", cand().gold_patch)
    assert not leaks("area is wrong", cand().gold_patch)


def test_statement_without_messages_is_still_an_issue():
    text = offline_statement(cand(), evidence_from_messages(["t.py::x"], {}))
    assert text.startswith("# ") and "`geo.shapes.area`" in text


def test_unreadable_message_is_quoted_raw_but_scrubbed():
    msg = "ValueError raised deep inside\nwidth_times_height = w + h"
    text = text_for("Oops happened <geo.P object at 0x7f0012345678>\n" + msg)
    assert "Oops happened <P object>" in text and "w + h" not in text and "0x" not in text


def test_evidence_from_messages_keeps_only_the_f2p_tests():
    ev = evidence_from_messages([TEST], {TEST: "assert 1 == 2", "oracle": "reran x3"})
    assert ev.messages == {TEST: "assert 1 == 2"} and ev.broken is None and ev.gold is None


def test_the_wording_varies_between_candidates_and_never_within_one():
    ev = evidence_from_messages([TEST], {TEST: "assert 4 == 9\n+  where 4 = area(2, 2)"})
    texts = [offline_statement(cand(salt=f"# {i}\n"), ev) for i in range(30)]
    assert len({t.splitlines()[0] for t in texts}) >= 4  # titles
    assert len({t.splitlines()[4] for t in texts}) >= 3  # the sentence form
    assert offline_statement(cand(salt="# 1\n"), ev) == texts[1]


def test_only_equality_says_what_it_should_return():
    ev = evidence_from_messages([TEST], {TEST: "assert 7 < 5\n+  where 7 = area(3, 4)"})
    assert observations(ev) == ["With `area(3, 4)`, a check `7 < 5` fails."]


def test_what_unittest_cut_from_a_long_value_reads_as_an_ellipsis():
    """python-slugify's pre-translation tables: ``Lists differ`` shows each list with its
    middle cut as ``[188 chars]``, which is not part of any value."""
    message = ("AssertionError: Lists differ: [('Ё', 'E'), ('ё', 'e'), ('х', [188 chars]'y')]"
               " != [('Ю', 'U'), ('Щ', 'Sch'), ('Х',[327 chars]'y')]")
    text = text_for(message)
    assert "chars]" not in text and "('х', …'y')]" in text, text


def test_hex_values_are_values_not_addresses():
    assert scrub("'0xff' and '0x10000000'") == "'0xff' and '0x10000000'"
    assert scrub("<Mock id='140230211'> at 0x7f3a2b1c4d5e") == "<Mock>"


def test_a_bare_name_joins_the_traced_function_it_names():
    """A failure the tracer did not record names ``ordinalize`` (from the assertion); the
    traced calls name ``inflection.ordinalize``: one heading for both, none for the bare
    name. A bare name two traced functions end with stays apart."""
    from repogym.generators.statements.observed import Observed
    from repogym.generators.statements.wording import _group

    traced = Observed(function="inflection.ordinalize", call="inflection.ordinalize(-11)",
                      returns="'-11st'", should_return="'-11th'")
    bare = Observed(function="ordinalize", returns="'-112nd'", should_return="'-112th'")
    assert list(_group([traced, bare])) == ["inflection.ordinalize"]
    other = Observed(function="other.ordinalize", call="other.ordinalize(1)", returns="'1'",
                     should_return="'1st'")
    assert set(_group([traced, other, bare])) == {"inflection.ordinalize",
                                                  "other.ordinalize", "ordinalize"}


def test_a_call_through_an_imported_module_is_grouped_by_its_dotted_name():
    """inflection's combined bug: ``singularize`` is not traced, and its failing test calls
    ``inflection.singularize(...)``: the heading and title say ``inflection.singularize``
    beside the traced ``inflection.ordinal``, not a bare ``singularize``. A test's local
    object (``cart.add``) is never taken for a module."""
    from repogym.generators.statements.reading import _callee

    sing = "tests/test_inflection.py::test_singularize_plural[ability-abilities]"
    message = ("AssertionError: assert 'abilities' == 'ability'\n"
               "+  where 'abilities' = inflection.singularize('abilities')")
    ordinal = [record("'st'", function="inflection.ordinal", args=("-11",))]
    text = offline_statement(cand(), StatementEvidence(
        fail_to_pass=(TEST, sing), messages={TEST: "", sing: message},
        broken=CallTrace(calls={TEST: tuple(ordinal)}),
        gold=CallTrace(calls={TEST: (record("'th'", function="inflection.ordinal",
                                            args=("-11",)),)}),
        test_sources={"tests/test_inflection.py": "import inflection\n"}))
    assert "### `inflection.singularize`" in text and "`singularize`" not in text, text
    assert "`inflection.ordinal` and `inflection.singularize`" in text.splitlines()[0], text
    assert _callee("cart.add('pen', 2)", frozenset({"inflection"})) == "add"
    assert _callee("inflection.ordinal(3)", frozenset({"inflection"})) == "inflection.ordinal"


def test_an_error_a_traced_call_raised_is_not_said_again_from_another_tests_message():
    """inflection's camelize: two traced calls raise RecursionError; a third failing test,
    whose calls were not traced, fails with the same error -- said once, by the calls."""
    tests = [f"tests/test_geo.py::test_{n}" for n in ("a", "b", "c")]
    error = "RecursionError: maximum recursion depth exceeded"
    broken = [record(raised=error, test=t, args=(str(i), "2")) for i, t in enumerate(tests[:2])]
    gold = [record(str(i), test=t, args=(str(i), "2")) for i, t in enumerate(tests[:2])]
    text = offline_statement(cand(), StatementEvidence(
        fail_to_pass=tuple(tests), messages={t: error for t in tests},
        broken=CallTrace(calls={t: tuple(r for r in broken if r.test == t) for t in tests}),
        gold=CallTrace(calls={t: tuple(r for r in gold if r.test == t) for t in tests})))
    assert "`geo.area(0, 2)`" in text and "`geo.area(1, 2)`" in text, text
    assert text.count("RecursionError") == 2, text


def test_a_call_with_an_unbalanced_parenthesis_in_its_arguments_is_named() -> None:
    """path-to-regexp's tests call ``match('/(')``: the grouping of a call text must end
    (it looped forever on the lone parenthesis)."""
    from repogym.generators.statements.reading import _callee

    assert _callee("pathToRegexp.match('/(')") == "match"
    assert _callee("parse('(a')(b)") == "parse"
    assert _callee("pkg.Rect(1, 2).scaled(3)") == "scaled"


def test_a_quoted_failure_drops_repogyms_harness_frames_and_the_javascript_test_file():
    from repogym.generators.statements.messages import raw_lines
    from repogym.generators.statements.wording import _test_names

    msg = ("Boom: the widget broke\nat /repo/test/index.js:33:9\n"
           "at Object.handler (/var/tmp/rg-304d1debaca4469345991e898203095b/rg-uvu.cjs:147:53)")
    assert raw_lines(msg) == ["Boom: the widget broke", "at /repo/test/index.js:33:9"]
    names = _test_names(["test/index.js > nested", "test/index.js > keeps the order"])
    assert {"test/index.js", "index.js", "keeps the order"} <= names
    assert "nested" not in names  # a one-word title is an ordinary word, not a test's name


def test_an_error_traced_calls_should_raise_is_not_said_again_without_a_call():
    """markupsafe's ``Markup('<em></em>') % 42``: two traced calls return where they should
    raise TypeError; a third test's message (``DID NOT RAISE``) says only that some call
    should raise TypeError -- said once, by the calls, not again as a bare line."""
    tests = [f"tests/test_geo.py::test_{n}" for n in ("a", "b", "c")]
    error = "TypeError: not all arguments converted during string formatting"
    broken = [record("0", test=t, args=(str(i), "2")) for i, t in enumerate(tests[:2])]
    gold = [record(raised=error, test=t, args=(str(i), "2")) for i, t in enumerate(tests[:2])]
    messages = {t: "Failed: DID NOT RAISE <class 'TypeError'>" for t in tests}
    text = offline_statement(cand(), StatementEvidence(
        fail_to_pass=tuple(tests), messages=messages,
        broken=CallTrace(calls={t: tuple(r for r in broken if r.test == t) for t in tests}),
        gold=CallTrace(calls={t: tuple(r for r in gold if r.test == t) for t in tests})))
    assert "`geo.area(0, 2)`" in text and "`geo.area(1, 2)`" in text, text
    assert text.count("TypeError") == 2, text


def test_a_behaviour_no_call_names_is_said_without_calling_it():
    """No call known: the sentence says what the check saw ("I get ..."), never "Calling it
    gives ..." with an "it" that stands for nothing; every candidate's wording is tried."""
    from repogym.generators.statements.observed import Observed
    from repogym.generators.statements.wording import sentence

    returns = Observed(function="area", returns="nan", should_return="9")
    raises = Observed(function="area", raises="ValueError: bad", should_return="9")
    for i in range(40):
        c = cand(salt=f"# {i}\n")
        for o, got in ((returns, "`nan`"), (raises, "`ValueError: bad`")):
            text = sentence(o, c)
            assert text and "it gives" not in text.lower() and "calling" not in text.lower()
            assert got in text and "`9`" in text
            assert text.index(got) < text.index("`9`") or "Instead of" in text


def test_a_value_a_traced_call_returned_is_not_said_again_without_a_call():
    """kleur: a traced call returns `4` where `5` is expected; another failing test's
    message shows the same two values with no call -- said once, by the call. A different
    value with no call is still said."""
    tests = [f"tests/test_geo.py::test_{n}" for n in ("a", "b", "c")]
    text = offline_statement(cand(), StatementEvidence(
        fail_to_pass=tuple(tests),
        messages={tests[1]: "assert 4 == 5", tests[2]: "assert 7 == 8"},
        broken=CallTrace(calls={tests[0]: (record("4", test=tests[0]),)}),
        gold=CallTrace(calls={tests[0]: (record("5", test=tests[0]),)})))
    assert text.count("`4`") == 1 and "`geo.area(2, 2)`" in text, text
    assert "`7`" in text and "`8`" in text, text
    from repogym.generators.statements.observed import Observed
    from repogym.generators.statements.wording import _said_above

    called = [Observed(function="geo.area", call="geo.area(2, 2)", returns="4",
                       should_return="5")]
    assert _said_above(Observed(returns="4", should_return="5"), called)
    assert not _said_above(Observed(returns="4", should_return="6"), called)
