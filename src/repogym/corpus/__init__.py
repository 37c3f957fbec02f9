"""The corpus: the list of repositories a scheduled run grows into tasks (issue 6).

``config`` reads, validates and writes the corpus file (``corpus.toml``); see its docstring
for the format. ``state`` keeps what each repository's earlier runs did (``<out>/state``);
``cache`` keys and runs the Prefect-cached stages (``<out>/prefect-results``).
"""

from repogym.corpus.config import (
                                   CORPUS_ENV,
                                   DEFAULT_CORPUS_FILE,
                                   CorpusConfig,
                                   RepoDefaults,
                                   RepoEntry,
                                   SampleSpec,
                                   default_corpus_path,
                                   known_generators,
)

__all__ = ["CORPUS_ENV", "DEFAULT_CORPUS_FILE", "CorpusConfig", "RepoDefaults", "RepoEntry",
           "SampleSpec", "default_corpus_path", "known_generators"]
