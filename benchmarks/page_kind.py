"""Train the page-kind classifier on wcxb-dev (train + val), report it once on the test pages, ship it.

    python -m benchmarks.page_kind --write docs/EVALUATION.md#page-kind
    python -m benchmarks.page_kind --ablation      # what the decision's features are worth, on train and val only

1. every wcxb-dev page segmented and extracted by the shipped default (its decision's features are part of the
   row) and made one row of page/kind_features.KIND_FEATURES, twice: with the page's URL, and with only the
   canonical URL it states (a caller that knows no URL); its label, the page's page_type. The train and val
   pages of the news sources (dragnet, daniel, l3s-gn1) join the training rows as articles, each of weight
   NEWS_WEIGHT (wcxb-dev's modern pages alone made a third of daniel's old news pages listings);
2. settings (learning rate, leaves, iterations, class weights) chosen by accuracy on wcxb-dev's val pages of
   trees fitted on its train pages; the test pages are not looked at;
3. trees with those settings fitted on train + val, flattened (training/gbt.flatten_trees) into
   checkpoints/page-kind (classify/pagekind.KindModel; --out to write elsewhere), the flattened walk checked
   against scikit-learn's own predictions;
4. the test pages' accuracy and confusion table, and the kinds it gives the test pages of the news sources
   (dragnet, daniel, l3s-gn1: articles all), printed and written to --write.
`--ablation` fits nothing to ship and reads no test page: 5-fold cross-validation (stratified, two shuffles) over
wcxb-dev's train and val pages (the rows with the page's URL), with and without the decision's features
(DECISION_FEATURES), at three settings of GRID.
Needs scikit-learn (the training extra); the shipped model does not.
"""

from __future__ import annotations

import functools
import itertools
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import arguments, need_root, write_report
from bodyblocks.classify.pagekind import PAGE_KINDS, KindModel, features_of, kind_row, shipped_folder, with_url
from bodyblocks.classify.trees import GbtModel
from bodyblocks.config import GbtConfig
from bodyblocks.errors import InputError
from bodyblocks.page.kind_features import DECISION_FEATURES, KIND_FEATURES, PAGE_FEATURES
from bodyblocks.training.datasets import read_dataset
from bodyblocks.training.fit_trees import flatten_trees
from bodyblocks.training.splits import split_of

os.environ.setdefault("OMP_NUM_THREADS", "1")  # scikit-learn's threads fought for a shared machine's cores: 20x slower
DATASET = "wcxb-dev"
NEWS = ("dragnet", "daniel", "l3s-gn1")  # sources of news articles: their pages should come out "article"
GRID = {"learning_rate": (0.05, 0.1), "max_leaf_nodes": (7, 15), "class_weight": (None, "balanced")}
ITERS = (100, 200, 400)  # iteration counts tried with each setting of GRID
SEED = 0
NEWS_WEIGHT = 0.2  # of a news source's page among the training rows (chosen by cross-validation on train and val)


Rows = tuple[list[str], list[str], list[str], np.ndarray, np.ndarray]


@functools.cache
def _extractor() -> Any:
    """The shipped default, whose decisions the rows read (as `bodyblocks extract --page-kind` gives them)."""
    from bodyblocks.loading.checkpoints import load_extractor

    return load_extractor("ensemble", device="cpu")


def page_rows(root: Path, dataset: str, splits: Sequence[str]) -> Rows:
    """(ids, splits, page types, rows, rows without the page's URL) of a dataset's pages in `splits` (a page that
    cannot be read is skipped): a row as a batch run or extract(url=...) makes it, with the page's URL, and as a
    page of unknown URL gives it (its canonical URL in the URL's place); both with the shipped default's decision."""
    extractor = _extractor()
    where = split_of(root / dataset)
    ids, parts, labels, rows, bare = [], [], [], [], []
    for page in read_dataset(root / dataset):
        split = where.get(page.id)
        if split not in splits or page.meta.get("error"):
            continue
        try:
            doc = with_url(extractor.page_segmenter(page.html), page.url)
            row, bare_row = features_of(doc), features_of(doc, canonical_only=True)
            ex = extractor.extract_documents([doc])[0]
        except InputError:
            continue
        ids.append(page.id)
        parts.append(split)
        labels.append(str(page.meta.get("page_type") or ""))
        rows.append(kind_row(row, ex))
        bare.append(kind_row(bare_row, ex))
    width = len(KIND_FEATURES)
    return ids, parts, labels, np.asarray(rows).reshape(-1, width), np.asarray(bare).reshape(-1, width)


