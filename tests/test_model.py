"""The block classifier: overfits one batch, windows long pages, masks padding, saves and loads exactly."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch

from bodyblocks.classify.model import (
    IGNORE,
    BlockClassifier,
    collate,
    prepare_page,
    read_checkpoint,
    window_starts,
)
from bodyblocks.classify.traced import trace_single_page
from bodyblocks.config import EncoderConfig, ModelConfig
from bodyblocks.page.segment import segment
from bodyblocks.types import Block

WORDS = "relief convoys reached flooded valley tuesday rain road officials water schools shelters bridge river".split()
NAV = ["Home", "News", "Sport", "Contact", "Login", "Share", "Next page", "Copyright 2026", "Privacy"]



def tiny_config(**kw: object) -> ModelConfig:
    """A model that trains in seconds."""
    base: dict = dict(
        encoder=EncoderConfig(kind="hash", dim=16, buckets=4096, max_chars=300),
        tag_buckets=512, tag_dim=8, d_model=32, n_layers=1, n_heads=2, d_ff=64, dropout=0.0, window=16, stride=12,
    )  # fmt: skip
    base.update(kw)
    return ModelConfig(**base)


def synthetic_page(rng: random.Random, n_body: int, n_nav: int) -> tuple[list[Block], list[int]]:
    """Navigation links, then article paragraphs, then a footer; label 1 on the paragraphs."""
    blocks, labels = [], []

    def add(text: str, path: str, body: int, **kw: object) -> None:
        blocks.append(Block(index=len(blocks), text=text, tag=path.rsplit("/", 1)[-1].split(".")[0],
                            tag_path=path, xpath="/html[1]", depth=path.count("/"),
                            text_len=len(text.replace(" ", "")), **kw))  # type: ignore[arg-type]  # fmt: skip
        labels.append(body)

    for _ in range(n_nav):
        add(rng.choice(NAV), "html/body/div.nav/ul/li/a", 0, link_density=1.0, in_link_only=True, is_list_item=True)
    add("Flood " + " ".join(rng.choices(WORDS, k=4)), "html/body/div.article/h1", 1, heading_level=1)
    for _ in range(n_body):
        add(" ".join(rng.choices(WORDS, k=rng.randint(12, 30))) + ".", "html/body/div.article/p", 1)
    add(rng.choice(NAV), "html/body/div.footer/span", 0)
    return blocks, labels


def synthetic_batch(cfg: ModelConfig, seed: int = 0):
    rng = random.Random(seed)
    pages = [synthetic_page(rng, 3, 4), synthetic_page(rng, 12, 10), synthetic_page(rng, 1, 2)]
    return collate([prepare_page(b, cfg, labels=y) for b, y in pages])


def test_overfits_one_batch() -> None:
    torch.manual_seed(0)
    cfg = tiny_config()
    batch = synthetic_batch(cfg)
    assert batch.mask.shape == (3, 24) and batch.mask.shape[1] > cfg.window  # the long page is windowed
    model = BlockClassifier(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    first = None
    for _ in range(40):
        out = model(batch, batch.labels)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
        first = first if first is not None else out.loss.item()
    model.eval()
    out = model(batch, batch.labels)
    assert out.loss.item() < 0.02 * first
    assert (out.logits.argmax(-1) == batch.labels).float().mean().item() == 1.0


@pytest.mark.parametrize(
    "ablation",
    [{}, {"use_text": False}, {"use_tag_path": False}, {"use_context": False}, {"positional": False},
     {"groups": True}],
)
def test_ablations_forward_and_backward(ablation: dict) -> None:
    cfg = tiny_config(**ablation)
    batch = synthetic_batch(cfg)
    model = BlockClassifier(cfg)
    out = model(batch, batch.labels)
    n = int(batch.mask.sum())
    assert out.logits.shape == (n, 2) and torch.isfinite(out.logits).all()
    out.loss.backward()
    assert (model.hash is None) == (not cfg.use_text)
    assert (model.tags is None) == (not cfg.use_tag_path)
    assert (model.context is None) == (not cfg.use_context)
    if not cfg.use_text:
        assert batch.text_ids is None


def test_with_groups_each_block_also_gets_its_groups_columns() -> None:
    from bodyblocks.page.features import FEATURE_NAMES, GROUP_NAMES, block_features, group_features

    blocks, _ = synthetic_page(random.Random(3), 5, 4)
    plain, grouped = prepare_page(blocks, tiny_config()), prepare_page(blocks, tiny_config(groups=True))
    assert grouped.features.dtype == np.float32 and grouped.features.shape == (len(blocks), tiny_config(
        groups=True).block_columns) == (len(blocks), len(FEATURE_NAMES) + len(GROUP_NAMES))
    np.testing.assert_array_equal(grouped.features[:, : len(FEATURE_NAMES)], plain.features)
    np.testing.assert_array_equal(plain.features, block_features(blocks))
    np.testing.assert_allclose(grouped.features[:, len(FEATURE_NAMES) :], group_features(blocks), rtol=1e-6)
    model = BlockClassifier(tiny_config(groups=True))
    assert model.embed[0].in_features == BlockClassifier(tiny_config()).embed[0].in_features + len(GROUP_NAMES)


def test_window_starts_cover_every_block() -> None:
    assert window_starts(10, 16, 12) == [0]
    assert window_starts(600, 512, 384) == [0, 88]
    assert window_starts(1000, 512, 384) == [0, 384, 488]
    for length in range(1, 80):
        starts = window_starts(length, 16, 12)
        covered = set().union(*(range(s, min(s + 16, length)) for s in starts))
        assert covered == set(range(length)) and starts[-1] + 16 >= length


def test_padding_and_batching_do_not_change_a_page() -> None:
    torch.manual_seed(1)
    cfg = tiny_config()
    rng = random.Random(3)
    short, long = synthetic_page(rng, 2, 2), synthetic_page(rng, 15, 8)  # 6 and 25 blocks (window 16)
    model = BlockClassifier(cfg).eval()
    alone = model(collate([prepare_page(short[0], cfg)])).logits
    together = model(collate([prepare_page(short[0], cfg), prepare_page(long[0], cfg)])).logits
    torch.testing.assert_close(together[: len(short[0])], alone, atol=1e-5, rtol=1e-5)
    with_empty = model(collate([prepare_page([], cfg), prepare_page(short[0], cfg)]))
    torch.testing.assert_close(with_empty.logits, alone, atol=1e-5, rtol=1e-5)  # a page without blocks
    assert model.probabilities(collate([prepare_page([], cfg)]))[0].shape == (0,)


def test_long_page_windows_match_one_window_when_it_fits() -> None:
    torch.manual_seed(2)
    blocks, _ = synthetic_page(random.Random(4), 20, 5)
    wide = BlockClassifier(tiny_config(window=64, stride=48)).eval()
    narrow = BlockClassifier(tiny_config(window=8, stride=6)).eval()
    narrow.load_state_dict(wide.state_dict())
    batch = collate([prepare_page(blocks, wide.cfg)])
    a, b = wide(batch).logits, narrow(batch).logits
    assert a.shape == b.shape == (len(blocks), 2) and torch.isfinite(b).all()
    assert not torch.allclose(a, b)  # 8-block windows see less context


def test_labels_ignore_and_class_weights() -> None:
    torch.manual_seed(0)
    batch = synthetic_batch(tiny_config())
    model = BlockClassifier(tiny_config()).eval()
    heavy = BlockClassifier(tiny_config(class_weights=(1.0, 5.0))).eval()
    heavy.load_state_dict(model.state_dict())
    assert model(batch, batch.labels).loss.item() != pytest.approx(heavy(batch, batch.labels).loss.item())
    ignored = torch.full_like(batch.labels, IGNORE)
    assert model(batch, ignored).loss.item() == 0.0
    partial = batch.labels.clone()
    partial[::2] = IGNORE
    assert torch.isfinite(model(batch, partial).loss)


def test_save_load_identical_and_never_unpickles(tmp_path, monkeypatch) -> None:
    torch.manual_seed(0)
    for i, cfg in enumerate([tiny_config(), tiny_config(use_context=False, use_tag_path=False)]):
        batch = synthetic_batch(cfg)
        model = BlockClassifier(cfg).eval()
        folder = model.save(tmp_path / f"ckpt{i}", extra={"threshold": 0.42})
        assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors"]
        monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("torch.load used"))
        loaded = BlockClassifier.load(folder)
        assert loaded.cfg == cfg and read_checkpoint(folder)["threshold"] == 0.42
        torch.testing.assert_close(loaded(batch).logits, model(batch).logits, atol=0, rtol=0)
        monkeypatch.undo()


def test_load_rejects_unknown_format(tmp_path) -> None:
    folder = BlockClassifier(tiny_config()).save(tmp_path / "ckpt")
    meta = json.loads((folder / "config.json").read_text())
    meta["format_version"] = 99
    (folder / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="format"):
        BlockClassifier.load(folder)


def test_frozen_encoder_inputs() -> None:
    cfg = tiny_config(encoder=EncoderConfig(kind="hf", name="tiny", dim=24))
    blocks, labels = synthetic_page(random.Random(5), 3, 3)
    with pytest.raises(ValueError, match="text_vectors"):
        prepare_page(blocks, cfg)
    vectors = np.random.default_rng(0).normal(size=(len(blocks), 24)).astype(np.float32)
    batch = collate([prepare_page(blocks, cfg, text_vectors=vectors, labels=labels)])
    model = BlockClassifier(cfg)
    assert model.hash is None and batch.text_vectors is not None and batch.text_ids is None
    out = model(batch, batch.labels)
    assert out.logits.shape == (len(blocks), 2) and out.loss is not None


def test_segmented_page_end_to_end() -> None:
    html = """<html><body><div class="nav"><a href="/">Home</a> <a href="/n">News</a></div>
    <div id="main" class="article-body"><h1>洪水救援</h1><p>洪水救援车队周二抵达山谷。</p>
    <p>Relief convoys reached the valley.<br>Officials said water was handed out.</p></div>
    <div class="footer">Copyright</div></body></html>"""
    doc = segment(html)
    cfg = tiny_config()
    probs = BlockClassifier(cfg).eval().probabilities(collate([prepare_page(doc.blocks, cfg)]))
    assert len(probs) == 1 and probs[0].shape == (len(doc.blocks),) and ((probs[0] >= 0) & (probs[0] <= 1)).all()


def test_text_dropout_zeroes_whole_text_vectors_in_training_only() -> None:
    torch.manual_seed(0)
    cfg = tiny_config(text_dropout=0.5)
    model = BlockClassifier(cfg)
    batch = synthetic_batch(cfg)
    seen: list[torch.Tensor] = []
    model.embed.register_forward_hook(lambda _m, inputs, _out: seen.append(inputs[0].detach()))
    model.train()
    model(batch)
    text = seen[-1][:, : cfg.encoder.dim]  # the text part of the projection's input
    zero_rows = (text == 0).all(dim=1)
    assert 0 < int(zero_rows.sum()) < len(text)  # some blocks lost their text vector, not all
    model.eval()
    model(batch)
    assert not (seen[-1][:, : cfg.encoder.dim] == 0).all(dim=1).any()  # inference always sees the text
    with pytest.raises(ValueError, match="text_dropout"):
        tiny_config(text_dropout=1.0)


def test_shipping_halves_weights_and_keeps_outputs(tmp_path) -> None:
    from bodyblocks.cli import main

    torch.manual_seed(0)
    cfg = tiny_config()
    model = BlockClassifier(cfg).eval()
    src = model.save(tmp_path / "run", extra={"threshold": 0.4, "rescue": 0.2, "train_state": {"epoch": 3}})
    assert main(["ship", str(src), "--out", str(tmp_path / "shipped")]) == 0
    meta = read_checkpoint(tmp_path / "shipped")
    assert meta["threshold"] == 0.4 and meta["rescue"] == 0.2 and "train_state" not in meta
    size = (tmp_path / "shipped" / "model.safetensors").stat().st_size
    assert size < 0.6 * (src / "model.safetensors").stat().st_size
    batch = synthetic_batch(cfg)
    shipped = BlockClassifier.load(tmp_path / "shipped")
    torch.testing.assert_close(shipped(batch).logits, model(batch).logits, atol=2e-2, rtol=2e-2)
    assert main(["ship", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x")]) == 2


# ----------------------------------------------------------------------------------------- traced inference
@pytest.mark.parametrize("kw", [{}, {"use_tag_path": False, "positional": False},
                                {"encoder": EncoderConfig(kind="hf", name="tiny", dim=24)}])
def test_traced_single_page_gives_the_models_probabilities(kw: dict) -> None:
    torch.manual_seed(5)
    cfg = tiny_config(**kw)
    model = BlockClassifier(cfg).eval()
    single = trace_single_page(model)
    assert single is not None
    rng, vec = random.Random(6), np.random.default_rng(6)
    for n_body, n_nav in [(0, 0), (2, 2), (15, 8), (40, 11)]:  # 2, 6, 25 and 53 blocks: 1 to 5 windows of 16
        blocks, _ = synthetic_page(rng, n_body, n_nav)
        vectors = vec.normal(size=(len(blocks), 24)).astype(np.float32) if "encoder" in kw else None
        batch = collate([prepare_page(blocks, cfg, text_vectors=vectors)])
        assert single.accepts(batch)
        np.testing.assert_allclose(single(batch), model.probabilities(batch)[0], rtol=0, atol=1e-6)
    if not kw:
        two = collate([prepare_page(synthetic_page(rng, 2, 2)[0], cfg)] * 2)
        assert not single.accepts(two) and not single.accepts(collate([prepare_page([], cfg)]))


def test_traced_single_page_only_when_it_can_be_trusted(monkeypatch: pytest.MonkeyPatch,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    from bodyblocks.classify import traced as model_module

    torch.manual_seed(7)
    model = BlockClassifier(tiny_config()).eval()
    assert trace_single_page(BlockClassifier(tiny_config(use_context=False)).eval()) is None  # nothing to gain
    assert trace_single_page(model.train()) is None  # a model in training mode is not traced
    model.eval()
    shifted = model_module._Context.forward
    monkeypatch.setattr(model_module._Context, "forward", lambda self, x: shifted(self, x) * 1.5)
    with caplog.at_level("WARNING", logger="bodyblocks.classify.traced"):
        assert trace_single_page(model) is None  # a trace that disagrees with the eager model on a probe is not used
    assert "differs from the model" in caplog.text
    monkeypatch.undo()

    def no_tracer(*args: object, **kwargs: object) -> None:
        raise RuntimeError("torch.jit.trace is gone")

    monkeypatch.setattr(torch.jit, "trace", no_tracer)
    with caplog.at_level("WARNING", logger="bodyblocks.classify.traced"):
        assert trace_single_page(model) is None
    assert "no traced forward pass (RuntimeError: torch.jit.trace is gone)" in caplog.text


def test_a_huge_page_runs_in_bounded_slices_of_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows go through the Transformer MAX_WINDOW_ROWS rows at a time, with the probabilities of one call."""
    from bodyblocks.classify import model_inputs as model_module

    torch.manual_seed(11)
    cfg = tiny_config()
    model = BlockClassifier(cfg).eval()
    blocks, _ = synthetic_page(random.Random(3), 60, 40)
    batch = collate([prepare_page(blocks, cfg)])
    whole = model.probabilities(batch)[0]
    seen: list[int] = []
    real = model._head_over_context

    def counted(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        seen.append(x.shape[0])
        return real(x, mask)

    monkeypatch.setattr(model_module, "MAX_WINDOW_ROWS", 2)
    monkeypatch.setattr(model, "_head_over_context", counted)
    sliced = model.probabilities(batch)[0]
    assert len(seen) > 1 and max(seen) <= 2  # several calls, none over the bound
    np.testing.assert_allclose(sliced, whole, rtol=0, atol=1e-6)
