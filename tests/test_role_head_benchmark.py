"""benchmarks/role_head.py: the role model's parts and the drop variant."""

import random

import numpy as np
import pytest
import torch
from benchmarks import role_head
from tests.test_model import synthetic_page, tiny_config

from bodyblocks.inference.blocks import Blend
from bodyblocks.inference.model import BlockClassifier, collate, prepare_page
from bodyblocks.training.roles import ROLES
from bodyblocks.types import Document


def test_drop_lowers_p_body_by_the_dropped_roles_probability_alone() -> None:
    roles = np.zeros((3, len(ROLES)), np.float32)
    roles[0, ROLES.index("body")] = 1.0
    roles[1, ROLES.index("caption")], roles[1, ROLES.index("related")], roles[1, ROLES.index("body")] = 0.5, 0.3, 0.2
    roles[2, ROLES.index("comment")], roles[2, ROLES.index("headline")] = 0.6, 0.4  # neither is dropped
    page = {"model": np.full(3, 0.8, np.float32), "gbt": np.full(3, 0.6, np.float32),
            "vote": np.ones(3, np.float32), "roles": roles}
    assert np.allclose(role_head.dropped(page), [0.0, 0.8, 0.0])
    blend = Blend(0.5, 0.2)
    p = 0.5 * 0.8 + 0.2 * 1.0 + 0.3 * 0.6
    assert np.allclose(role_head.times_kept(page, blend), [p, 0.2 * p, p])


def test_the_role_parts_hold_the_role_models_p_body_and_p_role(tmp_path) -> None:
    torch.manual_seed(0)
    cfg = tiny_config(roles=list(ROLES))
    model = BlockClassifier(cfg).eval()
    folder = model.save(tmp_path / "model", extra={"threshold": 0.5})
    blocks, _ = synthetic_page(random.Random(1), 4, 3)
    doc = Document(blocks=blocks, title="Flood")
    base = [{"id": "a", "doc": doc, "model": np.zeros(len(blocks), np.float32), "gbt": np.zeros(len(blocks)),
             "vote": np.zeros(len(blocks))}, {"id": "b", "doc": None}]
    parts = role_head.role_parts(base, folder)
    batch = collate([prepare_page(blocks, cfg)])
    np.testing.assert_allclose(parts[0]["model"], model.probabilities(batch)[0], atol=1e-5)
    np.testing.assert_allclose(parts[0]["roles"], model.role_probabilities(batch)[0], atol=1e-3)  # (float16)
    assert parts[0]["gbt"] is base[0]["gbt"] and parts[1] == base[1] and "roles" not in base[0]
    with pytest.raises(ValueError, match="roles"):
        role_head.role_parts(base, BlockClassifier(tiny_config(roles=["body", "other"])).save(tmp_path / "two"))
