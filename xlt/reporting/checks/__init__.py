"""The check kinds a benchmark's claim names (``Claim.check``), each listed in ``xlt.registry.CHECKS``
(a plug-in's: an entry point in the group ``xlt.checks``, or a definition file of ``eval.include_path``).

Check kinds (``Claim.check``) and their ``params``:

* ``family_best_on_levels``: of ``families`` (same setting and size), ``family`` has the highest mean
  accuracy on the ``levels`` (``"lowest"``: the taxonomy's ``lowest`` level, which must be among the
  compared languages; ``"above_lowest"``: every level above it) of the language column ``column``
  (default ``resource``; levels ordered by ``order``, default :data:`RESOURCE_ORDER`);
* ``family_most_above`` / ``family_most_at_or_above``: of ``families``, ``family`` has the most languages
  above (at or above) ``threshold``, counted over the languages all of them have;
* ``translate_train_all_beats_zero_shot``: for the same model config, translate-train-all is higher;
* ``translate_test_beats_in_language_llm``: for an LLM (``systems: any``: any system), translate-test is higher
  on more than half the languages;
* ``rank_changes_per_language``: per language, the systems (at least ``min_systems``, default 3) ranked on
  ``base`` and on ``a`` and ``b``; rank changes and position shifts against ``base``, averaged over the
  shared languages; holds when ``b`` moves more than ``a`` beyond what the subsets' sizes explain (a
  permutation of the ``a`` / ``b`` labels, sizes kept; :mod:`xlt.reporting.rank_changes`);
* ``human_above_machine_same_language``: a human-translated and a machine-translated
  (``machine_translated: true``) entry of the benchmark, compared on the same languages per ``tiers``;
  ``expect`` says which side each tier's verdict expects higher;
* ``higher_where_column_is``: accuracy is higher on languages whose ``column`` is ``a`` than ``b`` (named
  ``a_name`` / ``b_name`` in the numbers, ``a_label`` / ``b_label`` in words; ``exclude_pivot`` leaves the
  benchmark's pivot language out).
* ``accuracy_follows_tokenizer``: per pair of systems of the same setting and size with different tokenizers, over
  the languages whose ``column`` (default ``resource``) is ``level`` (default ``low``; at least
  ``min_languages``, default 5), the accuracy differences fall as the differences in the tokenizer
  ``measure`` (default ``premium``, a column of the results: :mod:`xlt.scoring.tokenizer_measures`) rise:
  Spearman's rho < 0, one-sided permutation test over the languages.
"""

from xlt.reporting.checks.base import CHECKS, FAILS, HOLDS, UNTESTABLE, Check, Finding, check_kind

__all__ = ["CHECKS", "FAILS", "HOLDS", "UNTESTABLE", "Check", "Finding", "check_kind"]
