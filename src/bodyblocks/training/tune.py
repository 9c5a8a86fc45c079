"""Tuning on the validation pages: the decision rule of every block extractor, and the ensemble's blend.

    tune_rule(val_pages, probs)          # (threshold, rescue, mean per-page F1): the rule that maximises it
    retune("checkpoints/gbt")            # re-tune a checkpoint folder of any kind, rewriting its config.json
    make_ensemble(model, gbt, out)       # write an ensemble folder, then tune its blend and rule together

Scores are character F1 of the kept blocks against the blocks' gold labels, averaged over pages (pages
count equally, as in the evaluation's per-page means). The rule is extraction/decision.py's.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bodyblocks.classify.blend import Blend
from bodyblocks.classify.trees import GbtModel
from bodyblocks.config import DataConfig, EnsembleConfig
from bodyblocks.extraction.decision import DecisionRule, inside_mask, keep_around, keep_mask, main_container
from bodyblocks.extraction.segmenting import vote_on_blocks
from bodyblocks.loading.checkpoints import ENSEMBLE, ENSEMBLE_FORMAT, GBT, kind_of, read_ensemble, read_meta
from bodyblocks.runtime.files import write_json
from bodyblocks.training.cache import CachedPage
from bodyblocks.training.data import dataset_folder, load_pages, recorded_data
from bodyblocks.training.datasets import page_from_record, read_records
from bodyblocks.types import Document


# ----------------------------------------------------------------------------------------- the rule
def pooled_char_f1(pages: Sequence[CachedPage], probs: Sequence[np.ndarray]) -> tuple[float, float]:
    """The P(body) threshold with the best character-weighted F1 of body blocks pooled over the pages, and that
    F1 (reported beside the per-page mean that the rule is tuned for)."""
    lab = np.concatenate([np.asarray(cp.labels) for cp in pages]) if pages else np.zeros(0)
    w = np.concatenate([np.array([b.text_len for b in cp.blocks], float) for cp in pages]) if pages else np.zeros(0)
    p = np.concatenate(probs) if probs else np.zeros(0)
    best = (0.5, 0.0)
    for t in np.arange(0.05, 0.96, 0.05):
        pred = p >= t
        tp = float((w * (pred & (lab == 1))).sum())
        prec = tp / max(float((w * pred).sum()), 1e-9)
        rec = tp / max(float((w * (lab == 1)).sum()), 1e-9)
        f1 = 2 * prec * rec / max(prec + rec, 1e-9)
        if f1 > best[1]:
            best = (round(float(t), 2), f1)
    return best


def page_f1(lab: np.ndarray, w: np.ndarray, keep: np.ndarray) -> float:
    """Character-weighted F1 of one page's kept blocks (a page with no body and nothing kept scores 1)."""
    tp = float(w[keep & (lab == 1)].sum())
    kept, body = float(w[keep].sum()), float(w[lab == 1].sum())
    if kept == 0 and body == 0:
        return 1.0
    return 2 * tp / max(kept + body, 1e-9)


def page_items(pages: Sequence[CachedPage], probs: Sequence[np.ndarray]) -> list[tuple[np.ndarray, ...]]:
    """(labels, block characters, P(body)) of each page that has blocks."""
    return [(np.asarray(cp.labels), np.array([b.text_len for b in cp.blocks], float), np.asarray(p))
            for cp, p in zip(pages, probs, strict=True) if len(p)]


MIN_RESCUE = 0.15  # the rescue threshold is never tuned below this (see tune_rule)


def tune_rule(pages: Sequence[CachedPage], probs: Sequence[np.ndarray]) -> tuple[float, float, float]:
    """The decision rule with the best mean per-page character F1 on validation: (threshold, rescue, score).

    Blocks with P(body) >= threshold are kept; on a page where none is, blocks with P(body) >= rescue are
    kept instead (rescue == threshold: no rescue). Pages count equally, as in the evaluation's per-page
    means, so a short article whose blocks all score just under the threshold is not traded away for a
    sliver of the long pages' characters. Every labelled page has a body, so validation cannot price
    answering a page that has none with navigation; rescue stays >= MIN_RESCUE so that a page whose
    blocks the model all but rules out still comes back empty and flagged.
    """
    grid = [round(float(t), 2) for t in np.arange(0.05, 0.96, 0.05)]
    items = page_items(pages, probs)
    if not items:
        return 0.5, 0.5, 0.0
    q = np.full(len(items), 1.0 / len(items))  # each page's share of the mean
    best = (0.5, 0.5, -1.0)
    for t in grid:
        kept_sum, empty = 0.0, []
        for (lab, w, p), qi in zip(items, q, strict=True):
            keep = p >= t
            if keep.any():
                kept_sum += qi * page_f1(lab, w, keep)
            else:
                empty.append((lab, w, p, qi))
        for r in [x for x in grid if MIN_RESCUE <= x <= t or x == t][::-1]:  # r == t first: only if it helps
            rescued = sum(qi * page_f1(lab, w, p >= r) for lab, w, p, qi in empty)
            score = kept_sum + rescued
            if score > best[2] + 1e-9:
                best = (t, r, score)
    return best


