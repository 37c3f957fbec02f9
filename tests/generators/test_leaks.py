"""Statement leak checks: quoted lines, names the fix introduces, and how-it-was-fixed text."""

from __future__ import annotations

import pytest

from repogym.generators.leaks import (
    Leak,
    LeakKind,
    patch_names,
    patch_sides,
    sentences,
    statement_leaks,
    used_by_tests,
)
from repogym.schemas.calls import CallRecord, CallTrace, StatementEvidence
from repogym.schemas.records import Candidate, CandidateKind

GOLD = '''diff --git a/shop/cart.py b/shop/cart.py
index 1111111..2222222 100644
--- a/shop/cart.py
+++ b/shop/cart.py
@@ -10,7 +10,9 @@ class Cart:
     def add(self, name, price, quantity=1):
         """Add ``quantity`` of an item."""
-        self._lines[name] = price * quantity
+        if quantity <= 0:
+            raise InvalidQuantity(quantity)
+        self._lines[name] = _line_total(price, quantity)
 
     def total(self):
         return round_money(sum(self._lines.values()))
'''

TESTS = '''diff --git a/tests/test_cart.py b/tests/test_cart.py
--- a/tests/test_cart.py
+++ b/tests/test_cart.py
@@ -1,3 +1,8 @@
 from shop.cart import Cart
+from shop.errors import InvalidQuantity
+
+def test_rejects_zero():
+    with pytest.raises(InvalidQuantity):
+        Cart().add("pen", 1.5, 0)
'''


def kinds(leaks: list[Leak]) -> list[tuple[LeakKind, str]]:
    return [(leak.kind, leak.fragment) for leak in leaks]


# ---------------------------------------------------------------- reading the patch


def test_patch_names_by_side() -> None:
    names = patch_names(GOLD)
    # called, dotted or code-shaped; "quantity" and "price" are only arguments: plain words
    assert names.changed == {"InvalidQuantity", "_line_total", "_lines"}
    assert names.introduced == {"InvalidQuantity", "_line_total"}  # _lines was removed too
    assert {"round_money", "quantity", "_lines", "total"} <= names.existing
    assert names.public(used_by_tests(TESTS)) == {"InvalidQuantity"}
    assert names.public(frozenset()) == set()  # _lines existed, but is private


def test_patch_sides_follow_the_hunk_counts() -> None:
    """A removed line whose text starts with "-- a/" stays a removed line."""
    diff = ("--- a/notes.py\n+++ b/notes.py\n@@ -1,2 +1,2 @@\n--- a/old_marker = 1\n"
            "+++ b/new_marker = 2\n keep = 3\n")
    (sides,) = patch_sides(diff)
    assert sides.path == "notes.py"
    assert sides.removed == ("-- a/old_marker = 1",)
    assert sides.added == ("++ b/new_marker = 2",)
    assert sides.context == ("", "keep = 3")  # the hunk header's section, then the line


def test_patch_sides_name_each_file_and_deletions() -> None:
    diff = (GOLD + "diff --git a/old.py b/old.py\ndeleted file mode 100644\n--- a/old.py\n"
            "+++ /dev/null\n@@ -1 +0,0 @@\n-def gone_helper(): pass\n")
    assert [s.path for s in patch_sides(diff)] == ["shop/cart.py", "old.py"]
    assert "gone_helper" in patch_names(diff).changed


def test_configuration_keys_are_not_code() -> None:
    toml = ('--- a/Cargo.toml\n+++ b/Cargo.toml\n@@ -1 +1 @@\n-regex = "1"\n'
            '+regex = { version = "1", optional = true, default_features = false }\n')
    assert patch_names(toml).changed == {"default_features"}  # shaped names still count


def test_plain_words_in_comments_and_urls_are_not_code() -> None:
    diff = ("--- a/m.py\n+++ b/m.py\n@@ -1 +1,3 @@\n-x = 1\n+# the cache expires when idle\n"
            "+URL = 'https://github.com/acme/widget'\n+x = 2\n")
    assert patch_names(diff).changed == set()  # x is too short, URL an acronym


# ---------------------------------------------------------------- the three kinds


def test_verbatim_lines_of_eight_chars_or_more() -> None:
    text = "It does   `if quantity <= 0:` and then `raise`."
    assert kinds(statement_leaks(text, GOLD)) == [(LeakKind.verbatim_line, "if quantity <= 0:")]
    assert statement_leaks("the total is wrong", GOLD) == []


def test_introduced_names_leak_unless_the_tests_use_them() -> None:
    text = "Adding zero pens should raise InvalidQuantity; totals go through _line_total()."
    assert kinds(statement_leaks(text, GOLD)) == [
        (LeakKind.new_identifier, "InvalidQuantity"), (LeakKind.new_identifier, "_line_total")]
    assert kinds(statement_leaks(text, GOLD, TESTS)) == [
        (LeakKind.new_identifier, "_line_total")]


def test_existing_names_are_not_new() -> None:
    assert statement_leaks("`Cart.add` accepts a zero quantity and round_money hides it.",
                           GOLD) == []


