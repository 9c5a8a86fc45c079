"""Labelled pages for training and tuning: the processed cache of each dataset, split by site.

    splits = load_pages(DataConfig(datasets=["daniel"]))     # {"train": [...], "val": [...], "test": [...]}

Their block labels are cfg.targets' (the gold's, or the convention's: training/targets.py). A page's split comes
from data/splits (grouped by site: splits.py) when it has one, else from the source's
own split names, else from a hash of its site (80/10/10). Pages that failed to process, have no blocks or
no body block are left out.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

from bodyblocks.config import DataConfig
from bodyblocks.training.cache import CachedPage, load_cached
from bodyblocks.training.datasets import list_datasets, resolve_dataset
from bodyblocks.training.hosts import Unseen, unseen_sites


def _hash_split(site: str) -> str:
    """80/10/10 by site for pages that have no project split (e.g. a user's own or a synthetic corpus)."""
    r = zlib.crc32(site.encode("utf-8")) % 10
    return "test" if r == 0 else "val" if r == 1 else "train"


def split_name(cp: CachedPage) -> str:
    """The page's split: data/splits when present, else the source's own, else by site hash."""
    if cp.split:
        return cp.split
    if cp.source_split in ("train", "dev"):
        return "train"
    if cp.source_split in ("test", "final"):
        return "test"
    return _hash_split(cp.site)


def dataset_folder(cfg: DataConfig, name: str) -> Path:
    """The folder of the dataset called `name`: under cfg.root when it is set, else as resolve_dataset finds it."""
    return resolve_dataset(Path(cfg.root) / name if cfg.root else name)


def data_folders(cfg: DataConfig) -> list[Path]:
    """The dataset folders that cfg names (none named: every dataset under its root)."""
    return [dataset_folder(cfg, d) for d in cfg.datasets] if cfg.datasets else list_datasets(cfg.root)


def held_out_sites(cfg: DataConfig, names: list[str] | tuple[str, ...]) -> Unseen:
    """The sites of the datasets `names` (hosts.Unseen: matched by registrable domain; with any held out, a page
    with no host is left out too)."""
    return unseen_sites((name, dataset_folder(cfg, name)) for name in names)


def load_pages(cfg: DataConfig, workers: int = 2) -> dict[str, list[CachedPage]]:
    """Labelled pages by split ("train", "val", "test") from the datasets that cfg names, less those of a site of
    cfg.exclude_sites_of (held_out_sites); with cfg.held_out_languages, their pages out of "train" and the only
    "val" pages."""
    out: dict[str, list[CachedPage]] = {"train": [], "val": [], "test": []}
    unseen = held_out_sites(cfg, cfg.exclude_sites_of)
    for folder in data_folders(cfg):
        counts: dict[str, int] = {}
        for cp in load_cached(folder, cfg.cache_dir, workers=workers, targets=cfg.targets):
            if cp.error or not cp.blocks or cp.method == "none" or not any(cp.labels):
                continue
            if not unseen.keeps(cp.site):
                continue
            if cfg.languages and cp.lang not in cfg.languages:
                continue
            name = split_name(cp)
            held = cp.lang in cfg.held_out_languages
            if cfg.held_out_languages and ((name == "train" and held) or (name == "val" and not held)):
                continue
            if cfg.max_pages and counts.get(name, 0) >= cfg.max_pages:
                continue
            counts[name] = counts.get(name, 0) + 1
            out.setdefault(name, []).append(cp)
    return out


def recorded_data(meta: dict[str, Any]) -> DataConfig:
    """The data config a checkpoint's config.json recorded at training (all datasets when it has none)."""
    return DataConfig(**meta["data"]["config"]) if "data" in meta else DataConfig()
