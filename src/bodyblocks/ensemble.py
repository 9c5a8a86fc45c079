"""The block Transformer, the boosted trees and the heuristic's vote together, per block:

    P(body) = w * P_model + h * vote_heuristic + (1 - w - h) * P_gbt

    make_ensemble("checkpoints/default", "checkpoints/gbt", "checkpoints/ensemble")  # tunes w, h and the rule
    EnsembleExtractor().extract(html)                                                # as ModelExtractor

The two learners see the same blocks differently: the Transformer reads the block text (hashed n-grams)
and the whole page's sequence; the trees read the DOM statistics of a block and of its two neighbours.
The `heuristic` extractor (baselines/heuristic.py) reads neither: it picks the one container with the
most text and paragraphs and the fewest links, which is right on kinds of page the learners saw few of
(product grids, documentation); its vote is 1 for a block whose text is in the heuristic's answer.
Their errors differ, so their blend is better than any one of them (docs/EVALUATION.md has the figures).

The vote needs the page's HTML, so a page is segmented by `EnsembleExtractor.page_segmenter`
(`segment_with_vote`: the blocks, plus the vote in Document.extra); with h = 0 that is the plain segmenter
and the heuristic never runs.

The folder holds config.json only: the two parts as paths relative to it, the weights w and h (`weight`,
`heuristic`; folders from before the vote have no `heuristic`: 0) and the decision rule (threshold,
rescue, confident: the same rule as predict.decide_blocks), all tuned together on the validation pages for
the best mean per-page character F1 (`bodyblocks tune FOLDER` re-tunes).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bodyblocks.config import DataConfig
from bodyblocks.errors import InputError
from bodyblocks.predict import ModelExtractor, Prepared, decision_rule
from bodyblocks.segment import segment_tree
from bodyblocks.types import Block, Document, Extraction

KIND = "ensemble"
FORMAT_VERSION = 1
REPO_ENSEMBLE = Path(__file__).resolve().parents[2] / "checkpoints" / "ensemble"
WEIGHTS = tuple(round(0.1 * i, 1) for i in range(11))  # w of the model; 0 is the trees alone, 1 the model alone
HEURISTIC_WEIGHTS = (0.0, 0.1, 0.2, 0.3)  # h of the heuristic's vote (w + h <= 1; the trees get the rest)
VOTE = "heuristic"  # the vote's key in Document.extra
VOTE_SEARCH_LIMIT = 200_000_000  # blocks x answer characters searched at most; past it, whole lines only
_WS = re.compile(r"\s+")


def read_ensemble(folder: str | Path) -> dict[str, Any]:
    """config.json of an ensemble folder, with `model_path` and `gbt_path` resolved against the folder."""
    path = Path(folder)
    meta = json.loads((path / "config.json").read_text(encoding="utf-8"))
    if meta.get("kind") != KIND or meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path}: not an ensemble folder of format {FORMAT_VERSION}")
    meta["model_path"], meta["gbt_path"] = path / meta["model"], path / meta["gbt"]
    return meta


def shipped_ensemble() -> Path | None:
    """checkpoints/ensemble beside the source tree, when it and both of its parts are there."""
    try:
        meta = read_ensemble(REPO_ENSEMBLE)
    except (OSError, ValueError, KeyError):
        return None
    parts = (meta["model_path"] / "model.safetensors", meta["gbt_path"] / "model.safetensors")
    return REPO_ENSEMBLE if all(p.exists() for p in parts) else None


def blend(model: Sequence[np.ndarray], gbt: Sequence[np.ndarray], weight: float,
          vote: Sequence[np.ndarray] | None = None, heuristic: float = 0.0) -> list[np.ndarray]:
    """Per page, weight * model + heuristic * vote + (1 - weight - heuristic) * gbt (float32)."""
    rest = 1.0 - weight - heuristic
    if vote is None or not heuristic:
        return [(weight * a + rest * b).astype(np.float32) for a, b in zip(model, gbt, strict=True)]
    return [(weight * a + heuristic * v + rest * b).astype(np.float32)
            for a, b, v in zip(model, gbt, vote, strict=True)]


# ----------------------------------------------------------------------------------------- the vote
def heuristic_vote(blocks: Sequence[Block], answer: str) -> np.ndarray:
    """Per block, 1.0 when its text (white space removed) occurs in the heuristic's answer, else 0.0.

    Substrings, not whole lines: the heuristic drops lines under 10 characters and our blocks need not
    break where its lines do, so a price or a short heading inside its container still counts. A page
    whose blocks x answer characters exceed VOTE_SEARCH_LIMIT is matched by whole lines only (bounded time).
    """
    flat = _WS.sub("", answer)
    out = np.zeros(len(blocks), np.float32)
    if not flat:
        return out
    lines = None if len(blocks) * len(flat) <= VOTE_SEARCH_LIMIT else {_WS.sub("", x) for x in answer.splitlines()}
    for i, b in enumerate(blocks):
        text = _WS.sub("", b.text)
        if text and (text in flat if lines is None else text in lines):
            out[i] = 1.0
    return out


def add_vote(doc: Document, html: str | bytes, tree: Any = None) -> Document:
    """Store the heuristic's vote on the page's blocks in doc.extra (a page it finds no body in: all 0).

    `tree`: the lxml root the segmenter parsed the page into (segment_tree), which the heuristic then
    prunes instead of decoding and parsing the page a second time; None: it parses `html` itself.
    """
    from bodyblocks.baselines.heuristic import body_text, heuristic_text

    answer = None
    if tree is not None:
        try:
            answer = body_text(tree)
        except ValueError:  # lxml will not move text holding a control character that the segmenter's
            pass  # parse kept; the heuristic's own parse strips them
    if answer is None:
        try:
            answer = heuristic_text(html)
        except InputError:  # e.g. markup that libxml2 makes nothing of: the heuristic has no answer
            answer = ""
    doc.extra[VOTE] = heuristic_vote(doc.blocks, answer)
    return doc


def segment_with_vote(html: str | bytes) -> Document:
    """segment.segment, plus the heuristic's vote on the same parsed tree (the ensemble's page_segmenter;
    the batch runner's workers call it)."""
    doc, tree = segment_tree(html)
    return add_vote(doc, html, tree)


