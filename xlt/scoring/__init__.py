"""Scoring benchmark items for the evaluate stage (:mod:`xlt.stages.evaluate`): the scorer registry and the
test scorers (:mod:`~xlt.scoring.scorers`), the encoder multiple-choice scorer (:mod:`~xlt.scoring.mc`), the
causal-LLM scorer as lm-evaluation-harness scores (:mod:`~xlt.scoring.llm`), and the evaluation jobs, their
results and provenance (:mod:`~xlt.scoring.results`). Accuracy and intervals are in :mod:`xlt.metrics`."""
