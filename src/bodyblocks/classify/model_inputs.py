"""A page's inputs to the block classifier, as NumPy arrays: the same code for training, torch and ONNX Runtime.

    page = prepare_page(doc.blocks, cfg)                   # features, tag-path ids, hashed n-grams
    starts = window_starts(len(doc.blocks), cfg.window, cfg.stride)

No torch here: the extraction-only install (ONNX Runtime, classify/onnx_model.py) imports this module alone.
"""

from __future__ import annotations

import operator
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from bodyblocks.config import ModelConfig
from bodyblocks.page.features import TAIL, block_features, group_features, ngram_bags, segment_tokens
from bodyblocks.types import Block, Document

KIND = "model"  # config.json "kind" of a model checkpoint folder
FORMAT_VERSION = 1  # of the checkpoint folder (config.json + model.safetensors); bump on layout changes
EXPORTS = ("embed.onnx", "context.onnx")  # ONNX Runtime files made from a model folder's weights (onnx_model.py)
IGNORE = -100  # label of blocks left out of the loss
# rows of `window` blocks per Transformer call (windows x pages): a page of 200,000 blocks once attended in one
# call of 500 windows (4.75 GB); 32 rows take ~140 MB of attention, and pages under ~12,000 blocks one call
MAX_WINDOW_ROWS = 32


@dataclass
class PageInputs:
    """One page's model inputs as NumPy arrays (n blocks)."""

    features: np.ndarray  # (n, F) float32
    tag_ids: np.ndarray  # (m,) int64 tag-path token ids of all blocks
    tag_offsets: np.ndarray  # (n,) int64 start of each block's ids
    text_vectors: np.ndarray | None = None  # (n, D) float32 from a frozen encoder
    text_ids: np.ndarray | None = None  # hashed n-gram ids (hash encoder)
    text_offsets: np.ndarray | None = None  # (n,) int64
    labels: np.ndarray | None = None  # (n,) int64: 1 body, 0 not, IGNORE left out

    @property
    def n(self) -> int:
        """Number of blocks."""
        return len(self.features)


def prepare_page(
    blocks: Sequence[Block],
    cfg: ModelConfig,
    text_vectors: np.ndarray | None = None,
    labels: Sequence[int] | np.ndarray | None = None,
) -> PageInputs:
    """Model inputs of one page; frozen encoders need `text_vectors` (n, cfg.encoder.dim)."""
    n = len(blocks)
    if cfg.use_tag_path:
        tag_ids, tag_offsets = tag_bags(blocks, cfg.tag_buckets)
    else:
        tag_ids, tag_offsets = np.zeros(0, np.int64), np.zeros(n, np.int64)
    features = block_features(blocks)
    if cfg.groups:
        features = np.concatenate([features, group_features(blocks).astype(np.float32)], axis=1)
    page = PageInputs(features, tag_ids, tag_offsets)
    if cfg.use_text and cfg.encoder.frozen:
        if text_vectors is None or text_vectors.shape != (n, cfg.encoder.dim):
            got = None if text_vectors is None else text_vectors.shape
            raise ValueError(
                f"{cfg.encoder.kind} encoder: need text_vectors of shape {(n, cfg.encoder.dim)}, got {got}"
            )
        page.text_vectors = np.asarray(text_vectors, dtype=np.float32)
    elif cfg.use_text:
        page.text_ids, page.text_offsets = ngram_bags(
            [b.text for b in blocks], cfg.encoder.buckets, cfg.encoder.max_chars
        )
    if labels is not None:
        page.labels = np.asarray(labels, dtype=np.int64)
        if page.labels.shape != (n,):
            raise ValueError(f"labels: expected {n} values, got {page.labels.shape}")
    return page


_TAG_PATH = operator.attrgetter("tag_path")


def path_parts(tag_path: str, memos: Sequence[dict[str, tuple[int, ...]]],
               make: Callable[[str, int], tuple[int, ...]]) -> list[tuple[int, ...]]:
    """A tag path's token values, a tuple per part in features.tag_path_tokens's order: each segment's own tokens'
    (memos[0]), then each segment of its tail, innermost first, its "k:" tokens' (memos[k]); a segment not in its
    memo is made by make(segment, k) (which memoises it). TagIds (token ids) and the trees' vocabulary (columns)
    read paths this way."""
    segments = tag_path.split("/")
    if "" in segments or "..." in segments:  # (features._path_segments)
        segments = [s for s in segments if s and s != "..."]
    parts = list(map(memos[0].get, segments))
    if None in parts:
        parts = [make(s, 0) if found is None else found for s, found in zip(segments, parts, strict=True)]
    for k, segment in enumerate(reversed(segments[-TAIL:]), start=1):  # the tail, innermost first
        found = memos[k].get(segment)
        parts.append(make(segment, k) if found is None else found)
    return parts


