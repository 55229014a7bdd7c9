"""LLMScorer wiring: config checks, few-shot pools from the benchmark registry, chat templates, meta."""

from __future__ import annotations

import numpy as np
import pytest

from xlt.errors import ConfigError
from xlt.scoring.llm.load import llm_config
from xlt.scoring.llm.scorer import LLMScorer

CHAT = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def test_config_is_checked():
    with pytest.raises(ConfigError, match="eval.llm.model is not set"):
        llm_config({})
    with pytest.raises(ConfigError, match="eval.llm.mode must be one of"):
        llm_config({"model": "m", "mode": "sample"})
    with pytest.raises(ConfigError, match="invalid eval.llm key 'num_shots'"):
        llm_config({"model": "m", "num_shots": 5})
    with pytest.raises(ConfigError, match="eval.llm is missing"):
        llm_config(None)
    assert llm_config({"model": "m"}).num_fewshot == 5


def test_global_mmlu_pool_is_the_untruncated_dev_split(make_cfg, loaded_lm, load_items):
    model, tok = loaded_lm
    cfg = make_cfg(num_fewshot=5)
    cfg.eval.benchmarks.global_mmlu.max_questions = 4  # truncates the test items, never the few-shot pool
    scorer = LLMScorer(cfg, model=model, tokenizer=tok, progress=False)
    items = load_items("global_mmlu", "en").select(range(4))
    ctx = scorer.contexts(items, benchmark="global_mmlu", language="en")
    dev = load_items("global_mmlu", "en", "dev")
    first_dev = dev[0]["question"].strip()
    assert ctx[0].startswith(first_dev) and ctx[0].count("\n\n") == 5
    assert scorer.score(items, benchmark="global_mmlu", language="en").shape == (4, 4)
    assert scorer.last_meta["fewshot"] == {"k": 5, "split": "dev", "sampler": "first_n", "seed": None}
    assert scorer.language_meta("global_mmlu", "en")["forward"]["sequences"] == 4


def test_chat_template_wraps_the_prompt_and_drops_the_space_before_the_letter(make_cfg, loaded_lm, load_items):
    model, tok = loaded_lm
    items = load_items("belebele", "eng_Latn").select(range(3))
    plain = LLMScorer(make_cfg(num_fewshot=1), model=model, tokenizer=tok, progress=False)
    with pytest.raises(ConfigError, match="has no chat template"):
        LLMScorer(make_cfg(num_fewshot=1, chat_template=True), model=model, tokenizer=tok, progress=False).contexts(
            items, benchmark="belebele", language="eng_Latn")
    tok.chat_template = CHAT
    try:
        chat = LLMScorer(make_cfg(num_fewshot=1, chat_template=True, system_prompt="Be brief."), model=model,
                         tokenizer=tok, progress=False)
        ctx = chat.contexts(items, benchmark="belebele", language="eng_Latn")
        inner = plain.contexts(items, benchmark="belebele", language="eng_Latn")
        # The harness's default with a chat template: each example a user turn and an assistant turn.
        example, question = inner[0].split("\n\n")
        shot, letter = example.rsplit(" ", 1)
        assert ctx[0] == (f"<|system|>Be brief.\n<|user|>{shot}\n<|assistant|>{letter}\n"
                          f"<|user|>{question}\n<|assistant|>")
        single = LLMScorer(make_cfg(num_fewshot=1, chat_template=True, system_prompt="Be brief.",
                                    fewshot_as_multiturn=False), model=model, tokenizer=tok, progress=False)
        assert single.contexts(items, benchmark="belebele", language="eng_Latn")[0] == (
            f"<|system|>Be brief.\n<|user|>{inner[0]}\n<|assistant|>")
        scores = chat.score(items, benchmark="belebele", language="eng_Latn")
        assert scores.shape == (3, 4) and np.isfinite(scores).all()
        assert not np.allclose(scores, plain.score(items, benchmark="belebele", language="eng_Latn"))
    finally:
        tok.chat_template = None


def test_zero_shot_loglikelihood_uses_the_bare_prompt(make_cfg, loaded_lm, load_items):
    model, tok = loaded_lm
    items = load_items("global_mmlu", "en")
    scorer = LLMScorer(make_cfg(num_fewshot=0), model=model, tokenizer=tok, progress=False)
    ctx = scorer.contexts(items, benchmark="global_mmlu_lite", language="en")
    assert "\n\n" not in ctx[0] and ctx[0].endswith("\nD. " + items[0]["options"][3] + "\nAnswer:")
    assert scorer.score(items, benchmark="global_mmlu_lite", language="en").shape == (12, 4)
    assert scorer.last_meta["fewshot"] == {"k": 0}


def test_belebele_pool_is_the_whole_split_when_max_questions_cuts_the_items(make_cfg, loaded_lm, load_items):
    model, tok = loaded_lm
    cfg = make_cfg(num_fewshot=5)
    cfg.eval.benchmarks.belebele.max_questions = 2
    scorer = LLMScorer(cfg, model=model, tokenizer=tok, progress=False)
    full = load_items("belebele", "eng_Latn")
    ctx = scorer.contexts(full.select(range(2)), benchmark="belebele", language="eng_Latn")
    ref = LLMScorer(make_cfg(num_fewshot=5), model=model, tokenizer=tok, progress=False).contexts(
        full, benchmark="belebele", language="eng_Latn")
    assert ctx == ref[:2]


def test_unreachable_hub_model_gives_a_clear_error(make_cfg, monkeypatch):
    from xlt.errors import HubUnavailableError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubUnavailableError, match=r"(?s)xlt-test-org/no-such-llm.*eval.llm.model=/path/to/local/copy"):
        LLMScorer(make_cfg(model="xlt-test-org/no-such-llm"), progress=False)


