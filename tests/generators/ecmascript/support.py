"""Helpers shared by the ecmascript tests: run one mutator on a snippet of JS, TS or TSX."""

from __future__ import annotations

from textwrap import dedent

from tree_sitter import Node

from repogym.generators.mutators import MUTATORS, Mutator, Site
from repogym.generators.mutators.ecmascript.grammar import (
    EcmaScriptGrammar,
    JavaScriptGrammar,
    TsxGrammar,
    TypeScriptGrammar,
)

GRAMMARS: dict[str, EcmaScriptGrammar] = {
    "js": JavaScriptGrammar(), "ts": TypeScriptGrammar(), "tsx": TsxGrammar()}
JS_KINDS = [name for name in MUTATORS.names() if name.startswith("js_")]


def parse(source: str, lang: str = "js") -> Node:
    """The root of ``source`` parsed with the grammar of ``lang``; it must parse cleanly."""
    tree = GRAMMARS[lang].parse(source.encode())
    assert not tree.root_node.has_error, source
    return tree.root_node


def sites(kind: str, source: str, lang: str = "js") -> list[Site]:
    """The sites the mutator finds in ``source`` (parsed cleanly with ``lang``)."""
    data = source.encode()
    tree = GRAMMARS[lang].parse(data)
    assert not tree.root_node.has_error, source
    mutator: Mutator = MUTATORS.get(kind)()
    return list(mutator.sites(tree, data))


def mutants(kind: str, source: str, lang: str = "js") -> list[str]:
    """Every mutated version of ``source`` (dedented) the mutator proposes, in site order;
    each must parse cleanly with the grammar of ``lang``."""
    source = dedent(source)
    out = [s.apply(source.encode()).decode() for s in sites(kind, source, lang)]
    for mutated in out:
        assert GRAMMARS[lang].parses_cleanly(mutated.encode()), mutated
    return out


def descriptions(kind: str, source: str, lang: str = "js") -> list[tuple[int, str]]:
    """``(line, description)`` of every site, in order."""
    return [(s.line, s.description) for s in sites(kind, dedent(source), lang)]