def cached_rows(cache: Path | None, root: Path, dataset: str, splits: Sequence[str]) -> Rows:
    """page_rows, kept in `cache` (an .npz per dataset, made again when the features changed): for trying settings."""
    path = cache / f"{dataset}.npz" if cache else None
    if path is not None and path.is_file():
        data = np.load(path, allow_pickle=False)
        if list(data["names"]) == list(KIND_FEATURES) and set(splits) <= set(data["splits"].tolist()):
            keep = np.isin(data["parts"], list(splits))
            return (data["ids"][keep].tolist(), data["parts"][keep].tolist(), data["labels"][keep].tolist(),
                    data["rows"][keep], data["bare"][keep])
    ids, parts, labels, rows, bare = page_rows(root, dataset, splits)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, ids=np.asarray(ids), parts=np.asarray(parts), labels=np.asarray(labels), rows=rows,
                 bare=bare, names=np.asarray(KIND_FEATURES), splits=np.asarray(list(splits)))
    return ids, parts, labels, rows, bare


def cost(root: Path, model: KindModel, n: int = 100) -> dict[str, float]:
    """Median CPU microseconds a page (the first `n` wcxb-dev test pages, one at a time) of the kind's features (the
    page's and its decision's) and of its trees' walk, beside the segmentation's (the default's) for scale: CPU time
    (time.process_time), which a shared machine's other work does not stretch as it does wall time; the segment
    memo of kind_features emptied first, as for pages of sites not seen before."""
    from bodyblocks.page import kind_features

    kind_features._segment.cache_clear()
    where = split_of(root / DATASET)
    seg, feat, walk = [], [], []
    for page in read_dataset(root / DATASET):
        if len(seg) >= n or where.get(page.id) != "test":
            continue
        t0 = time.process_time()
        doc = with_url(_extractor().page_segmenter(page.html), page.url)
        t1 = time.process_time()
        ex = _extractor().extract_documents([doc])[0]  # (not timed: the extraction the kind follows)
        t2 = time.process_time()
        row = kind_row(features_of(doc), ex)
        t3 = time.process_time()
        model.predict_rows(row)
        t4 = time.process_time()
        seg.append(t1 - t0)
        feat.append(t3 - t2)
        walk.append(t4 - t3)
    return {"pages": len(seg), "segment_us": float(np.median(seg) * 1e6), "features_us": float(np.median(feat) * 1e6),
            "trees_us": float(np.median(walk) * 1e6)}


def fit(x: np.ndarray, y: np.ndarray, settings: dict[str, Any], weight: np.ndarray | None = None) -> Any:
    """A HistGradientBoostingClassifier with these settings, fitted (no early stopping: max_iter is a setting);
    `weight`: each row's."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(early_stopping=False, min_samples_leaf=5, l2_regularization=1.0,
                                          random_state=SEED, **settings).fit(x, y, sample_weight=weight)


def training_set(x: np.ndarray, bare: np.ndarray, y: np.ndarray, news: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, labels, weights) to fit: each wcxb-dev page twice (with its URL, and with its canonical URL in its
    place: a caller that knows no URL), and the news sources' pages as articles, weighted NEWS_WEIGHT."""
    rows = np.concatenate((x, bare, news))
    labels = np.concatenate((y, y, np.full(len(news), "article")))
    return rows, labels, np.concatenate((np.ones(2 * len(x)), np.full(len(news), NEWS_WEIGHT)))


def flatten(clf: Any, metrics: dict[str, Any]) -> KindModel:
    """The fitted multi-class classifier as a KindModel (trees iteration-major, class-minor)."""
    classes = tuple(str(c) for c in clf.classes_)
    trees, depth = flatten_trees([tree.nodes for iteration in clf._predictors for tree in iteration])
    forest = GbtModel(GbtConfig(), trees, 0.0, depth)
    return KindModel(classes, forest, np.ravel(clf._baseline_prediction).astype(np.float64), metrics)