CONTAINER_SHARES = (0.6, 0.8, 0.95)  # the grid of decision step 3 (extraction/decision.py)
CONTAINER_INSIDE = (0.02, 0.05, 0.1, 0.2, 0.3)
CONTAINER_OUTSIDE = (0.6, 0.7, 0.8, 0.9, 0.97)


def tune_container(pages: Sequence[CachedPage], probs: Sequence[np.ndarray], threshold: float, rescue: float
                   ) -> tuple[tuple[float, float, float] | None, float]:
    """Decision step 3 for a tuned threshold and rescue: the (share, inside, outside) with the best mean
    per-page character F1 on validation, or None when no setting beats the rule without it. Returns it and
    the score it reaches."""
    scored = [cp for cp, p in zip(pages, probs, strict=True) if len(p)]  # the pages page_items keeps
    items = [(cp.blocks, *item) for cp, item in zip(scored, page_items(pages, probs), strict=True)]
    if not items:
        return None, 0.0
    q = np.full(len(items), 1.0 / len(items))  # each page's share of the mean
    base = [keep_mask(p, threshold, rescue) for _, _, _, p in items]
    best: tuple[tuple[float, float, float] | None, float] = (
        None, float(np.dot(q, [page_f1(lab, w, k) for (_, lab, w, _), k in zip(items, base, strict=True)])))
    insides = sorted({x for x in CONTAINER_INSIDE if x <= threshold} | {threshold})
    outsides = sorted({x for x in CONTAINER_OUTSIDE if x >= threshold} | {threshold})
    for share in CONTAINER_SHARES:
        masks = []
        for (blocks, _, _, _), k in zip(items, base, strict=True):
            main = main_container(blocks, k, share) if k.any() else None
            masks.append(None if main is None else inside_mask(blocks, main))
        for inside in insides:
            for outside in outsides:
                scores = []
                for (_, lab, w, p), k, ins in zip(items, base, masks, strict=True):
                    keep = k if ins is None else keep_around(k, p, ins, inside, outside)
                    scores.append(page_f1(lab, w, keep))
                score = float(np.dot(q, scores))
                if score > best[1] + 1e-9:
                    best = ((share, float(inside), float(outside)), score)
    return best


def tune_decision(pages: Sequence[CachedPage], probs: Sequence[np.ndarray]) -> dict[str, Any]:
    """The whole decision rule on validation: threshold and rescue (tune_rule), then step 3 (tune_container).
    Returns threshold, rescue, container (None: no step 3), confident and val_page_f1."""
    threshold, rescue, _ = tune_rule(pages, probs)
    container, score = tune_container(pages, probs, threshold, rescue)
    return {"threshold": threshold, "rescue": rescue, "container": list(container) if container else None,
            "confident": max(threshold, 0.5), "val_page_f1": score}


def decision_f1(pages: Sequence[CachedPage], probs: Sequence[np.ndarray], threshold: float, rescue: float | None,
                container: Sequence[float] | None, headline: bool = False) -> float:
    """Mean per-page character F1 of a whole decision rule, container step and headline included
    (DecisionRule.keep, with each page's title)."""
    rule = DecisionRule(threshold, threshold, rescue, tuple(container) if container else None,  # type: ignore[arg-type]
                        headline)
    scored = [cp for cp, p in zip(pages, probs, strict=True) if len(p)]  # the pages page_items keeps
    scores = [page_f1(lab, w, rule.keep(p, cp.blocks, cp.title))
              for cp, (lab, w, p) in zip(scored, page_items(pages, probs), strict=True)]
    return float(np.mean(scores)) if scores else 0.0


def rule_score(pages: Sequence[CachedPage], probs: Sequence[np.ndarray], threshold: float, rescue: float) -> float:
    """Mean per-page character F1 of one decision rule (decision.keep_mask, as the extractors apply it)."""
    scores = [page_f1(lab, w, keep_mask(p, threshold, rescue)) for lab, w, p in page_items(pages, probs)]
    return float(np.mean(scores)) if scores else 0.0


# ----------------------------------------------------------------------------------------- checkpoints
def model_probabilities(folder: str | Path, pages: Sequence[CachedPage]) -> list[np.ndarray]:
    """A model checkpoint's P(body) on cached pages (CPU; torch's thread setting left as it is)."""
    from bodyblocks.classify.model_scorer import ModelScorer  # torch: only when a model is tuned

    scorer = ModelScorer.load(folder, device="cpu")
    docs = [Document(cp.blocks) for cp in pages]
    return scorer.forward(docs, scorer.prepare(docs))


