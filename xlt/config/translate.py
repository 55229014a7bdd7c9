"""Schema of the ``translate`` group (conf/translate/*.yaml): machine translation of the training set."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TranslateConfig:
    model_name_or_path: str = "facebook/nllb-200-distilled-600M"
    revision: str | None = None
    # FLORES-200 target codes.
    languages: list[str] = field(default_factory=list)
    batch_size: int = 32
    max_new_tokens: int = 256
    num_beams: int = 1
