"""Teacher labels for a noisy student (training/teacher.py, `bodyblocks data teacher`, train.teacher_labels): the
mask, the labels file meeting the cache, no loss on masked blocks, and a student that learns what a (synthetic)
teacher says, on synthetic corpora."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from bodyblocks.cli import main
from bodyblocks.config import DataConfig, load_config
from bodyblocks.inference.inputs import IGNORE
from bodyblocks.inference.model import BlockClassifier, collate, prepare_page
from bodyblocks.training.cache import load_cached
from bodyblocks.training.loop import make_inputs, train
from bodyblocks.training.synth import generate_corpus
from bodyblocks.training.teacher import (
    blocks_key,
    peer_labels,
    read_labels,
    teacher_pages,
    teacher_targets,
    write_labels,
)

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two synthetic sources: `synth` (gold) and `unl` (the teacher's pages)."""
    root = tmp_path_factory.mktemp("teacher")
    generate_corpus(root / "synth", pages=40, seed=5)
    generate_corpus(root / "unl", pages=40, seed=9)
    return root


def data_of(corpus: Path) -> DataConfig:
    return DataConfig(root=str(corpus), datasets=["synth"], cache_dir=str(corpus / "cache"))


def rows_of(pages: list, labels_of) -> list[dict]:  # noqa: ANN001
    return [{"dataset": cp.dataset, "id": cp.id, "n": len(cp.blocks), "key": blocks_key(cp.blocks),
             "labels": [int(x) for x in labels_of(cp)], "p": [], "peers": {}} for cp in pages]


def test_the_mask_leaves_out_unsure_blocks_and_those_both_peers_contradict() -> None:
    p = np.array([0.9, 0.1, 0.5, 0.65, 0.95, 0.05, 0.8])
    assert teacher_targets(p).tolist() == [1, 0, IGNORE, IGNORE, 1, 0, 1]
    peers = [np.array([1, 0, 1, 1, 0, 1, 0]), np.array([1, 0, 0, 1, 0, 0, 1])]
    # block 4: both peers say 0 where the teacher says 1 -> masked; block 5: one peer disagrees -> kept;
    # block 6: the peers split -> kept
    assert teacher_targets(p, peers=peers).tolist() == [1, 0, IGNORE, IGNORE, IGNORE, 0, 1]
    weak = np.array([-1, 1, 0, -1, -1, -1, -1])  # snippet labels win where they are set
    assert teacher_targets(p, peers=peers, weak=weak).tolist() == [1, 1, 0, IGNORE, IGNORE, 0, 1]
    assert teacher_targets(p, low=0.5, high=0.5, threshold=0.7).tolist() == [1, 0, 0, 0, 1, 0, 1]


def test_a_peer_text_labels_the_blocks_it_holds(corpus: Path) -> None:
    cp = next(c for c in load_cached(corpus / "synth", corpus / "cache") if c.gold and any(c.labels))
    assert peer_labels(cp.blocks, cp.gold).tolist() == cp.labels  # the gold as a peer's text: the gold labels
    assert peer_labels(cp.blocks, "").tolist() == [0] * len(cp.blocks)


def test_labelled_pages_meet_only_their_blocks_and_gold_wins(corpus: Path, tmp_path: Path) -> None:
    unl = [c for c in load_cached(corpus / "unl", corpus / "cache") if c.blocks][:4]
    rows = rows_of(unl, lambda cp: [1 - y for y in cp.labels])
    rows[1]["labels"] = [IGNORE] * rows[1]["n"]  # every block masked: nothing to learn from
    rows[2]["key"] += 1  # made for other blocks (the segmenter changed since)
    write_labels(tmp_path / "l.jsonl.gz", iter(rows))
    assert [r["id"] for r in read_labels(tmp_path / "l.jsonl.gz")] == [cp.id for cp in unl]
    got = teacher_pages([tmp_path / "l.jsonl.gz"], data_of(corpus))
    assert [cp.id for cp in got] == [unl[0].id, unl[3].id]
    assert got[0].labels == [1 - y for y in unl[0].labels] and got[0].split == "train"
    gold = {"train": [unl[3]]}  # a page the run already has with its gold
    assert [cp.id for cp in teacher_pages([tmp_path / "l.jsonl.gz"], data_of(corpus), gold)] == [unl[0].id]


