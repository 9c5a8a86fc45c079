"""Configs: every YAML in configs/ loads and builds its model; defaults < YAML < --set; bad input is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from bodyblocks.classify.model import BlockClassifier
from bodyblocks.config import (
    Config,
    ConfigError,
    EncoderConfig,
    GbtConfig,
    ModelConfig,
    TrainConfig,
    from_dict,
    load_config,
    merge_overrides,
    to_dict,
)
from bodyblocks.page.features import FEATURE_NAMES

CONFIGS = sorted((Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"))


def test_the_three_required_configs_exist() -> None:
    assert {"default.yaml", "xlmr.yaml", "debug.yaml"} <= {p.name for p in CONFIGS}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_config_loads_and_builds_its_model(path: Path) -> None:
    cfg = load_config(path)
    assert isinstance(cfg, Config)
    model = BlockClassifier(cfg.model)  # frozen encoders are not loaded: the model only needs their dim
    assert model.n_parameters() > 0
    if path.name == "default.yaml":  # the shipped model must stay small enough to commit (<= 50 MB)
        assert model.n_parameters() * 4 <= 50e6
    assert from_dict(Config, to_dict(cfg)) == cfg


def test_known_settings() -> None:
    xlmr = load_config(next(p for p in CONFIGS if p.name == "xlmr.yaml")).model.encoder
    assert (xlmr.kind, xlmr.name, xlmr.dim) == ("hf", "xlm-roberta-base", 768)
    debug = load_config(next(p for p in CONFIGS if p.name == "debug.yaml"))
    assert debug.model.d_model <= 64 and debug.train.max_steps > 0
    assert load_config(next(p for p in CONFIGS if p.name == "default.yaml")).model.encoder.kind == "hash"


def test_precedence_defaults_yaml_cli(tmp_path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("model:\n  d_model: 128\n  n_heads: 4\ntrain:\n  lr: 1e-3\n  epochs: 7\n")
    cfg = load_config(path, ["train.epochs=3", "model.encoder.kind=hf", "model.encoder.dim=768"])
    assert cfg.model.d_model == 128  # YAML over default
    assert cfg.train.lr == 1e-3  # "1e-3" (a string to PyYAML) read as a number
    assert cfg.train.epochs == 3  # CLI over YAML
    assert cfg.model.encoder.kind == "hf" and cfg.model.encoder.dim == 768
    assert cfg.train.batch_pages == TrainConfig().batch_pages  # untouched default
    assert load_config().model == ModelConfig()


def test_lists_tuples_and_none() -> None:
    cfg = load_config(None, ["model.class_weights=[1, 3]", "data.languages=[zh, en]", "model.encoder.prefix=null"])
    assert cfg.model.class_weights == (1.0, 3.0) and cfg.data.languages == ["zh", "en"]
    assert cfg.model.encoder.prefix is None and cfg.model.encoder.text_prefix == ""
    assert EncoderConfig(kind="e5-small", dim=384).text_prefix == "passage: "


@pytest.mark.parametrize(
    "override, message",
    [
        ("model.d_modl=3", "unknown config key"),
        ("model.encoder.kind=bert", "encoder.kind"),
        ("model.d_model=30", "n_heads"),
        ("model.stride=600", "stride"),
        ("train.epochs=two", "integer"),
        ("train.lr=fast", "number"),
        ("model.use_context=1", "true or false"),
        ("model.context_kind=transformer", "unknown config key"),
        ("gbt.context=false", "unknown config key"),
        ("model.roles=[body,other]", "role head"),
        ("model.class_weights=[1]", "two numbers"),
        ("model.num_features=3", "features"),
        ("model.encoder.kind=e5-small", "384"),
        ("train.device=tpu", "device"),
        ("model", "key=value"),
        ("gbt.max_iter=0", "max_iter"),
        ("gbt.containers=2", "unknown config key"),
        ("train.num_workers=2", "unknown config key"),
        ("ensemble.vote_weights=[0.1]", "must hold 0.0"),
        ("ensemble.weights=[1.5]", "in \\[0, 1\\]"),
    ],
)
def test_bad_values_are_refused(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])


def test_merge_overrides_does_not_mutate() -> None:
    data = {"model": {"d_model": 64}}
    out = merge_overrides(data, ["model.n_layers=2", "train.seed=5"])
    assert data == {"model": {"d_model": 64}}
    assert out == {"model": {"d_model": 64, "n_layers": 2}, "train": {"seed": 5}}
    assert ModelConfig().num_features == len(FEATURE_NAMES)


def test_the_shipped_parts_match_the_default_config() -> None:
    """checkpoints/gbt was trained with configs/default.yaml's gbt section, the model with its model section."""
    import dataclasses
    import json

    root = Path(__file__).resolve().parents[1]
    cfg = load_config(root / "configs" / "default.yaml")
    gbt = root / "checkpoints" / "gbt" / "config.json"
    model = root / "checkpoints" / "default" / "config.json"
    if not (gbt.exists() and model.exists()):
        pytest.skip("the shipped checkpoints are not in this checkout")
    trees = from_dict(GbtConfig, json.loads(gbt.read_text())["gbt"])  # keys added since: their defaults
    assert len(trees.tokens) == cfg.gbt.tag_vocab  # the vocabulary training learned
    assert dataclasses.replace(trees, tokens=[]) == cfg.gbt
    assert from_dict(ModelConfig, json.loads(model.read_text())["model"]) == cfg.model


