"""Commit messages cleaned into statements, on real messages from the bundles in shared/repos.

Each case is a message copied verbatim from a repository's history (its short sha and
repository in the name), with the part of its diff that the rules look at, and the
summary, kept paragraphs and dropped parts written by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from repogym.generators.commit_message import (
    CleanedMessage,
    DropReason,
    SummarySource,
    clean_commit_message,
    statement_from_message,
)
from repogym.generators.leaks import LeakKind, statement_leaks

R = DropReason

# ---------------------------------------------------------------- real diffs (excerpts)

INICONFIG_ITER_GOLD = '''diff --git a/iniconfig.py b/iniconfig.py
--- a/iniconfig.py
+++ b/iniconfig.py
@@ -46,10 +46,13 @@ class IniConfig(object):
         self.path = str(path) # convenience
         if data is None:
             f = open(self.path)
-            data = f.read()
-            f.close()
-        tokens = self._parse(data)
-        
+            try:
+                tokens = self._parse(iter(f))
+            finally:
+                f.close
+        else:
+            tokens = self._parse(data.splitlines(True))
+
         self._sources = {}
         self.sections = {}
 
@@ -69,10 +72,10 @@ class IniConfig(object):
     def _raise(self, lineno, msg):
         raise ParseError(self.path, lineno, msg)
 
-    def _parse(self, data):
+    def _parse(self, line_iter):
         result = []
         section = None
-        for lineno, line in enumerate(data.splitlines(True)):
+        for lineno, line in enumerate(line_iter):
             name, data = self._parseline(line, lineno)
             # new value
             if name is not None and data is not None:
'''

INICONFIG_BRACKET_GOLD = '''diff --git a/iniconfig.py b/iniconfig.py
--- a/iniconfig.py
+++ b/iniconfig.py
@@ -101,8 +101,6 @@ class IniConfig(object):
         # section
         if line[0] == '[' and line[-1] == ']':
             return line[1:-1], None
-        elif line[0] == '[' or line[-1] == ']':
-            self._raise(lineno, 'section syntax error')
         # value
         elif not line[0].isspace() and '=' in line:
             name, value = line.split('=', 2)
'''

MARKUPSAFE_ESCAPE_GOLD = '''diff --git a/markupsafe/_native.py b/markupsafe/_native.py
--- a/markupsafe/_native.py
+++ b/markupsafe/_native.py
@@ -18,7 +18,7 @@ def escape(s):
     such characters in HTML.  Marks return value as markup string.
     """
     if hasattr(s, '__html__'):
-        return s.__html__()
+        return Markup(s.__html__())
     return Markup(text_type(s)
         .replace('&', '&amp;')
         .replace('>', '&gt;')
'''

MARKUPSAFE_ESCAPE_TESTS = '''diff --git a/tests.py b/tests.py
--- a/tests.py
+++ b/tests.py
@@ -173,6 +173,14 @@ class MarkupTestCase(unittest.TestCase):
     def test_mul(self):
         self.assertEqual(Markup('a') * 3, Markup('aaa'))
 
+    def test_escape_return_type(self):
+        self.assertIsInstance(escape('a'), Markup)
+        self.assertIsInstance(escape(Markup('a')), Markup)
+        class Foo:
+            def __html__(self):
+                return '<strong>Foo</strong>'
+        self.assertIsInstance(escape(Foo()), Markup)
+
 
 class MarkupLeakTestCase(unittest.TestCase):
 
'''

MUX_MATCHERR_GOLD = '''diff --git a/route.go b/route.go
--- a/route.go
+++ b/route.go
@@ -43,6 +43,11 @@ func (r *Route) Match(req *http.Request, match *RouteMatch) bool {
 		return false
 	}
 
+	// Set MatchErr to nil to prevent
+	// subsequent matching subrouters from failing to run middleware.
+	// If not reset, the middleware would see a non-nil MatchErr and be skipped,
+	// even when there was a matching route.
+	match.MatchErr = nil
 	var matchErr error
 
 	// Match everything.
'''

MUX_MATCHERR_TESTS = '''diff --git a/middleware_test.go b/middleware_test.go
--- a/middleware_test.go
+++ b/middleware_test.go
@@ -375,3 +375,9 @@ func TestCORSMethodMiddleware(t *testing.T) {
 		}
 	}
 }
