"""A Rust fix commit's change to a source file cut at its ``#[cfg(test)]`` module: the
test lines to the test patch, the rest to the gold patch, either order applying."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Callable

from repogym.generators.mined import CommitSelection, dependency_fingerprint, mine_candidates
from repogym.generators.span_split import Entangled, SpanCut, cut_at_test_spans
from repogym.patches import changed_lines
from repogym.schemas.records import Checkout, RepoSpec
from repogym.toolchains.base import toolchain_for
from tests.conftest import git

RUST = toolchain_for("rust")
PY = toolchain_for("python")

# glob's src/lib.rs, cut down: code, then its unit tests
BEFORE = """\
//! Support for matching file paths against Unix shell style patterns.

use std::path::Path;

/// A compiled Unix shell style pattern.
pub struct Pattern {
    original: String,
}

impl Pattern {
    /// This function compiles Unix shell style patterns.
    pub fn new(pattern: &str) -> Result<Self, PatternError> {
        if pattern.is_empty() {
            return Err(PatternError { pos: 0, msg: "empty" });
        }
        Ok(Self { original: pattern.to_string() })
    }

    /// Return if the given `str` matches this `Pattern`.
    pub fn matches(&self, str: &str) -> bool {
        self.original == str
    }
}

#[derive(Debug)]
pub struct PatternError {
    pub pos: usize,
    pub msg: &'static str,
}

#[cfg(test)]
mod test {
    use super::Pattern;

    #[test]
    fn test_pattern_from_str() {
        assert!("a*b".parse::<Pattern>().unwrap().matches("a_b"));
    }

    #[test]
    fn test_wildcard_errors() {
        assert!(Pattern::new("a/**b").unwrap_err().pos == 4);
    }
}
"""

FIX = BEFORE.replace("""        self.original == str
""", """        self.original == str || self.original == "*"
""")
AFTER = FIX.replace("""        assert!(Pattern::new("a/**b").unwrap_err().pos == 4);
    }
""", """        assert!(Pattern::new("a/**b").unwrap_err().pos == 4);
    }

    #[test]
    fn test_star_matches_anything() {
        assert!(Pattern::new("*").unwrap().matches("abc"));
    }
""")


def apply(tmp: Path, text: str, *patches: str) -> str:
    (tmp / "src").mkdir(parents=True)
    (tmp / "src/lib.rs").write_text(text)
    for patch in patches:
        if patch:
            subprocess.run(["git", "apply", "-"], input=patch.encode(), cwd=tmp, check=True)
    return (tmp / "src/lib.rs").read_text()


def test_tests_and_fix_of_one_source_file_are_cut_and_apply_in_either_order(
        tmp_path: Path) -> None:
    cut = cut_at_test_spans(RUST, "src/lib.rs", BEFORE, AFTER)
    assert isinstance(cut, SpanCut)
    assert "+    fn test_star_matches_anything() {" in cut.test_patch
    assert "self.original" not in cut.test_patch
    assert '+        self.original == str || self.original == "*"' in cut.gold_patch
    assert not [line for line in cut.gold_patch.splitlines()
                if line[:1] in "+-" and "test_star" in line]
    # the broken state: the new test, the old code
    broken = AFTER.replace(' || self.original == "*"', "")
    assert apply(tmp_path / "a", BEFORE, cut.test_patch) == broken
    assert apply(tmp_path / "b", BEFORE, cut.test_patch, cut.gold_patch) == AFTER
    assert apply(tmp_path / "c", BEFORE, cut.gold_patch, cut.test_patch) == AFTER
    # the gold patch changes no test line: grading's span guard keeps it
    test_lines = {n for a, b in RUST.test_spans("src/lib.rs", AFTER) for n in range(a, b + 1)}
    assert not set(changed_lines(cut.gold_patch)["src/lib.rs"]) & test_lines


def test_a_change_without_test_lines_is_all_gold() -> None:
    cut = cut_at_test_spans(RUST, "src/lib.rs", BEFORE, FIX)
    assert isinstance(cut, SpanCut) and cut.test_patch == "" and cut.gold_patch


def test_toolchains_without_spans_keep_the_whole_change_in_gold() -> None:
    cut = cut_at_test_spans(PY, "src/lib.rs", BEFORE, AFTER)
    assert isinstance(cut, SpanCut) and cut.test_patch == ""
    assert "test_star_matches_anything" in cut.gold_patch


def test_code_next_to_the_tests_is_entangled() -> None:
    # a fix at the end of the code, right above the test module: each in the other's context
    close = AFTER.replace("    pub msg: &'static str,\n}\n", "    pub msg: &'static str,\n}\n"
                          "\npub fn helper() {}\n").replace(
        "    use super::Pattern;\n", "    use super::{helper, Pattern};\n")
    assert cut_at_test_spans(RUST, "src/lib.rs", BEFORE, close) is Entangled.too_close


def test_one_block_of_code_and_tests_is_entangled() -> None:
    merged = BEFORE + "\npub fn extra() {}\n#[cfg(test)]\nmod more {\n    #[test]\n    fn t() {}\n}\n"
    assert cut_at_test_spans(RUST, "src/lib.rs", BEFORE, merged) is Entangled.mixed_block


def test_a_source_file_with_tests_added_whole_is_entangled() -> None:
    assert cut_at_test_spans(RUST, "src/new.rs", None, AFTER) is Entangled.added_or_deleted
    cut = cut_at_test_spans(RUST, "src/new.rs", None, "pub fn f() {}\n")
    assert cut is Entangled.added_or_deleted or isinstance(cut, SpanCut)


def test_mining_cuts_a_rust_fix_and_counts_cargo_dependencies(
        make_git_repo: Callable[..., Path]) -> None:
    manifest = '[package]\nname = "glob"\nversion = "0.3.0"\n\n[dev-dependencies]\ntempdir = "0.3"\n'
    root = make_git_repo({"Cargo.toml": manifest, "src/lib.rs": BEFORE}, name="crate")
    (root / "src/lib.rs").write_text(AFTER)
    (root / "Cargo.toml").write_text(manifest.replace("0.3.0", "0.3.1"))
    git(root, "commit", "-qam", "Pattern: `*` matches anything")
    head = git(root, "rev-parse", "HEAD")
    co = Checkout(spec=RepoSpec(source=str(root)), name="crate", path=root, commit=head)
    (cand,) = mine_candidates(co, RUST, CommitSelection()).candidates
    assert set(changed_lines(cand.test_patch)) == {"src/lib.rs"}
    assert set(changed_lines(cand.gold_patch)) == {"src/lib.rs", "Cargo.toml"}
    assert "test_star_matches_anything" in cand.test_patch
    assert "test_star_matches_anything" not in cand.gold_patch
    assert cand.files == ("Cargo.toml", "src/lib.rs")
    # a version bump is not a dependency change (the fix is judged in its parent's
    # environment); a new dev-dependency is
    assert cand.provenance["deps_changed"] == "false"
    assert dependency_fingerprint(root, head) == dependency_fingerprint(root, f"{head}~1")
    (root / "Cargo.toml").write_text(manifest + 'rand = "0.8"\n')
    git(root, "commit", "-qam", "rand")
    assert dependency_fingerprint(root, "HEAD") != dependency_fingerprint(root, head)
