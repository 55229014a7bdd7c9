"""What a scorer declares about itself, as a benchmark declares its prompt: its code version, which model it
scores, the keys of the ``model`` section it reads, and the settings its results record.

Each scorer carries a :class:`ScorerDeclaration` as its class attribute ``declaration``
(:class:`xlt.scoring.mc.MCScorer`, :class:`xlt.scoring.llm.scorer.LLMScorer`, the test scorers of
:mod:`xlt.scoring.scorers`); :func:`declaration` finds it through the scorer registry
(:data:`xlt.registry.SCORERS`). A scorer registered without one (an installed package's, written before
declarations existed) gets :data:`UNDECLARED`: no version, no model, nothing read.

Everything outside :mod:`xlt.scoring` asks these questions through here, never by comparing
``eval.scorer`` to a name or ``eval.model`` to ``"run"`` (``tests/test_sentinels.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xlt.registry import SCORERS

# The value of ``eval.model`` that names the run's own model (the one the train stage saved in ``model/``).
RUN_MODEL = "run"
# The config keys naming the model a scorer scores (:attr:`ScorerDeclaration.scores`).
EVAL_MODEL = "eval.model"  # an encoder: the run's own model (eval.model=run) or another folder / Hub id
LLM_MODEL = "eval.llm.model"  # a causal LLM, packaged or on the Hub (eval.llm.*)


@dataclass(frozen=True)
class ScorerDeclaration:
    """What a scorer's results depend on besides the items (each enters the job hash,
    :mod:`xlt.scoring.jobs`).

    ``version``: bump it when a change can alter the scores (another truncation rule, prompt assembly,
    numerics), so exactly this scorer's results are recomputed. ``scores``: the config key naming the model
    it scores (:data:`EVAL_MODEL`, :data:`LLM_MODEL`; None: it loads none). ``model_reads``: the keys of the
    ``model`` section it reads when ``eval.model`` names another model than the run's (with the run's own
    they reach results through the train stage). ``settings``: the keys of the ``eval`` section its results
    record beside the common ones (``eval`` section -> dict), in the order they are written.
    """

    version: int | None = None
    scores: str | None = None
    model_reads: tuple[str, ...] = ()
    settings: Callable[[Any], dict[str, Any]] | None = None

    @property
    def scores_encoder(self) -> bool:
        """Whether it scores ``eval.model`` (an encoder with a multiple-choice head)."""
        return self.scores == EVAL_MODEL

    @property
    def scores_llm(self) -> bool:
        """Whether it scores the causal LLM of ``eval.llm``."""
        return self.scores == LLM_MODEL

    def scores_run_model(self, eval_cfg: Any) -> bool:
        """Whether, under the ``eval`` section ``eval_cfg``, it scores the run's own trained model."""
        return self.scores_encoder and names_run_model(eval_cfg.model)

    def external_model_reads(self, eval_cfg: Any) -> tuple[str, ...]:
        """The ``model`` keys it reads of another model than the run's (none when it scores the run's own)."""
        return self.model_reads if self.scores_encoder and not names_run_model(eval_cfg.model) else ()

    def result_settings(self, eval_cfg: Any) -> dict[str, Any]:
        """The settings of ``eval_cfg`` this scorer's results record (:attr:`settings`)."""
        return self.settings(eval_cfg) if self.settings is not None else {}


UNDECLARED = ScorerDeclaration()


def names_run_model(value: object) -> bool:
    """Whether an ``eval.model`` value (from a config, a stored report or result) names the run's own model."""
    return value == RUN_MODEL


def declaration(name: str | None) -> ScorerDeclaration:
    """The declaration of the scorer registered as ``name`` (:data:`UNDECLARED` for one without, or for a name
    not registered: a stored config of a scorer this install lacks). Loads the scorer's module."""
    if name is None or name not in SCORERS:
        return UNDECLARED
    entry = SCORERS[name]
    found = getattr(entry, "declaration", None)
    if found is None:  # a factory method (``MCScorer.from_config``): its class declares
        found = getattr(getattr(entry, "__self__", None), "declaration", None)
    return found if isinstance(found, ScorerDeclaration) else UNDECLARED


def of(eval_cfg: Any) -> ScorerDeclaration:
    """The declaration of the scorer ``eval_cfg.scorer`` names."""
    return declaration(eval_cfg.scorer)


def scores_run_model(eval_cfg: Any) -> bool:
    """Whether the evaluation ``eval_cfg`` describes scores the run's own trained model (the MC scorer with
    ``eval.model=run``): it then depends on the train stage and checks the model training saved."""
    return of(eval_cfg).scores_run_model(eval_cfg)