def _vote_of(key: str, texts: Sequence[str], html: bytes | str) -> np.ndarray:
    """The vote on a cached page's blocks (their `texts`), made as segment_with_vote makes it for a page
    being extracted; `key` names the page in the error raised when the cache's blocks are not the segmenter's."""
    doc = segment_with_vote(html)
    if [b.text for b in doc.blocks] != list(texts):
        raise ValueError(f"{key}: the cache's blocks are not the segmenter's (rebuild the cache)")
    return doc.extra[VOTE]


def blend_scores(val: Sequence[Any], p_model: Sequence[np.ndarray], p_gbt: Sequence[np.ndarray],
                 votes: Sequence[np.ndarray]) -> dict[tuple[float, float], tuple[float, float, float]]:
    """(threshold, rescue, per-page F1) of the best rule for every blend (w, h): w in WEIGHTS, h in
    HEURISTIC_WEIGHTS, w + h <= 1 (train.tune_decision on the validation pages `val`)."""
    from bodyblocks.train import tune_decision

    return {(w, h): tune_decision(val, blend(p_model, p_gbt, w, votes, h))
            for h in HEURISTIC_WEIGHTS for w in WEIGHTS if w + h <= 1.0 + 1e-9}


def best_weights(scores: dict[tuple[float, float], tuple[float, float, float]]) -> tuple[float, float]:
    """The (w, h) of blend_scores with the best F1; ties go to the smaller h, then to the more even blend."""
    return max(scores, key=lambda k: (scores[k][2], -k[1], -abs(k[0] - 0.5)))


def _val_html(val: Sequence[Any], data: DataConfig) -> dict[tuple[str, str], bytes | str]:
    """The HTML of the given cached pages (the validation pages, when tuning), by (dataset, id), read from
    their dataset folders."""
    from bodyblocks.datasets import page_from_record, read_records, resolve_dataset

    wanted = {(cp.dataset, cp.id) for cp in val}
    html: dict[tuple[str, str], bytes | str] = {}
    for name in sorted({cp.dataset for cp in val}):  # cached datasets have pages.jsonl (cache.load_cached)
        folder = resolve_dataset(Path(data.root) / name if data.root else name)
        html.update(((name, rec["id"]), page_from_record(folder, rec).html)  # only these pages' files are read
                    for rec in read_records(folder) if (name, rec["id"]) in wanted)
    missing = wanted - html.keys()
    if missing:
        raise ValueError(f"{len(missing)} pages have no HTML in their dataset folders")
    return html