+
+func TestMiddlewareOnMultiSubrouter(t *testing.T) {
+	router := NewRouter()
+	firstSubRouter := router.PathPrefix("/").Subrouter()
+	secondSubRouter := router.PathPrefix("/").Subrouter()
+}
'''

MUX_WILDCARD_GOLD = '''diff --git a/regexp.go b/regexp.go
--- a/regexp.go
+++ b/regexp.go
@@ -325,6 +325,12 @@ func (v routeRegexpGroup) setMatch(req *http.Request, m *RouteMatch, r *Route) {
 	// Store host variables.
 	if v.host != nil {
 		host := getHost(req)
+		if v.host.wildcardHostPort {
+			// Don't be strict on the port match
+			if i := strings.Index(host, ":"); i != -1 {
+				host = host[:i]
+			}
+		}
 		matches := v.host.regexp.FindStringSubmatchIndex(host)
 		if len(matches) > 0 {
 			extractVars(host, matches, v.host.varsN, m.Vars)
'''

MUX_VARNAMES_GOLD = '''diff --git a/route.go b/route.go
--- a/route.go
+++ b/route.go
@@ -728,6 +728,12 @@ func (r *Route) GetHostTemplate() (string, error) {
 	return r.regexp.host.template, nil
 }
 
+// GetVarNames returns the names of all variables added by regexp matchers
+// These can be used to know which route variables should be passed into r.URL()
+func (r *Route) GetVarNames() ([]string, error) {
+	var varNames []string
+	return varNames, nil
+}
+
 // prepareVars converts the route variable pairs into a map. If the route has a
 // BuildVarsFunc, it is invoked.
 func (r *Route) prepareVars(pairs ...string) (map[string]string, error) {
'''

MUX_VARNAMES_TESTS = '''diff --git a/mux_test.go b/mux_test.go
--- a/mux_test.go
+++ b/mux_test.go
@@ -1,3 +1,5 @@
 package mux
 
+func TestGetVarNames(t *testing.T) {
+	varNames, err := route.GetVarNames()
 import "testing"
'''

SLUGIFY_UNIDECODE_GOLD = '''diff --git a/setup.py b/setup.py
--- a/setup.py
+++ b/setup.py
@@ -15,7 +15,10 @@ url = 'https://github.com/un33k/python-slugify'
 author = 'Val Neekman'
 author_email = 'info@neekware.com'
 license = 'MIT'
-install_requires = ['Unidecode>=0.04.16']
+if "WITH_TEXTUNIDECODE" in os.environ:
+    install_requires = ['text-unidecode>=1.2']
+else:
+    install_requires = ['Unidecode>=0.04.16']
 classifiers = [
     'Development Status :: 5 - Production/Stable',
     'Intended Audience :: Developers',
'''

LOG_FOREIGN_GOLD = '''diff --git a/src/lib.rs b/src/lib.rs
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1250,6 +1250,10 @@ impl Log for NopLogger {
     fn flush(&self) {}
 }
 
+impl<T> Log for &'_ T
+where
+    T: ?Sized + Log,
+{
 #[cfg(feature = "std")]
 impl<T> Log for std::boxed::Box<T>
 where
'''


@dataclass(frozen=True)
class Case:
    """A real message, the diff excerpts the rules read, and the expected outcome."""

    message: str
    summary: str
    body: tuple[str, ...]
    dropped: tuple[tuple[DropReason, str], ...]
    source: SummarySource = SummarySource.subject
    gold: str = ""
    tests: str = ""


CASES: dict[str, Case] = {
    # a lower-case co-author trailer, the whole message otherwise kept
    "markupsafe-dcb170b-coauthor": Case(
        "simplify speedups implementation\n\nco-authored-by: Carson Burr "
        "<carsonwburr@gmail.com>\n\n",
        summary="simplify speedups implementation", body=(),
        dropped=((R.trailer, "co-authored-by: Carson Burr <carsonwburr@gmail.com>"),)),
    # a "Fixes: <url>" + Signed-off-by trailer block; the quoted warning is the symptom
    "iniconfig-41076a6-fixes-url-signoff": Case(
        'Fix Pytest 5 errors\n\nThis fixes\n"""\npytest.PytestDeprecationWarning: raises(..., '
        "'code(as_a_string)')\nis deprecated, use the context manager form or use `exec()` "
        'directly.\n"""\n\nFixes: https://github.com/RonnyPfannschmidt/iniconfig/issues/6\n'
        "Signed-off-by: Stanislav Levin <slev@altlinux.org>\n\n",
        summary="Fix Pytest 5 errors",
        body=(('This fixes """ pytest.PytestDeprecationWarning: raises(..., '
              "'code(as_a_string)') is deprecated, use the context manager form or use "
              '`exec()` directly. """'),),
        dropped=((R.trailer, "Signed-off-by: Stanislav Levin <slev@altlinux.org>"),
                 (R.trailer, "Fixes: https://github.com/RonnyPfannschmidt/iniconfig/issues/6"))),
    # the subject says how ("instead of"): the body's symptom becomes the title
    "iniconfig-3f9546b-instead-of": Case(
        "iterate lines of input files instead of loading them whole\n\n"
        "this avoids denial of service for ____big____ files\n",
        summary="This avoids denial of service for ____big____ files", body=(),
        dropped=((R.approach, "iterate lines of input files instead of loading them whole"),),
        source=SummarySource.body, gold=INICONFIG_ITER_GOLD),
    # "by removing ..." is the fix; what comes before it is the problem
    "iniconfig-22a7f65-by-removing": Case(
        'allow "]" to end a value by removing a very unlikely error check\n',
        summary='allow "]" to end a value', body=(),
        dropped=((R.approach,
                  'allow "]" to end a value by removing a very unlikely error check'),),
        source=SummarySource.neutralized, gold=INICONFIG_BRACKET_GOLD),
    # names the tests use (escape, Markup) may stay; "This patch", a test note, "see issue"
    "markupsafe-a009444-this-patch": Case(
        "Fix the return type of escape to Markup\n\nThis patch fixes the return type of "
        "escape to always be Markup. It\naddresses the issue with custom class that "
        "implements the __html__\nmethod - see issue #68. A new test case, "
        "test_escape_return_type, is\nadded to test the behavior.\n",
        summary="Fix the return type of escape to Markup",
        body=("It addresses the issue with custom class that implements the __html__ method.",),
        dropped=((R.issue_reference, " - see issue #68"),
                 (R.approach, "This patch fixes the return type of escape to always be Markup."),
                 (R.test_note, ("A new test case, test_escape_return_type, is added to test "
                               "the behavior."))),
        gold=MARKUPSAFE_ESCAPE_GOLD, tests=MARKUPSAFE_ESCAPE_TESTS),
    # every sentence names MatchErr, which the fix introduces and no test uses
    "mux-ef912dd-all-implementation": Case(
        "[bugfix] Clear matchErr when traversing subrouters.\n\nPreviously, when searching "
        "for a match, matchErr would be erroneously set, and prevent middleware from running "
        "(no match == no middleware runs).\n\nThis fix clears matchErr before traversing the "
        "next subrouter in a multi-subrouter router.\n",
        summary="", body=(),
        dropped=((R.commit_type, "[bugfix]"),
                 (R.implementation, "Clear matchErr when traversing subrouters."),
                 (R.implementation, ("Previously, when searching for a match, matchErr would "
                                    "be erroneously set, and prevent middleware from running "
                                    "(no match == no middleware runs).")),
                 (R.approach, ("This fix clears matchErr before traversing the next subrouter "
                              "in a multi-subrouter router."))),
        source=SummarySource.none, gold=MUX_MATCHERR_GOLD, tests=MUX_MATCHERR_TESTS),
    # a conventional "fix:" type, "we have to add ...", a test note
    "mux-98cb6bf-conventional-fix": Case(
        "fix: regression in vars extract for wildcard host (#579)\n\nContinuing from PR #447 "
        "we have to add extra\ncheck to ignore the port as well\n\nadd tests to cover this "
        "case\n",
        summary="Regression in vars extract for wildcard host", body=(),
        dropped=((R.issue_reference, " (#579)"), (R.commit_type, "fix:"),
                 (R.approach, ("Continuing from PR #447 we have to add extra check to ignore "
                              "the port as well")),
                 (R.test_note, "add tests to cover this case")),
        gold=MUX_WILDCARD_GOLD),
    # GitHub's merge subject gives way to the pull request's title
    "mux-2854a05-merge-pull-request": Case(
        "Merge pull request #535 from fharding1/cors-subrouter-bug\n\n"
        "Fix the CORSMethodMiddleware bug with subrouters\n",
        summary="Fix the CORSMethodMiddleware bug with subrouters", body=(),
        dropped=((R.issue_reference,
                  "Merge pull request #535 from fharding1/cors-subrouter-bug"),)),
    "iniconfig-30a0fa8-merge-and-fix-ref": Case(
        "Merge pull request #60 from corenting/include_tests_in_sdist\n\n"
        "Include tests in sdist (fix #57)\n",
        summary="Include tests in sdist", body=(),
        dropped=((R.issue_reference,
                  "Merge pull request #60 from corenting/include_tests_in_sdist"),
                 (R.issue_reference, "(fix #57)"))),
    # svn metadata, and PR/Submitted by lines right under the subject
    "commons-cli-249ba6c-svn-trailers": Case(
        "Nested group handling improved\nApplied the test from the bug and implemented an "
        "alternate fix\nPR: 32533\nSubmitted by: David Morris\n\n\ngit-svn-id: "
        "https://svn.apache.org/repos/asf/jakarta/commons/proper/cli/trunk@155218 "
        "13f79535-47bb-0310-9956-ffa450edef68\n\n",
        summary="Nested group handling improved",
        body=("Applied the test from the bug and implemented an alternate fix",),
        dropped=((R.vcs_metadata, ("git-svn-id: https://svn.apache.org/repos/asf/jakarta/"
                                  "commons/proper/cli/trunk@155218 "
                                  "13f79535-47bb-0310-9956-ffa450edef68")),
                 (R.trailer, "PR: 32533\nSubmitted by: David Morris"))),
    "commons-cli-9cb37e0-bug-number": Case(
        "Line separator as first char for helpformatter footer and header no longer throws "
        "exception\n\nBR: 21215\n\n\ngit-svn-id: https://svn.apache.org/repos/asf/jakarta/"
        "commons/proper/cli/trunk@130113 13f79535-47bb-0310-9956-ffa450edef68\n\n",
        summary="Line separator as first char for helpformatter footer and header no longer "
                "throws exception", body=(),
        dropped=((R.vcs_metadata, ("git-svn-id: https://svn.apache.org/repos/asf/jakarta/"
                                  "commons/proper/cli/trunk@130113 "
                                  "13f79535-47bb-0310-9956-ffa450edef68")),
                 (R.trailer, "BR: 21215"))),
    "commons-cli-2061b33-skip-ci": Case(
        "Add dependabot email [skip ci]\n\n", summary="Add dependabot email", body=(),
        dropped=((R.ci_directive, " [skip ci]"),)),
    "mime-types-02e8eb2-conventional-type": Case(
        "fix: update JSDoc to convey only false return (#152)\n",
        summary="Update JSDoc to convey only false return", body=(),
        dropped=((R.issue_reference, " (#152)"), (R.commit_type, "fix:"))),
    # a pull request's body: "This PR", "instead of" and a Closes: trailer all go
    "slugify-874fe14-this-pr": Case(
        "Use unidecode as an API and allow alternatives (#53)\n\nThis PR allows specifying "
        "WITH_TEXTUNIDECODE when\r\ninstalling python-slugify. This allows using\r\n"
        "text-unidecode instead of unidecode. It will default\r\nto using unidecode.\r\n\r\n"
        "Closes: #51\n",
        summary="Use unidecode as an API and allow alternatives",
        body=("It will default to using unidecode.",),
        dropped=((R.trailer, "Closes: #51"), (R.issue_reference, " (#53)"),
                 (R.approach, ("This PR allows specifying WITH_TEXTUNIDECODE when installing "
                              "python-slugify.")),
                 (R.approach, "This allows using text-unidecode instead of unidecode.")),
        gold=SLUGIFY_UNIDECODE_GOLD),
    # a pull-request template: its "Summary of Changes" section is the implementation
    "mux-395ad81-pr-template": Case(
        "[BUG] Inconsistent HTTP status code on query mismatch (#712)\n\nThe logical behavior "
        "of a router should return an HTTP status code of\r\n404 when a request fails to "
        "satisfy route validation logic. Previously,\r\nMUX was returning a 405 HTTP status "
        "code in some rare scenarios, which\r\nwas not valid in its case.\r\n\r\nFor more "
        "info, See: https://github.com/gorilla/mux/issues/704\r\n\r\nFixes #704 \r\n\r\n"
        "**Summary of Changes**\r\n\r\n1. Clear the mismatch error of the previous validations "
        "on method match.\r\n2. Added related tests\r\n\r\n> PS: Make sure your PR "
        "includes/updates tests! If you need help with\r\nthis part, just ask!\r\n\r\n"
        "Co-authored-by: Corey Daley <cdaley@redhat.com>\n",
        summary="Inconsistent HTTP status code on query mismatch",
        body=(("The logical behavior of a router should return an HTTP status code of 404 when "
              "a request fails to satisfy route validation logic. Previously, MUX was "
              "returning a 405 HTTP status code in some rare scenarios, which was not valid "
              "in its case."),),
        dropped=((R.trailer, "Co-authored-by: Corey Daley <cdaley@redhat.com>"),
                 (R.issue_reference, " (#712)"), (R.commit_type, "[BUG]"),
                 (R.url, "https://github.com/gorilla/mux/issues/704"),
                 (R.issue_reference, "Fixes #704"),
                 (R.template, "**Summary of Changes**"),
                 (R.approach, ("1. Clear the mismatch error of the previous validations on "
                              "method match.")),
                 (R.approach, "2. Added related tests"),
                 (R.approach, ("> PS: Make sure your PR includes/updates tests! If you need "
                              "help with")),
                 (R.approach, "this part, just ask!"))),
    # the new name is the API the tests call: it may be in the title
    "mux-4a671cb-new-api": Case(
        "Add GetVarNames() (#676)\n\n**Summary of Changes**\r\n\r\n1. Added "
        "`r.GetVarNames()` function to list all vars a route might need\r\nin order to call "
        "`r.URL()`\r\n\r\n---------\r\n\r\nCo-authored-by: Anonymous <anonymous@github.com>"
        "\r\nCo-authored-by: Corey Daley <cdaley@redhat.com>\n",
        summary="Add GetVarNames()", body=(),
        dropped=((R.template, "---------"),
                 (R.trailer, "Co-authored-by: Anonymous <anonymous@github.com>"),
                 (R.trailer, "Co-authored-by: Corey Daley <cdaley@redhat.com>"),
                 (R.issue_reference, " (#676)"), (R.template, "**Summary of Changes**"),
                 (R.approach, ("1. Added `r.GetVarNames()` function to list all vars a route "
                              "might need")),
                 (R.approach, "in order to call `r.URL()`")),
        gold=MUX_VARNAMES_GOLD, tests=MUX_VARNAMES_TESTS),
    # a squash merge: the folded commits' subjects are the steps, not the problem (rule 7)
    "slugify-d968ca7-squash": Case(
        "allow unicode (#111)\n\n* initial commit to allow unicode\r\n\r\n"
        "* update version and changelog\r\n\r\n* add the flag to the CLI\r\n\r\n"
        "* update README.md\n",
        summary="allow unicode", body=(),
        dropped=((R.commit_list, "* initial commit to allow unicode"),
                 (R.commit_list, "* update version and changelog"),
                 (R.commit_list, "* add the flag to the CLI"),
                 (R.commit_list, "* update README.md"),
                 (R.issue_reference, " (#111)"))),
    "slugify-2433548-squash-coauthors": Case(
        "Uppercase handling of special chars (#149)\n\n"
        "* Remove compatibility with unsupported Python versions (#146)\r\n"
        "* fix uppercase pre-translations (#148)\r\n\r\n"
        "Co-authored-by: Viicos <65306057+Viicos@users.noreply.github.com>\r\n"
        "Co-authored-by: Michael <35783820+mib1185@users.noreply.github.com>\n",
        summary="Uppercase handling of special chars", body=(),
        dropped=((R.trailer, "Co-authored-by: Viicos <65306057+Viicos@users.noreply.github.com>"),
                 (R.trailer, "Co-authored-by: Michael <35783820+mib1185@users.noreply.github.com>"),
                 (R.commit_list, "* Remove compatibility with unsupported Python versions (#146)"),
                 (R.commit_list, "* fix uppercase pre-translations (#148)"),
                 (R.issue_reference, " (#149)"))),
    # thanks on a line of its own say nothing of the problem
    "slugify-646761e-thx": Case(
        "add support user-specific replacements (#66)\n\nthx\n",
        summary="add support user-specific replacements", body=(),
        dropped=((R.courtesy, "thx"), (R.issue_reference, " (#66)"))),
    # "Closes #458." opens a paragraph: that sentence goes, the rest stays
    "log-4a1d488-closes-inline": Case(
        "Add Log implementation on foreign types\n\nCloses #458. Implements Log for references "
        "to loggers, as well as loggers wrapped\nin `Arc` or `Pin`. More may be added in the "
        "future.\n",
        summary="Add Log implementation on foreign types",
        body=(("Implements Log for references to loggers, as well as loggers wrapped in `Arc` "
              "or `Pin`. More may be added in the future."),),
        dropped=((R.issue_reference, "Closes #458."),), gold=LOG_FOREIGN_GOLD),
}


def _dropped(cleaned: CleanedMessage) -> tuple[tuple[DropReason, str], ...]:
    return tuple((d.reason, d.text) for d in cleaned.dropped)


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_message(name: str) -> None:
    case = CASES[name]
    cleaned = clean_commit_message(case.message, case.gold, test_patch=case.tests)
    assert cleaned.summary == case.summary
    assert cleaned.body == case.body
    assert cleaned.summary_source is case.source
    assert sorted(_dropped(cleaned)) == sorted((r, t.strip()) for r, t in case.dropped)


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_statement_leaks_nothing(name: str) -> None:
    case = CASES[name]
    statement = statement_from_message(
        clean_commit_message(case.message, case.gold, test_patch=case.tests))
    assert statement_leaks(statement, case.gold, case.tests) == []
    assert "-by:" not in statement.lower() and "git-svn-id" not in statement


# ---------------------------------------------------------------- forms the bundles lack

GERRIT = """Fix crash when the config file is empty

Loading an empty file raises IndexError instead of returning defaults.

Change-Id: I8c2a0b8e3f5d4c1a9e7b6d5c4b3a2f1e0d9c8b7a
Reviewed-on: https://review.example.org/c/project/+/12345
Reviewed-by: Jane Doe <jane@example.org>
Tested-by: CI Bot <ci@example.org>
(cherry picked from commit 0123456789abcdef0123456789abcdef01234567)
"""


def test_bullets_are_a_commit_list_only_under_a_squash_merge_subject() -> None:
    """Without ``(#N)`` on the subject, or with prose among the items, the bullets are the
    author's own description and are judged one by one."""
    items = "* `parse('')` raises IndexError\n* `parse(' ')` returns None\n"
    plain = clean_commit_message("Fix parsing of blank input\n\n" + items, "")
    assert plain.body == ("* `parse('')` raises IndexError\n* `parse(' ')` returns None",)
    mixed = clean_commit_message(
        "Fix parsing of blank input (#12)\n\nBlank input crashes.\n\n" + items, "")
    assert R.commit_list not in mixed.reasons and len(mixed.body) == 2
    squash = clean_commit_message("Fix parsing of blank input (#12)\n\n" + items, "")
    assert squash.body == () and squash.reasons == (R.commit_list, R.issue_reference)


def test_thanks_go_but_a_sentence_starting_with_thanks_stays() -> None:
    cleaned = clean_commit_message(
        "Fix parsing of blank input\n\nThanks to @mib1185 for reporting.\n\n"
        "Thanks to caching, blank input now raises IndexError on a second call.\n", "")
    assert cleaned.body == ("Thanks to caching, blank input now raises IndexError on a second call.",)
    assert cleaned.reasons == (R.courtesy,)


def test_gerrit_trailers_and_cherry_pick() -> None:
    cleaned = clean_commit_message(GERRIT, "")
    assert statement_from_message(cleaned) == (
        "Fix crash when the config file is empty\n\n"
        "Loading an empty file raises IndexError instead of returning defaults.")
    assert cleaned.reasons == (R.trailer, R.vcs_metadata)


def test_a_contrast_that_names_the_fix_goes() -> None:
    """"instead of" in a symptom stays (above) unless it names a changed identifier."""
    gold = ("--- a/cfg.py\n+++ b/cfg.py\n@@ -1 +1 @@\n-    return lines[0]\n"
            "+    return lines[0] if lines else load_defaults()\n")
    message = ("Fix crash when the config file is empty\n\nLoading an empty file raises "
               "IndexError instead of calling load_defaults().\n")
    cleaned = clean_commit_message(message, gold)
    assert cleaned.body == ()
    assert _dropped(cleaned) == ((R.approach, ("Loading an empty file raises IndexError "
                                              "instead of calling load_defaults().")),)


@pytest.mark.parametrize("message, summary, dropped", [
    (":bug: Fix off-by-one in page count", "Fix off-by-one in page count",
     ((R.emoji, ":bug:"),)),
    ("fix(parser): crash on empty input", "parser: crash on empty input",
     ((R.commit_type, "fix(parser):"),)),
    ("bugfix - wrong total for empty carts", "Wrong total for empty carts",
     ((R.commit_type, "bugfix -"),)),
    ("[ci skip] docs: typo in README", "Typo in README",
     ((R.ci_directive, "[ci skip]"), (R.commit_type, "docs:"))),
    ("Merge branch 'fix-totals'\n\nTotals are wrong for empty carts",
     "Totals are wrong for empty carts", ((R.issue_reference, "Merge branch 'fix-totals'"),)),
    ("std::sync::atomic must not lose its colons", "std::sync::atomic must not lose its colons",
     ()),
])
def test_subject_noise(message: str, summary: str,
                       dropped: tuple[tuple[DropReason, str], ...]) -> None:
    cleaned = clean_commit_message(message, "")
    assert cleaned.summary == summary
    assert _dropped(cleaned) == dropped


def test_the_fix_paragraph_of_the_problem_report_goes() -> None:
    """The case that started this: the statement handed the solver the solution."""
    gold = ("--- a/pkg/stats.py\n+++ b/pkg/stats.py\n@@ -3,2 +3,2 @@ def copy(self):\n"
            "     clone = Stats()\n-    clone._local = {}\n+    clone._local = self._local\n")
    message = ("Copies lose their statistics\n\n"
               "After copy(), the copy reports zero hits when the original had some.\n\n"
               "Fix by pointing the original's _local.statistics at the copy's.\n")
    cleaned = clean_commit_message(message, gold)
    assert statement_from_message(cleaned) == (
        "Copies lose their statistics\n\n"
        "After copy(), the copy reports zero hits when the original had some.")
    assert cleaned.reasons == (R.approach,)


def test_private_names_are_dropped_even_in_a_symptom() -> None:
    gold = ("--- a/pkg/stats.py\n+++ b/pkg/stats.py\n@@ -3,2 +3,2 @@ def copy(self):\n"
            "     clone = Stats()\n-    clone._local = {}\n+    clone._local = self._local\n")
    cleaned = clean_commit_message("Copies lose statistics\n\nThe copy's _local is empty "
                                   "when it should not be.", gold)
    assert cleaned.body == ()
    assert cleaned.reasons == (R.implementation,)


def test_nothing_left_means_no_statement() -> None:
    gold = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = old_helper()\n+x = new_helper()\n"
    cleaned = clean_commit_message("Switch to new_helper\n\nSigned-off-by: A <a@b.c>", gold)
    assert cleaned.needs_statement and cleaned.summary_source is SummarySource.none
    assert statement_from_message(cleaned) == ""
    assert cleaned.reasons == (R.trailer, R.approach)


def test_a_long_body_sentence_is_shortened_for_the_title_and_kept_whole() -> None:
    gold = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = old_helper()\n+x = new_helper()\n"
    symptom = ("Parsing a file whose last line has no newline drops that line, so the last "
               "key is missing from the result")
    cleaned = clean_commit_message(f"Use new_helper\n\n{symptom}.", gold)
    assert cleaned.summary_source is SummarySource.body
    assert cleaned.summary.endswith("…") and len(cleaned.summary) <= 80
    assert cleaned.body == (f"{symptom}.",)


def test_code_blocks_quoting_the_patch_go_and_tracebacks_stay() -> None:
    gold = ("--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-    return int(text)\n"
            "+    return int(text or 0)\n")
    message = ("Empty field crashes the parser\n\n```\n>>> parse('')\nValueError: invalid "
               "literal for int() with base 10: ''\n```\n\nThe fix:\n\n```\n"
               "    return int(text or 0)\n```\n")
    cleaned = clean_commit_message(message, gold)
    assert cleaned.body == (("```\n>>> parse('')\nValueError: invalid literal for int() with "
                            "base 10: ''\n```"),)
    assert [d.reason for d in cleaned.dropped] == [R.approach, R.quotes_patch]  # "The fix:"


def test_trailer_block_needs_every_line_shaped_or_a_known_key() -> None:
    message = ("Keep ordering of sections\n\nTime Improvement: 4,713 ns/op down to 2,792\n"
               "ns/op in the benchmark.\n")
    cleaned = clean_commit_message(message, "")
    assert cleaned.body == (("Time Improvement: 4,713 ns/op down to 2,792 ns/op in the "
                            "benchmark."),)
    assert cleaned.dropped == ()


def test_statement_renders_title_blank_line_body() -> None:
    cleaned = CleanedMessage(summary="Title", body=("One.", "- a\n- b"))
    assert statement_from_message(cleaned) == "Title\n\nOne.\n\n- a\n- b"
    assert statement_from_message(CleanedMessage(summary="")) == ""


def test_leak_kinds_are_what_the_cleaner_prevents() -> None:
    """Raw messages leak; cleaned ones do not (the same rules on both sides)."""
    case = CASES["iniconfig-22a7f65-by-removing"]
    raw = statement_leaks(case.message, case.gold)
    assert [leak.kind for leak in raw] == []  # "by removing" names no changed identifier
    case = CASES["slugify-874fe14-this-pr"]
    assert LeakKind.approach in {leak.kind for leak in statement_leaks(case.message, case.gold)}


TOML_GOLD = """diff --git a/lex.go b/lex.go
--- a/lex.go
+++ b/lex.go
@@ -239,9 +239,6 @@ func (lx *lexer) skip(pred func(rune) bool) {
 // Note that any value that is a character is escaped if it's a special
 // character (newlines, tabs, etc.).
 func (lx *lexer) error(err error) stateFn {
-	if lx.atEOF {
-		return lx.errorPrevLine(err)
-	}
 	lx.items <- item{typ: itemError, pos: lx.getPos(), err: err}
 	return nil
 }
"""


def test_go_unexported_names_of_the_fix_are_implementation() -> None:
    """BurntSushi/toml's "Correct line number if error is at end of input": a sentence
    naming the unexported method and field the fix removes said how to fix it (Go's
    lower-case names are private, as ``_name`` is in Python)."""
    message = ("Correct line number if error is at end of input\n\n"
               "The error would be on the wrong (previous) line if the error is at the end of "
               "the input document.\n\n"
               "Not sure why lexer.error() would call errorPrevLine() on atEOF? Everything "
               "seems to work fine if I just remove that.\n")
    cleaned = clean_commit_message(message, TOML_GOLD)
    assert not any("errorPrevLine" in s for s in (cleaned.summary, *cleaned.body))
    assert [d.reason for d in cleaned.dropped] == [DropReason.implementation]
    assert cleaned.body[0].startswith("The error would be on the wrong (previous) line")