def test_real_loading_path_is_float32_on_cpu_and_scores(make_cfg, load_items):
    scorer = LLMScorer(make_cfg(num_fewshot=0), progress=False)  # loads from the saved folder (safetensors)
    assert scorer.device.type == "cpu" and next(scorer.model.parameters()).dtype.is_floating_point
    assert str(next(scorer.model.parameters()).dtype) == "torch.float32"
    items = load_items("belebele", "fra_Latn")
    assert scorer.score(items, benchmark="belebele", language="fra_Latn").shape == (9, 4)


def test_per_choice_baseline_gives_the_same_scores_at_four_times_the_tokens(make_cfg, loaded_lm, load_items):
    model, tok = loaded_lm
    items = load_items("belebele", "eng_Latn")
    fast = LLMScorer(make_cfg(num_fewshot=2), model=model, tokenizer=tok, progress=False)
    slow = LLMScorer(make_cfg(num_fewshot=2), model=model, tokenizer=tok, progress=False, share_passes=False)
    a = fast.score(items, benchmark="belebele", language="eng_Latn")
    b = slow.score(items, benchmark="belebele", language="eng_Latn")
    np.testing.assert_allclose(a, b, atol=1e-5)
    fa, fb = fast.last_meta["forward"], slow.last_meta["forward"]
    assert (fa["sequences"], fb["sequences"]) == (9, 36) and fa["tokens"] <= 0.3 * fb["tokens"]
    assert slow.last_meta["single_pass_questions"] == 0


def test_translate_test_takes_english_few_shot_examples(make_cfg, loaded_lm, load_items):
    """Translate-test items are English, so their few-shot examples come from the English split
    (the question itself still skipped, by its parallel id)."""
    model, tok = loaded_lm
    cfg = make_cfg(num_fewshot=3)
    cfg.eval.benchmarks.belebele.translate_test = True
    scorer = LLMScorer(cfg, model=model, tokenizer=tok, progress=False)
    french = load_items("belebele", "fra_Latn")
    english = load_items("belebele", "eng_Latn")
    ctx = scorer.contexts(french.select(range(2)), benchmark="belebele", language="fra_Latn")
    direct = LLMScorer(make_cfg(num_fewshot=3), model=model, tokenizer=tok, progress=False)
    ref = direct.contexts(english, benchmark="belebele", language="eng_Latn")
    # Same English examples as the English items get (the evaluated question differs in its language).
    assert ctx[0].split("\n\n")[:3] == ref[0].split("\n\n")[:3]
    # Item 0's own question is skipped: its first example is English question 1.
    assert english[1]["question"].strip() in ctx[0].split("\n\n")[0]
    assert english[0]["question"].strip() not in "\n\n".join(ctx[0].split("\n\n")[:3])
    scorer.score(french.select(range(2)), benchmark="belebele", language="fra_Latn")
    assert scorer.last_meta["fewshot"]["pool_language"] == "eng_Latn"


def test_capped_global_mmlu_says_it_is_not_comparable_with_the_harness(make_cfg, loaded_lm, load_items):
    model, tok = loaded_lm
    cfg = make_cfg(num_fewshot=1, score_dtype="float32")
    cfg.eval.benchmarks.global_mmlu.max_questions = 4
    cfg.eval.benchmarks.belebele.max_questions = 3
    scorer = LLMScorer(cfg, model=model, tokenizer=tok, progress=False)
    scorer.score(load_items("global_mmlu", "en").select(range(4)), benchmark="global_mmlu", language="en")
    meta = scorer.language_meta("global_mmlu", "en")
    assert meta["comparable_to_harness"] is False
    assert "capped run not comparable" in meta["not_comparable_because"][0]
    assert "--limit 4" in meta["not_comparable_because"][0] and "each subject" in meta["not_comparable_because"][0]
    assert meta["parity"]["score_dtype"] == "float32" and meta["parity"]["log_softmax_dtype"] == "float32"
    # Belebele is one task per language: the first N questions are exactly the harness's --limit N.
    scorer.score(load_items("belebele", "eng_Latn").select(range(3)), benchmark="belebele", language="eng_Latn")
    bele = scorer.language_meta("belebele", "eng_Latn")
    assert bele["comparable_to_harness"] is True and "--limit 3" in bele["limit"]
    with pytest.raises(ConfigError, match="eval.llm.score_dtype must be one of"):
        llm_config({"model": "m", "score_dtype": "bf16"})
    # A cap above the number of questions cuts nothing: comparable.
    cfg.eval.benchmarks.global_mmlu.max_questions = 100
    scorer.score(load_items("global_mmlu", "en"), benchmark="global_mmlu", language="en")
    assert scorer.language_meta("global_mmlu", "en")["comparable_to_harness"] is True


def test_a_machine_translated_entry_says_it_is_not_comparable_with_the_harness(make_cfg, loaded_lm, load_items):
    model, tok = loaded_lm
    cfg = make_cfg(num_fewshot=0)
    cfg.eval.benchmarks.global_mmlu.machine_translate_from = "en"
    scorer = LLMScorer(cfg, model=model, tokenizer=tok, progress=False)
    scorer.score(load_items("global_mmlu", "en").select(range(3)), benchmark="global_mmlu", language="de")
    meta = scorer.language_meta("global_mmlu", "de")
    assert meta["comparable_to_harness"] is False
    assert "machine-translated version xlt made from the en items" in meta["not_comparable_because"][0]