def tune_ensemble(folder: str | Path, data: DataConfig | None = None) -> dict[str, Any]:
    """Choose the weights and the decision rule on the validation pages; rewrites FOLDER/config.json.

    `data` picks the pages; None: the data config recorded in the model checkpoint (else all datasets).
    Every (w, h) of blend_scores is scored; best_weights picks one (ties: the smaller h, then the more
    even blend of the learners). Returns the chosen settings with the
    validation per-page F1 of the ensemble, of the best blend without the vote, and of each part alone.
    """
    from bodyblocks.gbt import GbtModel
    from bodyblocks.model import read_checkpoint
    from bodyblocks.train import load_pages, recorded_data, tune_decision

    path = Path(folder)
    meta = read_ensemble(path)
    if data is None:
        data = recorded_data(read_checkpoint(meta["model_path"]))
    val = load_pages(data)["val"]
    if not val:
        raise ValueError("no validation pages to tune on")
    docs = [Document(cp.blocks) for cp in val]
    p_model = ModelExtractor(meta["model_path"], device="cpu", threads=None).probabilities(docs)
    gbt = GbtModel.load(meta["gbt_path"])
    p_gbt = [gbt.page_probabilities(cp.blocks) for cp in val]
    html = _val_html(val, data)
    votes = [_vote_of(f"{cp.dataset}/{cp.id}", [b.text for b in cp.blocks], html[(cp.dataset, cp.id)])
             for cp in val]
    scores = blend_scores(val, p_model, p_gbt, votes)
    weight, heuristic = best_weights(scores)
    threshold, rescue, score = scores[(weight, heuristic)]
    meta.update(weight=weight, heuristic=heuristic, threshold=threshold, rescue=rescue,
                confident=max(threshold, 0.5))
    no_vote = max(WEIGHTS, key=lambda w: (scores[(w, 0.0)][2], -abs(w - 0.5)))
    t0, r0, score0 = scores[(no_vote, 0.0)]
    meta["without_vote"] = {"weight": no_vote, "threshold": t0, "rescue": r0, "confident": max(t0, 0.5)}
    meta["metrics"] = {"val_page_f1": score, "val_pages": len(val), "model_alone": scores[(1.0, 0.0)][2],
                       "gbt_alone": scores[(0.0, 0.0)][2],
                       "without_vote": {"weight": no_vote, "val_page_f1": score0},
                       "vote_alone": tune_decision(val, votes)[2],
                       "by_weight": {f"{w}/{h}": s[2] for (w, h), s in scores.items()}}
    for key in ("model_path", "gbt_path"):
        del meta[key]
    tmp = path / "config.json.tmp"
    tmp.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path / "config.json")
    return {"weight": weight, "heuristic": heuristic, "threshold": threshold, "rescue": rescue, **meta["metrics"]}