def gbt_probabilities(folder: str | Path, pages: Sequence[CachedPage]) -> list[np.ndarray]:
    """A gbt checkpoint's P(body) on cached pages."""
    gbt = GbtModel.load(folder)
    return [gbt.page_probabilities(cp.blocks) for cp in pages]


def validation_pages(data: DataConfig) -> list[CachedPage]:
    """The validation pages of `data`; ValueError when there are none."""
    val = load_pages(data)["val"]
    if not val:
        raise ValueError("no validation pages to tune on")
    return val


def retune(checkpoint: str | Path, data: DataConfig | None = None, grid: EnsembleConfig | None = None
           ) -> dict[str, Any]:
    """Re-tune a checkpoint's decision rule (threshold, rescue) on the validation pages; rewrites config.json.

    Works for a model and for a gbt folder (their config.json says which), so both always share the same
    rule; an ensemble folder gets its blend re-tuned with the rule (`tune_ensemble`, over `grid`).
    `data` picks the pages; None: the data config recorded in the checkpoint (else all).
    Returns the new rule with its per-page F1 on validation and the old rule's.
    """
    path = Path(checkpoint)
    kind = kind_of(path)
    if kind == ENSEMBLE:
        return tune_ensemble(path, data, grid)
    meta = read_meta(path)
    val = validation_pages(data or recorded_data(meta))
    probs = gbt_probabilities(path, val) if kind == GBT else model_probabilities(path, val)
    old_t = float(meta.get("threshold", 0.5))
    old_r = meta.get("rescue")
    old = rule_score(val, probs, old_t, old_t if old_r is None else float(old_r))
    rule = tune_decision(val, probs)
    score = rule.pop("val_page_f1")
    meta.update(rule)
    meta.setdefault("metrics", {}).update(val_page_f1=score, **rule)
    write_json(path / "config.json", meta)
    return {**rule, "val_page_f1": score, "val_pages": len(val),
            "before": {"threshold": old_t, "rescue": old_r, "val_page_f1": old}}


# ----------------------------------------------------------------------------------------- the ensemble
def blend_scores(val: Sequence[CachedPage], p_model: Sequence[np.ndarray], p_gbt: Sequence[np.ndarray],
                 votes: Sequence[np.ndarray], grid: EnsembleConfig | None = None
                 ) -> dict[tuple[float, float], tuple[float, float, float]]:
    """(threshold, rescue, per-page F1) of the best rule for every blend (w, h) of the grid with w + h <= 1
    (tune_rule on the validation pages `val`)."""
    grid = grid or EnsembleConfig()
    return {(w, h): tune_rule(val, Blend(w, h)(p_model, p_gbt, votes))
            for h in grid.vote_weights for w in grid.weights if w + h <= 1.0 + 1e-9}


def best_weights(scores: dict[tuple[float, float], tuple[float, float, float]]) -> tuple[float, float]:
    """The (w, h) of blend_scores with the best F1; ties go to the smaller h, then to the more even blend."""
    return max(scores, key=lambda k: (scores[k][2], -k[1], -abs(k[0] - 0.5)))


def validation_html(val: Sequence[CachedPage], data: DataConfig) -> dict[tuple[str, str], bytes | str]:
    """The HTML of the given cached pages (the validation pages, when tuning), by (dataset, id), read from
    their dataset folders."""
    wanted = {(cp.dataset, cp.id) for cp in val}
    html: dict[tuple[str, str], bytes | str] = {}
    for name in sorted({cp.dataset for cp in val}):  # cached datasets have pages.jsonl (cache.load_cached)
        folder = dataset_folder(data, name)
        html.update(((name, rec["id"]), page_from_record(folder, rec).html)  # only these pages' files are read
                    for rec in read_records(folder) if (name, rec["id"]) in wanted)
    missing = wanted - html.keys()
    if missing:
        raise ValueError(f"{len(missing)} pages have no HTML in their dataset folders")
    return html


def validation_votes(val: Sequence[CachedPage], data: DataConfig) -> list[np.ndarray]:
    """The heuristic's vote on every validation page, from its HTML (as the extractor makes it)."""
    html = validation_html(val, data)
    return [vote_on_blocks(f"{cp.dataset}/{cp.id}", [b.text for b in cp.blocks], html[(cp.dataset, cp.id)])
            for cp in val]


