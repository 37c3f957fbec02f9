"""The base of the ``java`` family's node mutators."""

from __future__ import annotations

from repogym.generators.mutators.base import NodeMutator
from repogym.generators.mutators.java.grammar import FAMILY


class JavaNodeMutator(NodeMutator):
    """A node mutator for Java trees."""

    family = FAMILY
