"""Procedural bugs: small, valid mutations of runtime code, found with tree-sitter.

    files ──parse──▶ trees ──each mutator──▶ Sites ──filter, shuffle, interleave──▶ Mutation

A :class:`Mutation` holds the whole file before and after one change, so its
``bug_patch`` (original -> mutated) and ``gold_patch`` (mutated -> original) are exact.

Every mutation returned by :func:`generate_mutations`

* comes from a site in runtime code (inside a function body, or a parameter default
  for a mutator with ``edits_defaults``; see :mod:`repogym.generators.mutators.runtime`
  for what is excluded), re-checked here whatever the mutator claims;
* re-parses without ERROR or MISSING nodes, and, when the original compiles with this
  Python, compiles too;
* differs from the original in its syntax tree, not only in its text.

Selection is deterministic for a seed and spread out: kinds take turns (round-robin),
each kind's sites are shuffled by ``random.Random(f"{seed}:{kind}")`` (so a kind's
order does not depend on which other kinds run), and a function gets at most
``per_function`` mutations until every function that still has sites got as many.
"""

from __future__ import annotations

import logging
import random
import subprocess
from collections import Counter, defaultdict, deque
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

from tree_sitter import Node, Tree

from repogym.errors import SourceError
from repogym.generators.mutators import MUTATORS, Mutator, NodeMutator, Site
from repogym.generators.mutators.grammars import Grammar, grammar_for
from repogym.generators.mutators.python_grammar import PythonGrammar
from repogym.patches import unified_diff
from repogym.schemas.records import Record

__all__ = ["MUTATORS", "Mutation", "Mutator", "Site", "generate_mutations", "parse_python",
           "parses_cleanly", "runtime_sources"]

log = logging.getLogger(__name__)

PYTHON = PythonGrammar()


class Mutation(Record):
    """One procedural bug in one file.

    Attributes:
        mutator: the registered name of the mutator that made it.
        path: the file, relative to the repository root (POSIX separators).
        line: the 1-based line the change is about.
        function: the qualified name of the enclosing function, e.g. ``"Klass.method"``.
        description: a short human description of the change.
        original: the whole file before the change.
        mutated: the whole file after it.
    """

    mutator: str
    path: str
    line: int
    function: str | None
    description: str
    original: str
    mutated: str

    @property
    def bug_patch(self) -> str:
        """The diff that plants the bug (original -> mutated)."""
        return unified_diff(self.path, self.original, self.mutated)

    @property
    def gold_patch(self) -> str:
        """The diff that fixes it (mutated -> original)."""
        return unified_diff(self.path, self.mutated, self.original)


def parse_python(source: bytes) -> Tree:
    """``source`` parsed with the tree-sitter Python grammar."""
    return PYTHON.parse(source)


def parses_cleanly(source: bytes) -> bool:
    """Whether ``source`` parses with no ERROR or MISSING node anywhere (Python)."""
    return PYTHON.parses_cleanly(source)


class _File:
    """A parsed source file; its runtime nodes are computed on first use."""

    def __init__(self, path: str, source: bytes, tree: Tree, grammar: Grammar) -> None:
        self.path, self.source, self.tree, self.grammar = path, source, tree, grammar

    @cached_property
    def runtime_by_type(self) -> dict[str, list[Node]]:
        """Runtime nodes by node type, in source order (shared by every NodeMutator)."""
        index: dict[str, list[Node]] = defaultdict(list)
        for node in self.grammar.runtime_nodes(self.tree.root_node):
            index[node.type].append(node)
        return index

    def sites(self, mutator: Mutator) -> Iterator[Site]:
        """The mutator's sites here (a NodeMutator reuses the shared runtime-node walk)."""
        if mutator.family != self.grammar.family:
            return
        if not isinstance(mutator, NodeMutator) or type(mutator).sites is not NodeMutator.sites:
            yield from mutator.sites(self.tree, self.source)
            return
        nodes = [n for t in mutator.node_types for n in self.runtime_by_type.get(t, [])]
        for node in sorted(nodes, key=lambda n: (n.start_byte, -n.end_byte)):
            yield from mutator.visit(node, self.source)


@dataclass(frozen=True)
class _Candidate:
    kind: str
    file: _File
    site: Site
    function: str

    @property
    def slot(self) -> tuple[str, str]:
        return self.file.path, self.function


def _load(root: Path, path: str) -> _File | None:
    """Read and parse one file; None (logged) when no grammar parses its kind, or it is
    unreadable, not UTF-8 or unparseable."""
    grammar = grammar_for(path)
    if grammar is None:
        log.debug("skipping %s: no grammar for its suffix", path)
        return None
    try:
        source = (root / path).read_bytes()
        source.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        log.debug("skipping %s: %s", path, exc)
        return None
    tree = grammar.parse(source)
    if tree.root_node.has_error:
        log.debug("skipping %s: does not parse", path)
        return None
    return _File(path, source, tree, grammar)


