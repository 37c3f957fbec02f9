"""Which files grading protects whole and which by their test code only."""

from __future__ import annotations

from repogym.grading import GradingSpec, protected_paths, span_guarded_paths

LIB_TESTS = ("diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n"
             "@@ -40,2 +40,3 @@\n     #[test]\n+    fn new_case() {}\n     fn old_case() {}\n")
INTEGRATION = ("diff --git a/tests/glob.rs b/tests/glob.rs\n--- a/tests/glob.rs\n"
               "+++ b/tests/glob.rs\n@@ -1 +1,2 @@\n #[test]\n+fn t() {}\n")


def spec(language: str, test_patch: str) -> GradingSpec:
    return GradingSpec(instance_id="t", image="i", language=language, base_commit="c",
                       bug_patch="", test_patch=test_patch,
                       FAIL_TO_PASS=("src/lib.rs::test::new_case",),
                       PASS_TO_PASS=("tests/glob.rs::t",))


def test_a_rust_test_patch_in_a_source_file_guards_its_test_code_only() -> None:
    rust = spec("rust", LIB_TESTS + INTEGRATION)
    assert span_guarded_paths(rust) == {"src/lib.rs"}  # the fix goes there too
    assert protected_paths(rust) == {"tests/glob.rs"}


def test_without_unit_tests_in_sources_the_test_patch_files_are_protected_whole() -> None:
    py = spec("python", LIB_TESTS)
    assert span_guarded_paths(py) == set()
    assert "src/lib.rs" in protected_paths(py)