def test_a_model_checkpoint_without_roles_loads_and_one_with_a_role_head_is_refused(tmp_path: Path) -> None:
    """Model checkpoints written while a role head could be trained record its settings; without roles they
    load as if the keys were not there."""
    from bodyblocks.classify.integrity import model_config

    old = {"model": {**to_dict(ModelConfig()), "roles": [], "role_weight": 0.5, "role_balance": 0.0,
                     "role_class_weights": []}}
    assert model_config(tmp_path, old) == ModelConfig()
    assert from_dict(Config, old) == Config()
    assert not {"roles", "role_weight"} & set(to_dict(ModelConfig()))
    with pytest.raises(ConfigError, match="role head"):
        from_dict(ModelConfig, {**old["model"], "roles": ["body", "caption"]})


@pytest.mark.parametrize("name", ["default", "fast", "accurate", "gbt"])
def test_the_shipped_checkpoints_hold_only_the_settings_bodyblocks_has(name: str) -> None:
    """Each shipped config.json's settings are keys of their classes, none of a variant that is gone."""
    import dataclasses
    import json

    path = Path(__file__).resolve().parents[1] / "checkpoints" / name / "config.json"
    if not path.exists():
        pytest.skip("the shipped checkpoints are not in this checkout")
    meta = json.loads(path.read_text(encoding="utf-8"))
    for section, cls in (("model", ModelConfig), ("gbt", GbtConfig), ("train_config", TrainConfig)):
        if section in meta:
            fields = {f.name for f in dataclasses.fields(cls)}
            assert set(meta[section]) <= fields, f"{name} {section}: {set(meta[section]) - fields}"
            from_dict(cls, meta[section])


def test_a_config_extends_another_and_overrides_it_section_by_section(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text("model:\n  d_model: 128\n  n_heads: 4\n  class_weights: [1, 2]\n"
                                        "train:\n  epochs: 7\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "child.yaml").write_text("extends: ../base.yaml\nmodel:\n  class_weights: [1, 3]\n"
                                                 "train:\n  lr: 1e-3\n")
    cfg = load_config(tmp_path / "sub" / "child.yaml", ["train.epochs=3"])
    assert (cfg.model.d_model, cfg.model.n_heads, cfg.model.class_weights) == (128, 4, (1.0, 3.0))  # lists replaced
    assert (cfg.train.epochs, cfg.train.lr) == (3, 1e-3)  # the base's, the child's, the command line's
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(ConfigError, match="circle"):
        load_config(tmp_path / "a.yaml")
    (tmp_path / "c.yaml").write_text("extends: nowhere.yaml\n")
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "c.yaml")


def test_the_fast_config_is_the_default_without_context_layers() -> None:
    """configs/fast.yaml holds only what differs from default.yaml (it extends it), not a copy: no context layers,
    no int8 head, no vote."""
    import dataclasses

    import yaml

    folder = CONFIGS[0].parent
    raw = yaml.safe_load((folder / "fast.yaml").read_text(encoding="utf-8"))
    assert raw["extends"] == "default.yaml" and set(raw) == {"extends", "model", "train", "ensemble"}
    fast, default = load_config(folder / "fast.yaml"), load_config(folder / "default.yaml")
    assert fast.model == dataclasses.replace(default.model, use_context=False)
    assert fast.train == dataclasses.replace(default.train, out_dir="runs/fast", int8=False)  # a head alone
    assert fast.ensemble == dataclasses.replace(default.ensemble, vote_weights=[0.0])  # the preset computes no vote
    assert (fast.data, fast.gbt) == (default.data, default.gbt)