CLICK_GOLD = '''--- a/src/click/termui.py
+++ b/src/click/termui.py
@@ -83,3 +83,6 @@ def _readline_prompt(func, text, err):
     """Call a prompt function."""
+    # Look up ``should_strip_ansi`` on the module so that ``CliRunner``,
+    # which patches it there during test isolation, is honored.
+    text = strip_ansi(text)
     if err:
'''


def test_names_the_failing_tests_call_before_the_fix_are_not_new() -> None:
    """click fe3ad76e58: a comment of the fix names ``CliRunner``, which the tests call in
    the broken state (the statement shows ``click.testing.CliRunner.invoke``): not the
    fix's name; ``should_strip_ansi``, which the tests never call, still is."""
    text = "`click.testing.CliRunner.invoke(cli, input='y')` returns a coloured prompt."
    assert kinds(statement_leaks(text, CLICK_GOLD)) == [(LeakKind.new_identifier, "CliRunner")]
    evidence = StatementEvidence(fail_to_pass=("t",), broken=CallTrace(calls={"t": (
        CallRecord(test="t", index=0, function="click.testing.CliRunner.invoke"),)}))
    assert {"click", "testing", "CliRunner", "invoke"} <= evidence.called_names()
    assert statement_leaks(text, CLICK_GOLD, existing=evidence.called_names()) == []
    assert kinds(statement_leaks(text + " Use should_strip_ansi.", CLICK_GOLD,
                                 existing=evidence.called_names())) == [
        (LeakKind.new_identifier, "should_strip_ansi")]


@pytest.mark.parametrize("mention", ["`_line_total`", "shop.cart._line_total",
                                     "_line_total()", "`total = _line_total(p, q)`"])
def test_mentions_are_matched_however_written(mention: str) -> None:
    leaks = statement_leaks(f"Totals should use {mention}.", GOLD, TESTS)
    assert (LeakKind.new_identifier, "_line_total") in kinds(leaks)


def test_approach_needs_a_phrase_and_a_changed_name() -> None:
    """The tests use InvalidQuantity (not a new-name leak), but saying the fix raises it is
    an approach leak; an approach phrase without a changed name is none."""
    text = ("Adding zero pens should fail. Fix by raising InvalidQuantity first. "
            "This commit makes the cart stricter.")
    assert kinds(statement_leaks(text, GOLD, TESTS)) == [
        (LeakKind.approach, "Fix by raising InvalidQuantity first.")]


def test_a_first_letter_of_another_case_still_matches() -> None:
    diff = "--- a/r.go\n+++ b/r.go\n@@ -1 +1,2 @@\n var x int\n+\tmatch.MatchErr = nil\n"
    assert kinds(statement_leaks("Previously matchErr stayed set.", diff)) == [
        (LeakKind.new_identifier, "MatchErr")]


def test_short_and_common_words_never_count() -> None:
    diff = ("--- a/m.py\n+++ b/m.py\n@@ -1 +1,2 @@\n-def run(): pass\n+def value(): pass\n"
            "+def get(): return value()\n")
    assert statement_leaks("Use value instead of get: the run is wrong.", diff) == []


def test_called_as_the_pipeline_calls_it() -> None:
    cand = Candidate(kind=CandidateKind.mined, repo="shop", base_commit="0" * 40, bug_patch="",
                     gold_patch=GOLD, test_patch=TESTS, generator="mined",
                     statement="Cart.add: reject zero quantities with InvalidQuantity")
    assert statement_leaks(cand.statement, cand.gold_patch, cand.test_patch) == []


# ---------------------------------------------------------------- real messages


def test_real_raw_messages_leak() -> None:
    """Two raw messages from the bundles: markupsafe 80aff03 quotes its requirements diff,
    iniconfig f4f21e5 names the dunder it introduces (its tests use ``in``, not the name)."""
    gold = ("--- a/requirements/docs.in\n+++ b/requirements/docs.in\n@@ -1,3 +1,2 @@\n"
            " Sphinx\n pallets-sphinx-themes\n-sphinx-issues\n")
    message = "update project files\n\n* use sphinx.ext.extlinks instead of sphinx-issues\n"
    assert kinds(statement_leaks(message, gold)) == [(LeakKind.verbatim_line, "sphinx-issues")]
    gold = ("--- a/iniconfig.py\n+++ b/iniconfig.py\n@@ -60,2 +60,5 @@ class IniConfig(object):\n"
            "     def __iter__(self):\n         return iter(self.sections)\n+\n"
            "+    def __contains__(self, arg):\n+        return arg in self.sections\n")
    tests = ("--- a/test_iniconfig.py\n+++ b/test_iniconfig.py\n@@ -1 +1,3 @@\n import py\n"
             "+def test_contains():\n+    assert 'section' in IniConfig('x', data='[section]')\n")
    assert kinds(statement_leaks("add __contains__ and CHANGELOG", gold, tests)) == [
        (LeakKind.new_identifier, "__contains__")]


def test_sentences_split_paragraphs_bullets_and_abbreviations() -> None:
    text = ("Title line\n\nFirst one, e.g. like this. Second\none.\n* a bullet. Still it\n"
            "- another")
    assert sentences(text) == ["Title line", "First one, e.g. like this.", "Second one.",
                               "* a bullet.", "Still it", "- another"]