class TagIds:
    """features.tag_bags's ids (the CRC-32 of each of features.tag_path_tokens(path) modulo `buckets`), made from
    memos of each path's, each path segment's and each token's ids: a page's new paths are mostly made of segments,
    and its new segments of tokens, seen before (on the page or its site).

    Each memo holds at most MAX entries (emptied when full), so that a run over ever new sites stays flat in memory.
    """

    MAX = 8192

    def __init__(self, buckets: int) -> None:
        self.buckets = buckets
        # per distance from the path's end k (0: any segment, unprefixed; k: the tail's "k:" tokens)
        self.tokens: list[dict[str, int]] = [{} for _ in range(TAIL + 1)]
        self.segments: list[dict[str, tuple[int, ...]]] = [{} for _ in range(TAIL + 1)]
        self.paths: dict[str, np.ndarray] = {}  # a site repeats its paths
        self.prefixes = [zlib.crc32(f"{k}:".encode()) if k else 0 for k in range(TAIL + 1)]  # "k:"'s CRC-32

    def segment(self, segment: str, k: int) -> tuple[int, ...]:
        """The ids of one segment's tokens, prefixed "k:" when k > 0 (as features._segment_ids)."""
        memo = self.segments[k]
        ids = memo.get(segment)
        if ids is None:
            tokens, start, buckets = self.tokens[k], self.prefixes[k], self.buckets
            found = []
            for token in segment_tokens(segment):
                i = tokens.get(token)
                if i is None:  # the prefix's CRC-32 continued over the token's bytes: the prefixed token's
                    if len(tokens) >= self.MAX:
                        tokens.clear()
                    i = tokens[token] = zlib.crc32(token.encode("utf-8", "surrogatepass"), start) % buckets
                found.append(i)
            if len(memo) >= self.MAX:
                memo.clear()
            ids = memo[segment] = tuple(found)
        return ids

    def path_ids(self, tag_path: str) -> np.ndarray:
        """The ids of one tag path's tokens, in features.tag_path_tokens's order (int64)."""
        return np.fromiter(chain.from_iterable(path_parts(tag_path, self.segments, self.segment)), np.int64)

    def bags(self, blocks: Sequence[Block]) -> tuple[np.ndarray, np.ndarray]:
        """features.tag_bags(blocks, self.buckets): (ids (m,), offsets (n,)) int64, each distinct path made once."""
        n = len(blocks)
        if not n:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        made = self.paths
        parts = []
        for path in map(_TAG_PATH, blocks):
            ids = made.get(path)
            if ids is None:
                if len(made) >= self.MAX:
                    made.clear()
                ids = made[path] = self.path_ids(path)
            parts.append(ids)
        lengths = np.fromiter(map(len, parts), np.int64, n)
        return np.concatenate(parts), np.cumsum(lengths) - lengths


_TAG_IDS: dict[int, TagIds] = {}  # by bucket count


def tag_bags(blocks: Sequence[Block], buckets: int) -> tuple[np.ndarray, np.ndarray]:
    """Tag-path token ids of every block as EmbeddingBag input: (ids (m,), offsets (n,)) int64, the arrays of
    features.tag_bags (TagIds)."""
    made = _TAG_IDS.get(buckets)
    if made is None:
        made = _TAG_IDS[buckets] = TagIds(buckets)
    return made.bags(blocks)


def window_starts(length: int, window: int, stride: int) -> list[int]:
    """First block of each window: every `stride`, the last one flush with the end."""
    if length <= window:
        return [0]
    return list(range(0, length - window, stride)) + [length - window]


@dataclass
class ModelBatch:
    """One forward pass: its pages (indices into the docs), their inputs and the collated batch (a torch
    PageBatch, or None: with a frozen encoder, whose vectors come from the model's device, and for ONNX Runtime,
    which takes the pages' inputs one by one)."""

    pages: list[int]
    inputs: list[PageInputs] | None
    collated: Any = None


