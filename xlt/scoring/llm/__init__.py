"""Causal-LLM evaluation: lm-evaluation-harness prompts and log-likelihood scoring, zero-shot generation.

``LLMScorer`` (in :mod:`xlt.scoring.llm.scorer`) is the scorer registry's ``"llm"`` entry.
"""
