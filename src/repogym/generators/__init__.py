"""Candidate generators: procedural mutations (tree-sitter), mined fixes, LLM-written bugs.

Every generator emits git-style patches made with :mod:`repogym.patches`.
"""

GENERATOR_NAMES: tuple[str, ...] = ("procedural", "mined", "llm_rewrite", "llm_modify")
"""The generators a run (``--generators``) or a corpus entry may name."""