class PageScorer:
    """What the torch and the ONNX Runtime scorers share: the batches of pages and their inputs (`cfg` and
    `batch_size` are set by the subclass)."""

    cfg: ModelConfig
    batch_size: int
    encoder: Any = None  # a frozen text encoder (torch only)

    def batches(self, docs: Sequence[Document]) -> list[list[int]]:
        """Indices of the pages with blocks, by block count, up to batch_size per forward pass.

        A page longer than the model's window runs alone: a batch's windows follow its longest page, and a
        page's probabilities must not depend on the pages it happens to share a batch with.
        """
        order = sorted((i for i, d in enumerate(docs) if d.blocks), key=lambda i: len(docs[i].blocks))
        short = order  # without the Transformer there are no windows: any pages batch together
        if self.cfg.use_context:  # sorted by length: the pages longer than the window are the rest
            short = [i for i in order if len(docs[i].blocks) <= self.cfg.window]
        size = self.batch_size
        return [short[k : k + size] for k in range(0, len(short), size)] + [[i] for i in order[len(short) :]]

    def inputs(self, doc: Document) -> PageInputs:
        """One page's model inputs (a frozen encoder's vectors included)."""
        vectors = self.encoder.encode([b.text for b in doc.blocks]) if self.encoder is not None else None
        return prepare_page(doc.blocks, self.cfg, text_vectors=vectors)

    def batches_from(self, docs: Sequence[Document], inputs: Sequence[PageInputs | None]) -> list[ModelBatch]:
        """forward's batches of pages whose inputs were made elsewhere (the Ray pipeline's CPU stage); a page
        given None is prepared here. The torch scorer collates them too."""
        return [ModelBatch(idx, [self._given(docs, inputs, i) for i in idx]) for idx in self.batches(docs)]

    def _given(self, docs: Sequence[Document], inputs: Sequence[PageInputs | None], i: int) -> PageInputs:
        page = inputs[i]
        return page if page is not None else self.inputs(docs[i])

    @staticmethod
    def page_inputs(batches: Sequence[ModelBatch]) -> list[tuple[int, PageInputs | None]]:
        """(page index, its inputs or None) of every page of the batches, in batch order."""
        return [(i, page) for b in batches for i, page in zip(b.pages, b.inputs or [None] * len(b.pages),
                                                               strict=True)]


@runtime_checkable
class Scorer(Protocol):
    """What a block extractor needs of the model, whatever runs it: the torch scorer (model_scorer.ModelScorer)
    and ONNX Runtime's (onnx_model.OnnxModelScorer) both implement it (both are PageScorers too).

    prepare (this thread) then forward (any thread): the batch runner overlaps the two (extraction/extractor.py).
    """

    engine: str  # "torch" or "onnx": the batch runner runs whole pages in its workers on "onnx"
    cfg: ModelConfig
    batch_size: int  # pages per forward pass
    encoder: Any  # a frozen text encoder whose vectors the model reads (torch only), else None

    def open(self) -> None:
        """Open what this process runs the model with now (a worker at its start), so that what cannot be
        opened fails once, there, and not on every page."""
        ...

    def warm_up(self) -> None:
        """Make now, before the batch runner forks its workers, what the first page would make (tables, caches)."""
        ...

    def inputs(self, doc: Document) -> PageInputs:
        """One page's model inputs."""
        ...

    def prepare(self, docs: Sequence[Document]) -> list[ModelBatch]:
        """The forward passes' batches with their inputs (Python and NumPy)."""
        ...

    def batches_from(self, docs: Sequence[Document], inputs: Sequence[PageInputs | None]) -> list[ModelBatch]:
        """The batches of pages whose inputs were made elsewhere (None: made here)."""
        ...

    def forward(self, docs: Sequence[Document], batches: Sequence[ModelBatch]) -> list[np.ndarray]:
        """P(body) for every block of every page (an empty array for a page with no block)."""
        ...

    def page_inputs(self, batches: Sequence[ModelBatch]) -> list[tuple[int, PageInputs | None]]:
        """(page index, its inputs or None) of every page of the batches."""
        ...


def read_checkpoint(directory: str | Path) -> dict[str, Any]:
    """The checkpoint's config.json (model config plus whatever `extra` the trainer stored)."""
    from bodyblocks.classify.integrity import read_config

    path = Path(directory) / "config.json"
    meta = read_config(path)  # a JSON object, or one line that says what is wrong
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise ValueError(f"{path}: checkpoint format {version!r}, this version reads {FORMAT_VERSION}")
    if meta.get("kind", KIND) != KIND:  # folders written before `kind` was recorded are models
        raise ValueError(f"{path}: a checkpoint of kind {meta['kind']!r}, not 'model'")
    return meta
