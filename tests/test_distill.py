"""Distillation of a frozen encoder into the block model's n-gram table (training/distill.py, `bodyblocks distill`,
train.text_init / train.freeze_text), on synthetic texts and a tiny Hugging Face teacher built here."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch
from tests.test_encoders import tiny_hf  # noqa: F401  (the fixture)

from bodyblocks.cli import main
from bodyblocks.config import EncoderConfig, load_config
from bodyblocks.training.distill import DistillConfig, Distilled, distill, distinct_texts, load_table, save_table
from bodyblocks.training.loop import train
from bodyblocks.training.synth import generate_corpus

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
ENC = EncoderConfig(kind="hash", dim=16, buckets=4096, max_chars=500)


def word_teacher(n: int, seed: int = 0) -> tuple[list[str], np.ndarray]:
    """Texts of random words, and a teacher whose vector is the mean of a fixed random vector per word."""
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(7)) for _ in range(60)]  # (digits fold)
    vectors = np.random.default_rng(seed).normal(size=(len(words), 24)).astype(np.float32)
    texts, targets = [], []
    for _ in range(n):
        picked = rng.sample(range(len(words)), rng.randint(2, 6))
        texts.append(" ".join(words[k] for k in picked))
        targets.append(vectors[picked].mean(axis=0))
    return texts, np.stack(targets)


def test_the_student_learns_what_the_teacher_says_of_unseen_texts() -> None:
    texts, targets = word_teacher(3000)
    cfg = DistillConfig(epochs=4, batch=64, lr=0.05, held_out=0.1)
    result = distill(texts, targets, ENC, cfg, teacher="words")
    assert result.table.shape == (4096, 16) and result.held_out == 300 and result.texts == 2700
    assert result.cosine > 0.8 and result.cosine_train > 0.8  # a bag of words is what a bag of n-grams can say
    shuffled = distill(texts, targets[np.random.default_rng(1).permutation(len(targets))], ENC, cfg)
    assert shuffled.cosine < 0.3  # the fit is to the text, not to the targets' spread
    with pytest.raises(ValueError, match="teacher vectors"):
        distill(texts, targets[:-1], ENC)
    with pytest.raises(ValueError, match="not 'hf'"):
        distill(texts, targets, EncoderConfig(kind="hf", dim=16))


def test_a_table_is_saved_and_refused_for_another_shape(tmp_path: Path) -> None:
    table = np.random.default_rng(0).normal(size=(4096, 16)).astype(np.float32)
    path = save_table(Distilled(table, {"kind": "hash", "buckets": 4096, "dim": 16, "max_chars": 500}, 10, 1,
                                0.5, 0.6, 1.0), tmp_path / "t.safetensors")
    assert torch.equal(load_table(path, ENC), torch.from_numpy(table))
    with pytest.raises(ValueError, match="text_init"):
        load_table(path, EncoderConfig(kind="hash", dim=32, buckets=4096, max_chars=500))
    with pytest.raises(ValueError, match="max_chars"):
        load_table(path, EncoderConfig(kind="hash", dim=16, buckets=4096, max_chars=2000))
    assert distinct_texts(["a b", "a b", " ", "a bc", "a b"], 3) == ["a b"]  # cut as the encoders cut


def test_embed_distill_and_train_from_the_table_end_to_end(tiny_hf: Path, tmp_path: Path,  # noqa: F811
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BODYBLOCKS_CACHE", str(tmp_path / "cache"))  # the teacher's vectors go here
    generate_corpus(tmp_path / "data" / "synth", pages=24, seed=3)
    data = [f"data.root={tmp_path / 'data'}", "data.datasets=[synth]", f"data.cache_dir={tmp_path / 'cache'}"]
    teacher = tmp_path / "teacher.yaml"
    teacher.write_text(f"model:\n  encoder:\n    kind: hf\n    name: {tiny_hf}\n    dim: 32\n    max_length: 24\n"
                       "    max_chars: 500\n", encoding="utf-8")
    assert main(["data", "embed", str(tmp_path / "data" / "synth"), "--config", str(teacher), "--device", "cpu",
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    table = tmp_path / "table.safetensors"
    args = ["distill", str(CONFIGS / "debug.yaml"), "--teacher", str(teacher), "--out", str(table), "--epochs", "1"]
    assert main([*args, *(x for d in data for x in ("--set", d))]) == 0
    start = load_table(table, ENC)

    def run(out: str, *extra: str) -> torch.Tensor:
        from bodyblocks.inference.model import BlockClassifier

        cfg = load_config(CONFIGS / "debug.yaml", [*data, f"train.out_dir={tmp_path / out}", "train.epochs=1",
                                                   f"train.text_init={table}", *extra])
        train(cfg, progress=False)
        return BlockClassifier.load(tmp_path / out / "last").hash.bag.weight.detach()

    frozen = run("frozen", "train.freeze_text=true")
    assert torch.allclose(frozen, start)  # kept as distilled (fp32 checkpoints)
    free = run("free")
    moved_from_start = torch.corrcoef(torch.stack([free.flatten(), start.flatten()]))[0, 1]
    assert not torch.allclose(free, start) and moved_from_start > 0.5  # trained on from the table, not from scratch
    with pytest.raises(ValueError, match="text_init"):
        load_table(table, EncoderConfig(kind="hash", dim=8, buckets=4096, max_chars=500))
