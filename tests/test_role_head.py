"""The block Transformer's role head (model.roles): inputs, loss, probabilities, checkpoints, training."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from tests.test_model import synthetic_page, tiny_config

from bodyblocks.config import ConfigError, load_config
from bodyblocks.inference.integrity import CheckpointError
from bodyblocks.inference.model import IGNORE, BlockClassifier, collate, prepare_page
from bodyblocks.inference.model_scorer import ModelScorer
from bodyblocks.inference.traced import trace_single_page
from bodyblocks.training.data import load_pages
from bodyblocks.training.loop import make_inputs, recorded_role_weights, role_class_weights, train
from bodyblocks.training.roles import ROLES
from bodyblocks.training.synth import generate_corpus

THREE = ["body", "navigation", "other"]


def role_page(rng: random.Random, n_body: int, n_nav: int) -> tuple[list, list[int], list[str]]:
    """synthetic_page with a role per block: navigation links, the article (body), a footer (other)."""
    blocks, labels = synthetic_page(rng, n_body, n_nav)
    roles = ["navigation"] * n_nav + ["body"] * (n_body + 1) + ["other"]
    assert len(roles) == len(blocks)
    return blocks, labels, roles


def role_batch(cfg, seed: int = 0):  # noqa: ANN001, ANN201
    rng = random.Random(seed)
    pages = [role_page(rng, 3, 4), role_page(rng, 12, 10), role_page(rng, 1, 2)]
    return collate([prepare_page(b, cfg, labels=y, roles=r) for b, y, r in pages])


def test_roles_are_indices_of_model_roles_and_unknown_ones_are_left_out() -> None:
    cfg = tiny_config(roles=THREE)
    blocks, labels, roles = role_page(random.Random(1), 2, 2)
    roles[0] = "caption"  # not one of the model's roles
    page = prepare_page(blocks, cfg, labels=labels, roles=roles)
    assert page.roles is not None and page.roles.tolist() == [IGNORE, 1, 0, 0, 0, 2]
    assert prepare_page(blocks, tiny_config(), labels=labels, roles=roles).roles is None  # no head: no roles
    with pytest.raises(ValueError, match="roles: expected 6"):
        prepare_page(blocks, cfg, roles=roles[:-1])


@pytest.mark.parametrize("roles", [["body"], ["body", "body"], ["body", ""]])
def test_a_role_head_needs_two_distinct_named_roles(roles: list[str]) -> None:
    with pytest.raises(ConfigError, match="model.roles"):
        tiny_config(roles=roles)


def test_the_loss_adds_role_weight_times_the_roles_cross_entropy() -> None:
    torch.manual_seed(0)
    cfg = tiny_config(roles=THREE, role_weight=0.7)
    batch = role_batch(cfg)
    assert batch.mask.shape[1] > cfg.window  # the long page runs in windows: the role logits are averaged too
    model = BlockClassifier(cfg).eval()
    out = model(batch, batch.labels)
    n = int(batch.mask.sum())
    assert out.logits.shape == (n, 2) and out.role_logits is not None and out.role_logits.shape == (n, 3)
    body = F.cross_entropy(out.logits, batch.labels)
    roles = F.cross_entropy(out.role_logits, batch.roles)
    assert out.loss.item() == pytest.approx(body.item() + 0.7 * roles.item(), rel=1e-5)
    assert out.role_loss is not None and out.role_loss.item() == pytest.approx(roles.item(), rel=1e-5)
    batch.roles = None  # no roles (inference, validation): the body's loss alone
    assert model(batch, batch.labels).loss.item() == pytest.approx(body.item(), rel=1e-5)
    unweighted = BlockClassifier(tiny_config(roles=THREE, role_weight=0.0)).eval()
    unweighted.load_state_dict(model.state_dict())
    assert unweighted(role_batch(cfg), batch.labels).loss.item() == pytest.approx(body.item(), rel=1e-5)


def test_a_role_head_leaves_the_body_head_as_it_was() -> None:
    torch.manual_seed(3)
    plain = BlockClassifier(tiny_config()).eval()
    with_roles = BlockClassifier(tiny_config(roles=THREE)).eval()
    state = {k: v for k, v in with_roles.state_dict().items() if not k.startswith("role_head.")}
    plain.load_state_dict(state)
    batch = role_batch(tiny_config(roles=THREE))
    torch.testing.assert_close(plain(batch).logits, with_roles(batch).logits, atol=1e-6, rtol=0)
    np.testing.assert_allclose(plain.probabilities(batch)[1], with_roles.probabilities(batch)[1], atol=1e-6)
    with pytest.raises(ValueError, match="no role head"):
        plain.role_probabilities(batch)


def test_the_role_head_learns_the_roles_of_a_batch() -> None:
    torch.manual_seed(0)
    cfg = tiny_config(roles=THREE)
    batch = role_batch(cfg)
    model = BlockClassifier(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(60):
        loss = model(batch, batch.labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    probs = model.role_probabilities(batch)
    assert [p.shape for p in probs] == [(9, 3), (24, 3), (5, 3)]
    np.testing.assert_allclose(np.concatenate(probs).sum(axis=1), 1.0, atol=1e-5)
    assert (np.concatenate(probs).argmax(axis=1) == batch.roles.numpy()).all()


def test_checkpoints_keep_the_role_head_and_refuse_one_of_another_size(tmp_path: Path) -> None:
    torch.manual_seed(0)
    cfg = tiny_config(roles=THREE)
    model = BlockClassifier(cfg).eval()
    folder = model.save(tmp_path / "ckpt")
    loaded = BlockClassifier.load(folder)
    batch = role_batch(cfg)
    assert loaded.cfg.roles == THREE
    for a, b in zip(loaded.role_probabilities(batch), model.role_probabilities(batch), strict=True):
        np.testing.assert_array_equal(a, b)
    meta = json.loads((folder / "config.json").read_text())
    meta["model"]["roles"] = ["body", "other"]  # the weights hold three
    (folder / "config.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="role_head"):
        BlockClassifier.load(folder)
    meta["model"]["roles"] = []  # the weights hold a head the settings do not name
    (folder / "config.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="role head"):
        BlockClassifier.load(folder)


def test_the_traced_forward_pass_gives_p_body_of_a_model_with_a_role_head() -> None:
    torch.manual_seed(5)
    model = BlockClassifier(tiny_config(roles=THREE)).eval()
    single = trace_single_page(model)
    assert single is not None
    rng = random.Random(6)
    for n_body, n_nav in [(2, 2), (40, 11)]:  # one window and five
        batch = collate([prepare_page(synthetic_page(rng, n_body, n_nav)[0], model.cfg)])
        np.testing.assert_allclose(single(batch), model.probabilities(batch)[0], rtol=0, atol=1e-6)


def test_training_with_a_role_head_reads_the_convention_roles(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    generate_corpus(root / "synth", pages=30, seed=5)
    cfg = load_config(Path(__file__).resolve().parents[1] / "configs" / "debug.yaml", [
        f"data.root={root}", "data.datasets=[synth]", f"data.cache_dir={root / 'cache'}", "data.max_pages=0",
        f"train.out_dir={tmp_path / 'run'}", "train.max_steps=0", "train.epochs=2", "train.lr=3e-3",
        f"model.roles=[{','.join(ROLES)}]", "model.role_balance=0.5",
    ])
    splits = load_pages(cfg.data, roles=True)
    pages = [cp for v in splits.values() for cp in v]
    assert pages and all(cp.roles is not None and len(cp.roles) == len(cp.blocks) for cp in pages)
    assert {"body", "navigation"} <= {r for cp in pages for r in cp.roles}
    assert all(cp.roles is None for v in load_pages(cfg.data).values() for cp in v)  # the gold's cache alone
    train(cfg, progress=False)
    scorer = ModelScorer.load(tmp_path / "run" / "best", device="cpu")
    assert scorer.model.cfg.roles == list(ROLES)
    made = role_class_weights(make_inputs(splits["train"], cfg.model), len(ROLES), 0.5)  # from the training pages
    assert scorer.model.cfg.role_class_weights == made and len(set(made)) > 2
    doc = pages[0]
    probs = scorer.model.role_probabilities(collate([prepare_page(doc.blocks, scorer.cfg)]))[0]
    assert probs.shape == (len(doc.blocks), len(ROLES))
    # continued: resuming and fine-tuning keep the weights the run started with, whatever pages they see
    more = load_config(Path(__file__).resolve().parents[1] / "configs" / "debug.yaml", [
        f"data.root={root}", "data.datasets=[synth]", f"data.cache_dir={root / 'cache'}", "data.max_pages=4",
        f"train.out_dir={tmp_path / 'run'}", "train.epochs=3", "train.lr=3e-3", f"model.roles=[{','.join(ROLES)}]",
        "model.role_balance=0.5",
    ])
    assert recorded_role_weights(more, True, tmp_path / "run") == made
    train(more, resume=True, progress=False)
    assert BlockClassifier.load(tmp_path / "run" / "last").cfg.role_class_weights == made
    tuned = dataclasses.replace(more, train=dataclasses.replace(more.train, out_dir=str(tmp_path / "tuned"), epochs=1,
                                                                init=str(tmp_path / "run" / "best")))
    train(tuned, progress=False, splits=load_pages(cfg.data))  # pages without roles: the body head alone learns
    assert BlockClassifier.load(tmp_path / "tuned" / "last").cfg.role_class_weights == made
    with pytest.raises(ValueError, match="keypoints not among the training roles"):
        train(dataclasses.replace(tuned, model=dataclasses.replace(tuned.model, roles=["body", "keypoints"])),
              progress=False)


def test_role_balance_weighs_rare_roles_up_and_the_weights_reach_the_loss() -> None:
    cfg = tiny_config(roles=THREE)
    rng = random.Random(2)
    pages = [prepare_page(b, cfg, labels=y, roles=r) for b, y, r in (role_page(rng, 12, 1) for _ in range(4))]
    weights = role_class_weights(pages, 3, 0.5)  # 4 navigation blocks, 52 body, 4 other
    assert weights[1] == pytest.approx(weights[2]) and weights[1] > 3 * weights[0]
    assert (52 * weights[0] + 4 * weights[1] + 4 * weights[2]) / 60 == pytest.approx(1.0, abs=1e-5)
    assert role_class_weights(pages, 3, 0.0) == [1.0] * 3  # balance 0: all 1
    assert role_class_weights(pages, 4, 0.5) == [*weights, 1.0]  # a role no block has: 1, the others as they were
    torch.manual_seed(0)
    batch = collate(pages)
    plain = BlockClassifier(cfg).eval()
    weighted = BlockClassifier(tiny_config(roles=THREE, role_class_weights=weights)).eval()
    weighted.load_state_dict(plain.state_dict())
    out = plain(batch, batch.labels)
    body = F.cross_entropy(out.logits, batch.labels)
    want = body + 0.5 * F.cross_entropy(out.role_logits, batch.roles, weight=torch.tensor(weights))
    assert weighted(batch, batch.labels).loss.item() == pytest.approx(want.item(), rel=1e-5)
    with pytest.raises(ConfigError, match="role_class_weights"):
        tiny_config(roles=THREE, role_class_weights=[1.0, 2.0])
