"""LLM generators through litellm: rewrites, planted bugs and issue statements.

    LLMSettings (REPOGYM_LLM_*) ──▶ LLMClient (cache, budget) ──▶ rewrite_candidates
                                                               ├─▶ modify_candidates
                                                               └─▶ llm_statement

Configure with ``REPOGYM_LLM_MODEL`` (``""``, the default, disables every LLM call:
the generators return [] and statements come from the offline writer),
``REPOGYM_LLM_BASE_URL`` for an OpenAI-compatible server (model ``"openai/<name>"``),
``REPOGYM_LLM_BUDGET_USD`` to cap spending. Answers are cached on disk, so a rerun is
free. litellm is imported only when a call is actually made.
"""

from repogym.generators.llm.client import Completion, LLMClient
from repogym.generators.llm.errors import BudgetExceeded, LLMError
from repogym.generators.llm.issue_writer import llm_statement
from repogym.generators.llm.modify import modify_candidates
from repogym.generators.llm.rewrite import rewrite_candidates
from repogym.generators.llm.settings import LLMSettings, default_cache_dir

__all__ = ["BudgetExceeded", "Completion", "LLMClient", "LLMError", "LLMSettings",
           "default_cache_dir", "llm_statement", "modify_candidates", "rewrite_candidates"]