def choose(x: np.ndarray, y: np.ndarray, weight: np.ndarray, x_val: np.ndarray, y_val: np.ndarray
           ) -> tuple[dict[str, Any], float]:
    """The settings of GRID whose trees, fitted on (x, y), are the most accurate on the val pages (the first of
    equals: the grid's order puts the smaller models first); each iteration count of ITERS read from one fit's
    staged predictions."""
    best: tuple[dict[str, Any], float] | None = None
    for values in itertools.product(*GRID.values()):
        settings = dict(zip(GRID, values, strict=True))
        staged = fit(x, y, {**settings, "max_iter": max(ITERS)}, weight).staged_predict(x_val)
        for i, pred in enumerate(staged, 1):
            if i not in ITERS:
                continue
            acc = float(np.mean(pred == y_val))
            print(f"  val {acc:.3f}  {settings} max_iter={i}", file=sys.stderr)
            if best is None or acc > best[1]:
                best = ({**settings, "max_iter": i}, acc)
    assert best is not None
    return best


def confusion(y: Sequence[str], pred: Sequence[str], kinds: Sequence[str]) -> list[list[int]]:
    """rows: the gold kind, columns: the predicted one."""
    counts = Counter(zip(y, pred, strict=True))
    return [[counts[(g, p)] for p in kinds] for g in kinds]


def markdown(res: dict[str, Any], command: str) -> str:
    kinds = res["kinds"]
    lines = [
        "# Page kinds", "",
        f"Command: `{command}` (seconds: {res['seconds']:.0f}). Trees on page-level features "
        f"(page/kind_features.py), fitted on wcxb-dev's {res['train_pages']} train and val pages (and the news "
        f"sources' {res['news_train']} train and val pages as articles, weight {NEWS_WEIGHT}) with the settings "
        f"chosen on its val pages ({res['settings']}, val accuracy {res['val_accuracy']:.3f} of trees fitted on "
        "train alone), reported once on its test pages.", "",
        f"**Test accuracy: {res['test_accuracy']:.3f}** on {res['test_pages']} pages (all articles: "
        f"{res['majority']:.3f}); {res['test_accuracy_without_url']:.3f} where the page's URL is not known "
        "(its canonical URL, if it states one, in its place). Rows: the page's type; columns: the predicted kind, "
        "the page's URL known (a batch run, `extract(html, url=...)`).", "",
        "| gold \\ predicted | " + " | ".join(kinds) + " | recall |",
        "|---|" + "---:|" * (len(kinds) + 1),
    ]
    for kind, row in zip(kinds, res["confusion"], strict=True):
        recall = row[kinds.index(kind)] / sum(row) if sum(row) else float("nan")
        lines.append(f"| {kind} | " + " | ".join(str(v) for v in row) + f" | {recall:.2f} |")
    lines += ["", "Kinds given to the test pages of the news sources (every one an article):", "",
              "| source | pages | " + " | ".join(kinds) + " | article share |",
              "|---|---:|" + "---:|" * (len(kinds) + 1)]
    for source, counts in res["news"].items():
        n = sum(counts.values())
        lines.append(f"| {source} | {n} | " + " | ".join(str(counts.get(k, 0)) for k in kinds)
                     + f" | {counts.get('article', 0) / n if n else float('nan'):.3f} |")
    c = res["cost"]
    lines += ["", f"CPU time a page (median of {c['pages']} test pages, one at a time): "
              f"features {c['features_us']:.0f} us, trees {c['trees_us']:.0f} us, against "
              f"{c['segment_us'] / 1000:.1f} ms for the segmentation they follow."]
    return "\n".join(lines) + "\n"


ABLATION_SETTINGS = ({"learning_rate": 0.05, "max_leaf_nodes": 7, "max_iter": 200},
                     {"learning_rate": 0.05, "max_leaf_nodes": 15, "max_iter": 100},
                     {"learning_rate": 0.1, "max_leaf_nodes": 15, "max_iter": 100})


