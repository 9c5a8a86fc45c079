"""Train / validation / test splits, grouped by site and saved as id lists (data/splits/<dataset>/<split>.txt).

Rules:
  1. a source's own split is respected when the dataset has at least two split values: train/dev -> train,
     test/final -> test (dragnet train/test, CleanEval dev/final); a single value (wcxb "dev") says nothing;
  2. otherwise pages are split 7:3 train:test with scikit-learn's GroupShuffleSplit, grouped by site
     (datasets.site_of: url host, note host/site, canonical link, dominant link host, else the page
     id), so one site's template never sits on both sides; of CANDIDATES draws the one whose share of
     pages is closest to 3:10 is kept (a share of sites can be far from a share of pages);
  3. validation is carved from train the same way: about VAL_SHARE of the train pages, whole sites;
  4. deterministic for a seed; the files hold ids sorted, one per line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bodyblocks.runtime.files import REPO_ROOT
from bodyblocks.training.datasets import read_dataset, resolve_dataset, site_of

SPLITS_DIR = REPO_ROOT / "data" / "splits"
SPLIT_NAMES = ("train", "val", "test")
TEST_SHARE = 0.3  # the reference paper's 7:3 train:test
VAL_SHARE = 0.1  # share of train pages (whole sites) held out for validation
CANDIDATES = 20  # group splits drawn; the one closest to the wanted page share wins
SOURCE_SPLITS = {"train": "train", "dev": "train", "training": "train", "test": "test", "final": "test",
                 "val": "val", "valid": "val", "validation": "val"}


def _group_split(idx: list[int], groups: Sequence[str], share: float, seed: int) -> tuple[list[int], list[int]]:
    """Split positions idx into (keep, held out), whole groups on each side, holding out about `share` pages.

    GroupShuffleSplit holds out a share of *groups*; with few or uneven sites that can be far from the
    share of pages, so CANDIDATES draws are made and the one closest to `share` of pages is kept.
    """
    from sklearn.model_selection import GroupShuffleSplit

    if len({groups[i] for i in idx}) < 2:
        return idx, []
    splitter = GroupShuffleSplit(n_splits=CANDIDATES, test_size=share, random_state=seed)
    keep, held = min(splitter.split(idx, groups=[groups[i] for i in idx]),
                     key=lambda kh: abs(len(kh[1]) / len(idx) - share))
    return [idx[k] for k in sorted(keep)], [idx[k] for k in sorted(held)]


def make_splits(ids: Sequence[str], groups: Sequence[str], source: Sequence[str | None],
                seed: int = 0) -> dict[str, list[str]]:
    """Assign every id to train, val or test (see the module docstring); returns sorted id lists."""
    mapped = [SOURCE_SPLITS.get((s or "").lower()) for s in source]
    use_source = len({s for s in source if s}) >= 2 and all(mapped)
    everything = list(range(len(ids)))
    if use_source:
        train = [i for i in everything if mapped[i] == "train"]
        test = [i for i in everything if mapped[i] == "test"]
        given_val = [i for i in everything if mapped[i] == "val"]
    else:
        train, test = _group_split(everything, groups, TEST_SHARE, seed)
        given_val = []
    if given_val:
        val = given_val
    else:
        train, val = _group_split(train, groups, VAL_SHARE, seed)
    return {name: sorted(ids[i] for i in part) for name, part in zip(SPLIT_NAMES, (train, val, test), strict=True)}


def write_splits(dataset: str | Path, out_dir: str | Path | None = None, seed: int = 0) -> dict[str, list[str]]:
    """Compute a dataset's splits and write <out_dir>/<dataset>/{train,val,test}.txt."""
    folder = resolve_dataset(dataset)
    pages = list(read_dataset(folder))
    parts = make_splits([p.id for p in pages], [site_of(p) for p in pages], [p.split for p in pages], seed)
    target = Path(out_dir or SPLITS_DIR) / folder.name
    target.mkdir(parents=True, exist_ok=True)
    for name, ids in parts.items():
        (target / f"{name}.txt").write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
    return parts


def load_split_ids(dataset: str | Path, split: str, splits_dir: str | Path | None = None) -> set[str]:
    """Ids of one split of a dataset (a folder path or name); FileNotFoundError when not written yet."""
    if split not in SPLIT_NAMES:
        raise ValueError(f"unknown split {split!r} (one of {', '.join(SPLIT_NAMES)})")
    path = Path(splits_dir or SPLITS_DIR) / Path(dataset).name / f"{split}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: run `bodyblocks data split {dataset}`")
    return {line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}


def split_of(dataset: str | Path, splits_dir: str | Path | None = None) -> dict[str, str]:
    """{page id: split name} for a dataset, empty when its split files are missing."""
    out: dict[str, str] = {}
    for name in SPLIT_NAMES:
        try:
            out.update(dict.fromkeys(load_split_ids(dataset, name, splits_dir), name))
        except FileNotFoundError:
            return {}
    return out
