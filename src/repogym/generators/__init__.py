"""Candidate generators: procedural mutations (tree-sitter), mined fixes, LLM-written bugs.

Every generator emits git-style patches made with :mod:`repogym.patches`.
"""

from repogym.generators.registry import GENERATOR_NAMES, GENERATORS

__all__ = ["GENERATORS", "GENERATOR_NAMES"]