def ablation(x: np.ndarray, y: np.ndarray) -> str:
    """Cross-validated accuracy on these rows (train and val) without and with the decision's features."""
    from sklearn.model_selection import StratifiedKFold

    assert len(DECISION_FEATURES) == x.shape[1] - len(PAGE_FEATURES)
    lines = ["| settings (class_weight balanced) | page features | and the decision's |", "|---|---:|---:|"]
    for settings in ABLATION_SETTINGS:
        cells = []
        for width in (len(PAGE_FEATURES), x.shape[1]):
            hits = []
            for seed in (0, 1):
                for fit_rows, held in StratifiedKFold(5, shuffle=True, random_state=seed).split(x, y):
                    clf = fit(x[fit_rows, :width], y[fit_rows], {**settings, "class_weight": "balanced"})
                    hits.append(float(np.mean(clf.predict(x[held, :width]) == y[held])))
            cells.append(f"{np.mean(hits):.3f}")
        lines.append(f"| {settings} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, root=True, write=True)
    ap.add_argument("--out", type=Path, default=None, help="the model's folder (default: the shipped one)")
    ap.add_argument("--cache", type=Path, default=None, help="keep the pages' rows in this folder (.npz)")
    ap.add_argument("--ablation", action="store_true", help="only the decision features' cross-validated worth")
    args = ap.parse_args(argv)
    root = need_root(args.root, "page_kind")
    start = time.perf_counter()
    if args.ablation:
        _, _, labels, x, _ = cached_rows(args.cache, root, DATASET, ("train", "val"))
        print(f"{DATASET}: {len(labels)} train and val pages, 5-fold cross-validation, two shuffles\n")
        print(ablation(x, np.asarray(labels)))
        return 0
    _, parts, labels, x, bare = cached_rows(args.cache, root, DATASET, ("train", "val", "test"))
    split = np.asarray(parts)
    y = np.asarray(labels)
    train, val, test = split == "train", split == "val", split == "test"
    print(f"{DATASET}: {train.sum()} train, {val.sum()} val, {test.sum()} test pages", file=sys.stderr)
    news_rows = {source: cached_rows(args.cache, root, source, ("train", "val", "test")) for source in NEWS}
    news_train = np.concatenate([r[3][np.asarray(r[1]) != "test"] for r in news_rows.values()])
    print(f"news sources: {len(news_train)} train and val pages, articles", file=sys.stderr)
    settings, val_acc = choose(*training_set(x[train], bare[train], y[train], news_train), x[val], y[val])
    fitted = train | val
    rows, labels, weight = training_set(x[fitted], bare[fitted], y[fitted], news_train)
    clf = fit(rows, labels, settings, weight)
    model = flatten(clf, {"settings": settings, "val_accuracy": val_acc, "train_pages": int(fitted.sum())})
    pred = model.predict_rows(x[test])
    if pred != [str(p) for p in clf.predict(x[test])]:
        raise SystemExit("page_kind: the flattened trees disagree with scikit-learn's predictions")
    accuracy = float(np.mean(np.asarray(pred) == y[test]))
    bare_accuracy = float(np.mean(np.asarray(model.predict_rows(bare[test])) == y[test]))
    model.metrics |= {"test_accuracy": accuracy, "test_accuracy_without_url": bare_accuracy,
                      "test_pages": int(test.sum())}
    news = {}
    for source, (_, news_parts, _, news_x, _) in news_rows.items():
        rows = news_x[np.asarray(news_parts) == "test"]
        news[source] = dict(Counter(model.predict_rows(rows))) if len(rows) else {}
    speed = cost(root, model)
    model.save(args.out or shipped_folder(), extra={"data": DATASET, "trained_on": ["train", "val"]})
    kinds = [k for k in PAGE_KINDS if k in model.classes] + [k for k in model.classes if k not in PAGE_KINDS]
    res = {"kinds": kinds, "settings": settings, "news_train": len(news_train),
           "val_accuracy": val_acc, "train_pages": int(fitted.sum()),
           "test_pages": int(test.sum()), "test_accuracy": accuracy, "test_accuracy_without_url": bare_accuracy,
           "majority": float(np.mean(y[test] == "article")), "confusion": confusion(list(y[test]), pred, kinds),
           "news": news, "cost": speed, "seconds": time.perf_counter() - start}
    command = "python -m benchmarks.page_kind " + " ".join(argv if argv is not None else sys.argv[1:])
    text = markdown(res, command.strip())
    print(text)
    write_report(args.write, text, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
