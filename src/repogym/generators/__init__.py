"""Candidate generators: procedural mutations (tree-sitter), mined fixes, LLM-written bugs.

``diffs`` makes and reads the git-style patches every generator emits.
"""
