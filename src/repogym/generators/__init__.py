"""Candidate generators: procedural mutations (tree-sitter), mined fixes, LLM-written bugs.

``diffs`` makes and reads the git-style patches every generator emits.
"""

GENERATOR_NAMES: tuple[str, ...] = ("procedural", "mined", "llm_rewrite", "llm_modify")
"""The generators a run (``--generators``) or a corpus entry may name."""