def choose_blend(val: Sequence[CachedPage], p_model: Sequence[np.ndarray], p_gbt: Sequence[np.ndarray],
                 votes: Sequence[np.ndarray], grid: EnsembleConfig | None = None) -> dict[str, Any]:
    """The blend (best_weights over blend_scores) and its whole decision rule, container step included:
    weight, heuristic, threshold, rescue, container, confident, with val_page_f1, without_container (the
    score before the container step) and every blend's `scores`."""
    scores = blend_scores(val, p_model, p_gbt, votes, grid)
    weight, heuristic = best_weights(scores)
    threshold, rescue, plain = scores[(weight, heuristic)]
    container, score = tune_container(val, Blend(weight, heuristic)(p_model, p_gbt, votes), threshold, rescue)
    return {"weight": weight, "heuristic": heuristic, "threshold": threshold, "rescue": rescue,
            "container": list(container) if container else None, "confident": max(threshold, 0.5),
            "val_page_f1": score, "without_container": plain, "scores": scores}


def write_ensemble_folder(folder: str | Path, model: str | Path, gbt: str | Path, settings: dict[str, Any]) -> Path:
    """An ensemble folder's config.json: its parts as paths relative to it, and the blend and rule `settings`."""
    path = Path(folder)
    path.mkdir(parents=True, exist_ok=True)
    write_json(path / "config.json", {
        "format_version": ENSEMBLE_FORMAT, "kind": ENSEMBLE,
        "model": os.path.relpath(Path(model).resolve(), path.resolve()),
        "gbt": os.path.relpath(Path(gbt).resolve(), path.resolve()), **settings})
    return path


def tune_ensemble(folder: str | Path, data: DataConfig | None = None, grid: EnsembleConfig | None = None
                  ) -> dict[str, Any]:
    """Choose the blend and the decision rule on the validation pages; rewrites FOLDER/config.json.

    `data` picks the pages; None: the data config recorded in the model checkpoint (else all datasets).
    Every (w, h) of blend_scores is scored; best_weights picks one (ties: the smaller h, then the more
    even blend of the learners). Returns the chosen settings with the validation per-page F1 of the
    ensemble, of the best blend without the vote, and of each part alone.
    """
    path = Path(folder)
    meta = read_ensemble(path)
    data = data or recorded_data(read_meta(meta["model_path"]))
    grid = grid or EnsembleConfig()
    val = validation_pages(data)
    p_model, p_gbt = model_probabilities(meta["model_path"], val), gbt_probabilities(meta["gbt_path"], val)
    votes = validation_votes(val, data)
    chosen = choose_blend(val, p_model, p_gbt, votes, grid)
    scores, score, score_plain = chosen.pop("scores"), chosen.pop("val_page_f1"), chosen.pop("without_container")
    weight, heuristic, threshold, rescue = chosen["weight"], chosen["heuristic"], chosen["threshold"], chosen["rescue"]
    meta.update(chosen)
    no_vote = max((w for w, h in scores if h == 0.0), key=lambda w: (scores[(w, 0.0)][2], -abs(w - 0.5)))
    t0, r0, _ = scores[(no_vote, 0.0)]
    container0, score0 = tune_container(val, Blend(no_vote, 0.0)(p_model, p_gbt, votes), t0, r0)
    meta["without_vote"] = {"weight": no_vote, "threshold": t0, "rescue": r0,
                            "container": list(container0) if container0 else None, "confident": max(t0, 0.5)}
    meta["metrics"] = {"val_page_f1": score, "val_page_f1_without_container": score_plain, "val_pages": len(val),
                       "model_alone": tune_rule(val, p_model)[2],
                       "gbt_alone": tune_rule(val, p_gbt)[2],
                       "without_vote": {"weight": no_vote, "val_page_f1": score0},
                       "vote_alone": tune_rule(val, votes)[2],
                       "by_weight": {f"{w}/{h}": s[2] for (w, h), s in scores.items()}}
    for key in ("model_path", "gbt_path"):
        del meta[key]
    write_json(path / "config.json", meta)
    return {"weight": weight, "heuristic": heuristic, "threshold": threshold, "rescue": rescue,
            "container": meta["container"], **meta["metrics"]}


def make_ensemble(model: str | Path, gbt: str | Path, out: str | Path, data: DataConfig | None = None,
                  grid: EnsembleConfig | None = None) -> dict[str, Any]:
    """Write an ensemble folder OUT pointing at the MODEL and GBT checkpoints, then tune it."""
    for part, name in ((Path(model), "model"), (Path(gbt), "gbt")):
        if not (part / "model.safetensors").exists():
            raise FileNotFoundError(f"{part}: no {name} checkpoint (model.safetensors) there")
    folder = write_ensemble_folder(out, model, gbt, {"weight": 0.5, "heuristic": 0.0, "threshold": 0.5,
                                                     "rescue": None, "confident": 0.5})
    return tune_ensemble(folder, data, grid)