def _candidates(kind: str, files: Sequence[_File],
                lines: Mapping[str, set[int]] | None) -> Iterator[_Candidate]:
    """The sites of one mutator kind over all files, kept only where runtime code is."""
    mutator: Mutator = MUTATORS.get(kind)()
    for file in files:
        wanted = None if lines is None else lines.get(file.path, set())
        if wanted is not None and not wanted:
            continue
        for site in file.sites(mutator):
            if wanted is not None and site.line not in wanted:
                continue
            if not 0 <= site.start <= site.end <= len(file.source):
                continue
            node = site.node(file.tree, file.source)
            grammar = file.grammar
            function = grammar.enclosing_function(node) if node is not None else None
            if node is None or function is None or not grammar.in_runtime_code(
                    node, defaults=mutator.edits_defaults):
                continue
            yield _Candidate(kind, file, site, function)


def _realise(cand: _Candidate) -> Mutation | None:
    """The mutation for a candidate, or None when it breaks the syntax or changes nothing."""
    grammar = cand.file.grammar
    mutated = cand.site.apply(cand.file.source)
    if mutated == cand.file.source or not grammar.parses_cleanly(mutated):
        return None
    try:
        text = mutated.decode("utf-8")
    except UnicodeDecodeError:
        return None
    original = cand.file.source.decode("utf-8")
    if not grammar.real_change(cand.file.path, original, text, cand.site.line):
        return None
    return Mutation(mutator=cand.kind, path=cand.file.path, line=cand.site.line,
                    function=cand.function, description=cand.site.description,
                    original=original, mutated=text)


def _kinds(mutators: Sequence[str] | None) -> list[str]:
    """The kinds to run, in turn order: as given (duplicates dropped) or all, sorted."""
    if mutators is None:
        return MUTATORS.names()
    for name in mutators:
        MUTATORS.get(name)  # raises UnknownPluginError listing the valid names
    return list(dict.fromkeys(mutators))


class _Scheduler:
    """Round-robin over kinds, at most ``limit`` mutations per function per pass."""

    def __init__(self, pools: dict[str, list[_Candidate]], per_function: int) -> None:
        self.queues = {kind: deque(pool) for kind, pool in pools.items()}
        self.per_function = per_function
        self.taken: Counter[tuple[str, str]] = Counter()
        self.seen: set[tuple[str, str]] = set()

    def run(self, cap: int) -> list[Mutation]:
        """Up to ``cap`` mutations; a function's limit grows only when nothing else is left."""
        out: list[Mutation] = []
        limit = self.per_function
        while any(self.queues.values()):
            deferred: dict[str, deque[_Candidate]] = {kind: deque() for kind in self.queues}
            while any(self.queues.values()):
                for kind, queue in self.queues.items():
                    mutation = self._next(queue, deferred[kind], limit)
                    if mutation is not None:
                        out.append(mutation)
                    if len(out) >= cap:
                        return out
            self.queues = deferred
            limit += self.per_function
        return out

    def _next(self, queue: deque[_Candidate], deferred: deque[_Candidate],
              limit: int) -> Mutation | None:
        """The next valid mutation of one kind whose function is under the limit."""
        while queue:
            cand = queue.popleft()
            if self.taken[cand.slot] >= limit:
                deferred.append(cand)
                continue
            mutation = _realise(cand)
            if mutation is None or (mutation.path, mutation.mutated) in self.seen:
                continue
            self.seen.add((mutation.path, mutation.mutated))
            self.taken[cand.slot] += 1
            return mutation
        return None


def generate_mutations(root: Path, files: Sequence[str], *, seed: int, max_candidates: int,
                       mutators: Sequence[str] | None = None,
                       lines: Mapping[str, set[int]] | None = None,
                       per_function: int = 2) -> list[Mutation]:
    """Up to ``max_candidates`` valid, diverse mutations of the given files.

    Args:
        root: the repository's working tree.
        files: repository-relative paths of runtime (non-test) Python sources; files
            that cannot be read, decoded as UTF-8 or parsed are skipped.
        seed: the same inputs and seed give the same list.
        max_candidates: the most mutations returned.
        mutators: names of the kinds to use, in turn order (default: all, sorted).
        lines: if given, keep only sites on these 1-based lines of these files
            (coverage targeting); files absent from the mapping get none.
        per_function: mutations a function gets before every other function had as many.

    Returns:
        Mutations in selection order: kinds take turns, functions are spread out.

    Raises:
        UnknownPluginError: a name in ``mutators`` is not registered.
    """
    kinds = _kinds(mutators)
    if max_candidates <= 0:
        return []
    loaded = (_load(root, path) for path in sorted(set(files)))
    parsed = [file for file in loaded if file is not None]
    pools: dict[str, list[_Candidate]] = {}
    for kind in kinds:
        pools[kind] = list(_candidates(kind, parsed, lines))
        random.Random(f"{seed}:{kind}").shuffle(pools[kind])
    return _Scheduler(pools, max(1, per_function)).run(max_candidates)


def runtime_sources(root: Path, is_runtime: Callable[[str], bool]) -> list[str]:
    """The tracked files of a repository that ``is_runtime`` accepts (a toolchain's
    :meth:`~repogym.toolchains.base.Toolchain.is_runtime_source`), sorted.

    Raises:
        SourceError: ``root`` is not a git working tree (or git is missing).
    """
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=root,
                                capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise SourceError(f"cannot list the files of {root}: {exc}") from exc
    paths = (p for p in listed.decode("utf-8", "surrogateescape").split("\0") if p)
    return sorted(p for p in paths if is_runtime(p))