def test_the_sites_of_a_held_out_source_stay_unseen(corpus: Path, tmp_path: Path) -> None:
    from bodyblocks.training.data import load_pages

    data = data_of(corpus)
    unl = [c for c in load_cached(corpus / "unl", corpus / "cache") if c.blocks]
    shared = {c.site for c in unl} & {c.site for c in load_cached(corpus / "synth", corpus / "cache")}
    assert shared  # the synthetic corpora draw their sites from one list
    every = [cp for pages in load_pages(data).values() for cp in pages]
    held = replace(data, exclude_sites_of=["unl"])
    kept = [cp for pages in load_pages(held).values() for cp in pages]
    assert kept and len(kept) < len(every) and not {cp.site for cp in kept} & shared
    write_labels(tmp_path / "l.jsonl.gz", iter(rows_of(unl, lambda cp: cp.labels)))
    assert not {cp.site for cp in teacher_pages([tmp_path / "l.jsonl.gz"], replace(data, exclude_sites_of=["synth"]))
                } & shared


def test_masked_blocks_get_no_loss(corpus: Path) -> None:
    cfg = load_config(CONFIGS / "debug.yaml")
    cp = next(c for c in load_cached(corpus / "unl", corpus / "cache") if len(c.blocks) > 6)
    labels = np.array([y if i % 3 else IGNORE for i, y in enumerate(cp.labels)])
    torch.manual_seed(0)
    model = BlockClassifier(cfg.model)
    model.eval()
    batch = collate([prepare_page(cp.blocks, cfg.model, labels=labels)])
    out = model(batch, batch.labels)
    logits = out.logits
    logits.retain_grad()
    out.loss.backward()
    grad = logits.grad.abs().sum(-1).numpy()
    assert np.all(grad[labels == IGNORE] == 0) and np.all(grad[labels != IGNORE] > 0)
    other = labels.copy()
    other[labels == IGNORE] = 1  # what a masked block's label would have been: it must not matter
    other_batch = collate([prepare_page(cp.blocks, cfg.model, labels=np.where(labels == IGNORE, IGNORE, other))])
    assert torch.allclose(model(other_batch, other_batch.labels).loss, out.loss)
    assert make_inputs([cp], cfg.model)[0].labels is not None


def student_probs(corpus: Path, out: Path, labels_file: Path | None) -> tuple[float, float]:
    """Train on four gold pages (and the teacher's pages when given); the mean P(body) of the `unl` pages' gold body
    blocks and of their other blocks, from the last epoch's model."""
    extra = [f"train.teacher_labels=[{labels_file}]"] if labels_file else []
    cfg = load_config(CONFIGS / "debug.yaml", [
        f"data.root={corpus}", "data.datasets=[synth]", f"data.cache_dir={corpus / 'cache'}", "data.max_pages=0",
        f"train.out_dir={out}", "train.max_steps=0", "train.epochs=6", "train.patience=6", "train.lr=3e-3", *extra])
    from bodyblocks.training.data import load_pages

    splits = load_pages(cfg.data)
    splits["train"] = splits["train"][:4]
    train(cfg, progress=False, splits=splits)
    model = BlockClassifier.load(out / "last")
    model.eval()
    unl = [c for c in load_cached(corpus / "unl", corpus / "cache") if c.blocks and any(c.labels)]
    body, other = [], []
    with torch.no_grad():
        for cp in unl:
            batch = collate([prepare_page(cp.blocks, cfg.model)])
            p = torch.softmax(model(batch).logits.float(), -1)[:, 1].numpy()
            y = np.asarray(cp.labels)
            body += p[y == 1].tolist()
            other += p[y == 0].tolist()
    return float(np.mean(body)), float(np.mean(other))


def test_a_student_learns_what_the_teacher_says(corpus: Path, tmp_path: Path) -> None:
    unl = [c for c in load_cached(corpus / "unl", corpus / "cache") if c.blocks and any(c.labels)]
    inverted = tmp_path / "inverted.jsonl.gz"  # a teacher that calls the body boilerplate and the rest body
    write_labels(inverted, iter(rows_of(unl, lambda cp: [1 - y for y in cp.labels])))
    body, other = student_probs(corpus, tmp_path / "teacher", inverted)
    assert body < other - 0.2  # it says what the teacher says, against the gold pages
    right = tmp_path / "right.jsonl.gz"  # a teacher that says what the gold says, a third of its blocks masked
    write_labels(right, iter(rows_of(unl, lambda cp: [y if i % 3 else IGNORE for i, y in enumerate(cp.labels)])))
    body, other = student_probs(corpus, tmp_path / "right", right)
    assert body > other + 0.2  # the same run the right way round


def test_cli_refuses_to_label_a_held_out_source(corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="held out"):
        main(["data", "teacher", "unl", "--ensemble", str(tmp_path), "--out", str(tmp_path / "x.jsonl.gz"),
              "--exclude", "unl", "--root", str(corpus), "--cache-dir", str(corpus / "cache")])