def make_ensemble(model: str | Path, gbt: str | Path, out: str | Path,
                  data: DataConfig | None = None) -> dict[str, Any]:
    """Write an ensemble folder OUT pointing at the MODEL and GBT checkpoints, then tune it."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    for part, name in ((Path(model), "model"), (Path(gbt), "gbt")):
        if not (part / "model.safetensors").exists():
            raise FileNotFoundError(f"{part}: no {name} checkpoint (model.safetensors) there")
    meta = {"format_version": FORMAT_VERSION, "kind": KIND,
            "model": os.path.relpath(Path(model).resolve(), folder.resolve()),
            "gbt": os.path.relpath(Path(gbt).resolve(), folder.resolve()),
            "weight": 0.5, "heuristic": 0.0, "threshold": 0.5, "rescue": None, "confident": 0.5}
    (folder / "config.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return tune_ensemble(folder, data)


class EnsembleExtractor(ModelExtractor):
    """ModelExtractor whose P(body) is blended with the boosted trees' and the heuristic's vote (same API,
    rule and options). Pages must come from `page_segmenter` when the vote has a weight; `extract` and the
    batch runner see to that, and `extract_documents` adds the vote from `sources` to pages without it."""

    name = "ensemble"

    def __init__(self, checkpoint: str | Path | None = None, *, vote: bool = True, threshold: float | None = None,
                 confident: float | None = None, rescue: float | None = None, **opts: Any) -> None:
        """
        Args:
            checkpoint: an ensemble folder; None: the shipped checkpoints/ensemble.
            vote: False leaves the heuristic's vote out (the heuristic costs about as much time as the
                segmenter): the model and the trees blended with the weight and rule tuned without it.
            threshold, confident, rescue: as ModelExtractor, defaulting to the ensemble's tuned values.
            opts: the rest of ModelExtractor's options (device, fallback, batch_size, threads).
        """
        from bodyblocks.gbt import GbtModel

        folder = Path(checkpoint) if checkpoint else shipped_ensemble()
        if folder is None:
            raise FileNotFoundError("no shipped ensemble in checkpoints/ensemble; pass checkpoint= or make one")
        meta = read_ensemble(folder)
        if not vote and meta.get("heuristic"):
            if "without_vote" not in meta:
                raise ValueError(f"{folder}: no settings without the vote (re-tune with `bodyblocks tune`)")
            meta.update(meta["without_vote"], heuristic=0.0)
        super().__init__(meta["model_path"], threshold=threshold, confident=confident, rescue=rescue, **opts)
        self.gbt = GbtModel.load(meta["gbt_path"])
        self.gbt.prepare_walk()
        self.weight = float(meta["weight"])
        self.heuristic = float(meta.get("heuristic", 0.0))
        if not (0.0 <= self.heuristic and 0.0 <= self.weight and self.weight + self.heuristic <= 1.0 + 1e-9):
            raise ValueError(f"{folder}: weights must be >= 0 with weight + heuristic <= 1")
        if self.heuristic:
            self.page_segmenter: Callable[[str | bytes], Document] = segment_with_vote
        self.threshold, self.confident, self.rescue = decision_rule(
            meta["threshold"], meta.get("confident"), meta.get("rescue"), threshold, confident, rescue)

    def extract_documents(self, docs: Sequence[Document],
                          sources: Sequence[Callable[[], str | bytes]] | None = None) -> list[Extraction]:
        """As ModelExtractor's; a page segmented without the heuristic's vote gets it from its source."""
        if self.heuristic and sources is not None:
            for doc, source in zip(docs, sources, strict=True):
                if VOTE not in doc.extra:
                    add_vote(doc, source())
        return super().extract_documents(docs, sources)

    def prepare(self, docs: Sequence[Document]) -> Prepared:
        """The model's inputs, and the trees' P(body) of every page: the trees start from the same block
        features and tag-path ids (gbt.gbt_features), so those are computed once."""
        if self.heuristic:
            lacking = [i for i, d in enumerate(docs) if d.blocks and VOTE not in d.extra]
            if lacking:
                raise ValueError(f"{len(lacking)} pages lack the heuristic's vote: segment them with "
                                 "EnsembleExtractor.page_segmenter (or pass sources= to extract_documents)")
        prepared = super().prepare(docs)
        tags_of = self.cfg.tag_buckets if self.cfg.use_tag_path else None
        order, inputs = [], []
        for idx, pages in prepared.batches:
            for i, page in zip(idx, pages or [None] * len(idx), strict=True):
                base = tags = None
                if page is not None:
                    base = page.features
                    tags = (page.tag_ids, page.tag_offsets, tags_of) if tags_of else None
                order.append(i)
                inputs.append((docs[i].blocks, base, tags))
        for i, p in zip(order, self.gbt.pages_probabilities(inputs), strict=True):  # all pages' trees at once
            prepared.extra[i] = p
        return prepared

    def combine(self, prepared: Prepared, probs: list[np.ndarray]) -> list[np.ndarray]:
        """w * model + h * vote + (1 - w - h) * trees, per block."""
        empty = np.zeros(0, np.float32)
        gbt = [prepared.extra.get(i, empty) for i in range(len(probs))]
        votes = None
        if self.heuristic:
            votes = [d.extra.get(VOTE, empty) if len(p) else empty for d, p in zip(prepared.docs, probs, strict=True)]
        return blend(probs, gbt, self.weight, votes, self.heuristic)
