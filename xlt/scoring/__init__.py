"""Scoring benchmark items for the evaluate stage (:mod:`xlt.stages.evaluate`): the evaluation job, resolved
once (:mod:`~xlt.scoring.jobs`), where a set of jobs' results stands (:mod:`~xlt.scoring.results`), what each
scorer declares (:mod:`~xlt.scoring.declaration`), the scorer registry and the test scorers
(:mod:`~xlt.scoring.scorers`), the encoder multiple-choice scorer (:mod:`~xlt.scoring.mc`), the causal-LLM
scorer as lm-evaluation-harness scores (:mod:`~xlt.scoring.llm`) and the model before fine-tuning
(:mod:`~xlt.scoring.before`). Results are read back through :mod:`xlt.run.results`; accuracy and intervals are
in :mod:`xlt.metrics`."""
