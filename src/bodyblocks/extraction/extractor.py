"""Block extractors: a page's blocks scored by the learned parts, blended, then kept by the decision rule.

    extractor = load_extractor("ensemble")                   # loading/checkpoints.py builds these
    result = extractor.extract(html_bytes)                   # one page
    results = extractor.extract_documents(docs)              # several segmented pages per forward pass

Per block, P(body) = w * P_model + h * vote + (1 - w - h) * P_gbt (classify/blend.py); the model alone is w = 1,
the trees alone w = 0, and the vote (extraction/vote.py) needs pages segmented by `page_segmenter`
(segmenting.segment_page, the one page path). Work on a
batch of pages goes in three steps, so that the batch runner can put the forward pass on a second thread
(torch releases the GIL in its kernels) while this one parses the next pages:

  1. prepare (this thread): the model's inputs (NumPy), the page's features of its kind when asked
     (classify/pagekind.py), and the trees' P(body) (classify/trees.py);
  2. forward (any thread): the model's forward passes (torch only);
  3. finish (this thread): the blend and the decision rule (extraction/decision.py), with the heuristic as a
     fallback for low-confidence pages when asked; then each page's kind, which reads what was kept.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from bodyblocks.baselines.heuristic import HeuristicExtractor
from bodyblocks.classify.blend import Blend
from bodyblocks.classify.pagekind import kinds_of, page_rows, with_url
from bodyblocks.errors import InputError
from bodyblocks.extraction.decision import DecisionRule
from bodyblocks.extraction.segmenting import segment_annotated, segment_page
from bodyblocks.extraction.vote import VOTE, vote_on_tree
from bodyblocks.page.decode import page_source
from bodyblocks.page.metadata import METADATA, resolve_canonical, with_metadata
from bodyblocks.types import Document, Extraction

if TYPE_CHECKING:
    from bodyblocks.classify.model_inputs import ModelBatch, PageInputs, Scorer
    from bodyblocks.classify.trees import GbtScorer

Source = Callable[[], str | bytes]  # a page's HTML on demand
_EMPTY = np.zeros(0, np.float32)
# BlockExtractor.warm_up's page: a title channel, a date, a heading, paragraphs, a link, a list and a table
_WARM_PAGE = ("<html><head><title>A title - Site</title><meta property='og:title' content='A title'>"
              "<meta property='article:published_time' content='2024-01-02'></head><body><nav><a href='/'>Home</a>"
              "</nav><article><h1>A title</h1><p>First paragraph, with <a href='/x'>a link</a>.</p><p>Another one."
              "</p><ul><li>an item</li></ul><table><tr><td>1</td><td>2</td></tr></table></article></body></html>")


@dataclass
class Prepared:
    """Pages after step 1: the model's batches (none without a model), the trees' P(body) by page and the page's
    part of each page's kind features (empty when not asked)."""

    docs: Sequence[Document]
    batches: list[ModelBatch] = field(default_factory=list)
    gbt: dict[int, np.ndarray] = field(default_factory=dict)
    kind_rows: list[np.ndarray | None] = field(default_factory=list)


@dataclass
class PageParts:
    """One page after step 1, apart from any batch (`prepare_pages`): its model inputs, its trees' P(body) and the
    page's part of its kind's features (None when not asked)."""

    inputs: PageInputs | None = None
    gbt: np.ndarray | None = None
    kind_row: np.ndarray | None = None


OVERLAP_SWITCH_INTERVAL = 0.0005  # seconds (sys.setswitchinterval) while a forward pass overlaps other work


@contextmanager
def overlapping(on: bool = True) -> Iterator[None]:
    """While the forward pass runs on another thread: that thread gets the GIL back soon after each kernel
    (Python's default switch interval is 5 ms); the interval is restored after."""
    switch = sys.getswitchinterval()
    if on:
        sys.setswitchinterval(OVERLAP_SWITCH_INTERVAL)
    try:
        yield
    finally:
        sys.setswitchinterval(switch)


@runtime_checkable
class StagedExtractor(Protocol):
    """What the batch runner needs of a block extractor: pages segmented in its workers, classified here in
    groups (and, when `overlaps`, with the forward pass on a second thread)."""

    name: str
    page_segmenter: Callable[[str | bytes], Document]
    overlaps: bool
    whole_pages: bool

    def extract_documents(self, docs: Sequence[Document], sources: Sequence[Source] | None = None
                          ) -> list[Extraction]: ...

    def prepare(self, docs: Sequence[Document]) -> Prepared: ...

    def forward(self, prepared: Prepared) -> list[np.ndarray]: ...

    def finish(self, prepared: Prepared, probs: list[np.ndarray], sources: Sequence[Source] | None = None
               ) -> list[Extraction]: ...


class BlockExtractor:
    """A block classifier behind the Extractor interface: the model, the trees, or both with the vote."""

    def __init__(self, name: str, rule: DecisionRule, *, model: Scorer | None = None,
                 gbt: GbtScorer | None = None, blend: Blend | None = None, fallback: bool = False,
                 marks: bool = False, dates: bool = True, page_kind: bool = False) -> None:
        """
        Args:
            name: the extractor's name in its results ("model", "gbt", "ensemble").
            rule: the decision rule.
            model, gbt: the parts (at least one); the model on torch or ONNX Runtime (inputs.Scorer).
            blend: their weights; None: the one part alone.
            fallback: low-confidence pages go to the heuristic extractor.
            marks: the blocks note their links and emphasis (Block.marks), for Markdown output.
            dates: the page's publication date read (Extraction.date; metadata.page_metadata).
            page_kind: each page's kind predicted (Extraction.page_kind, classify/pagekind.py).
        """
        if model is None and gbt is None:
            raise ValueError("a block extractor needs a model or trees")
        self.name, self.rule, self.model, self.gbt = name, rule, model, gbt
        self.blend = blend or Blend(1.0 if model is not None else 0.0)
        self.fallback, self.page_kind = fallback, page_kind
        self._heuristic: HeuristicExtractor | None = None
        # HTML -> Document for this extractor (the batch runner's workers call it)
        self.marks, self.dates = marks, dates
        self.page_segmenter: Callable[[str | bytes], Document] = functools.partial(
            segment_page, voting=self.voting, marks=marks, dates=dates)

    def open_sessions(self) -> None:
        """Open this process's ONNX Runtime sessions of the model and the trees now (a worker at its start), so
        that an export ONNX Runtime cannot load fails once, there, and not on every page."""
        if self.model is not None:
            self.model.open()
        if self.gbt is not None:
            self.gbt.model.prepare_walk()

    def warm_up(self) -> None:
        """Do once in this process what every process does on its first page, apart from ONNX Runtime (which opens
        per process): lazy imports, lookup tables, caches, on a small built-in page. The batch runner calls it
        before it forks its workers, which then inherit all of it instead of each paying for it (a worker's first
        page cost ~0.1 s of CPU more than the next)."""
        doc = self.page_segmenter(_WARM_PAGE)
        if self.model is not None and self.model.encoder is None and doc.blocks:
            self.model.inputs(doc)
            self.model.warm_up()
        self.rule.decide(doc, np.full(len(doc.blocks), 0.5, np.float32), self.name)

    @property
    def voting(self) -> bool:
        """Whether the heuristic's vote is part of the blend."""
        return bool(self.blend.vote)

    @property
    def overlaps(self) -> bool:
        """Whether step 2 has work worth a thread of its own (a model's forward passes)."""
        return self.model is not None

    @property
    def whole_pages(self) -> bool:
        """Whether the batch runner should run whole pages in its worker processes (the forward pass on ONNX
        Runtime, or no model): every core then parses and classifies, with no hand-over to this process."""
        return self.model is None or self.model.engine == "onnx"

    # ----------------------------------------------------------------------------------- public API
    def extract(self, html: str | bytes | os.PathLike[str], url: str | None = None, *, overlap: bool = True
                ) -> Extraction:
        """Segment and classify one page: its bytes, its HTML as a str, or a path-like to read it from
        (decode.page_source: a str naming a file is refused). `overlap`: the forward pass on a second thread
        while this one makes the vote and the trees' P(body) (False in the batch runner's workers, where every
        core has a worker already)."""
        return self.extract_html(page_source(html), url, overlap=overlap)

    def extract_html(self, page: str | bytes, url: str | None = None, *, overlap: bool = True) -> Extraction:
        """extract of a page that decode.page_source has read already (bodyblocks.extract reads it before the
        default extractor is built, so that a bad input fails first)."""
        if self.model is None or not self.voting or not overlap:
            doc = with_url(self.page_segmenter(page), url)
            return resolve_canonical(self.extract_documents([doc], [lambda: page])[0], url)
        # one page, two threads: the model's forward pass (torch releases the GIL in its kernels) runs while
        # this thread makes the heuristic's vote (the page path's last step, segmenting.py) and the trees' P(body)
        parsed = segment_annotated(page, marks=self.marks, dates=self.dates)
        doc = with_url(parsed.doc, url)
        prepared = self._prepare_model([doc])
        with overlapping(), ThreadPoolExecutor(1) as pool:
            probs = pool.submit(self.forward, prepared)
            vote_on_tree(doc, parsed.tree, parsed.text)
            self._prepare_trees(prepared)
            return resolve_canonical(self.finish(prepared, probs.result(), [lambda: page])[0], url)

    def extract_documents(self, docs: Sequence[Document], sources: Sequence[Source] | None = None
                          ) -> list[Extraction]:
        """Classify segmented pages, several per forward pass (bucketed by block count).

        Args:
            docs: pages segmented by `page_segmenter` (a blend with the vote refuses others: `prepare`).
            sources: per page, a function returning its HTML, for the fallback of low-confidence pages.
        """
        prepared = self.prepare(docs)
        probs = self.forward(prepared)
        return self.finish(prepared, probs, sources)

    def probabilities(self, docs: Sequence[Document]) -> list[np.ndarray]:
        """P(body) for every block of every page (pages with no block get an empty array)."""
        prepared = self.prepare(docs)
        return self.combine(prepared, self.forward(prepared))

    # ----------------------------------------------------------------------------------- the three steps
    def prepare(self, docs: Sequence[Document]) -> Prepared:
        """Step 1: the model's batches and inputs, then every page's kind features (when asked) and its trees'
        P(body)."""
        self._check_vote(docs)
        prepared = self._prepare_model(docs)
        self._prepare_trees(prepared)
        return prepared

    def prepare_pages(self, docs: Sequence[Document]) -> list[PageParts]:
        """Step 1 page by page, without the forward passes' batches: each page's model inputs (None without a
        model, for a page with no block, or when a frozen encoder makes them on the model's device), its kind
        features (when asked) and its trees' P(body). What the Ray pipeline's CPU stage sends to the model actors, where
        `prepared_from` makes them a Prepared again; the probabilities are those of `prepare`."""
        self._check_vote(docs)
        inputs: list[PageInputs | None] = [None] * len(docs)
        if self.model is not None and self.model.encoder is None:
            inputs = [self.model.inputs(d) if d.blocks else None for d in docs]
        kind_rows = page_rows(docs) if self.page_kind else [None] * len(docs)
        gbt: dict[int, np.ndarray] = {}
        if self.gbt is not None:  # from the model's inputs when there are some, as _prepare_trees
            given = [(i, p) for i, p in enumerate(inputs) if docs[i].blocks] if self.model is not None else None
            gbt = self.gbt.scores(docs, given)
        return [PageParts(inputs[i], gbt.get(i), kind_rows[i]) for i in range(len(docs))]

    def prepared_from(self, docs: Sequence[Document], parts: Sequence[PageParts]) -> Prepared:
        """The Prepared of pages whose `prepare_pages` ran elsewhere: the forward passes' batches made here."""
        prepared = Prepared(docs)
        if self.model is not None:
            prepared.batches = self.model.batches_from(docs, [p.inputs for p in parts])
        prepared.gbt = {i: p.gbt for i, p in enumerate(parts) if p.gbt is not None}
        prepared.kind_rows = [p.kind_row for p in parts] if self.page_kind else []
        return prepared

    def _check_vote(self, docs: Sequence[Document]) -> None:
        if self.voting:
            lacking = [i for i, d in enumerate(docs) if d.blocks and VOTE not in d.extra]
            if lacking:
                raise ValueError(f"{len(lacking)} pages lack the heuristic's vote: segment them with the "
                                 "extractor's page_segmenter")

    def _prepare_model(self, docs: Sequence[Document]) -> Prepared:
        """Step 1, the model's part: its batches and inputs (NumPy)."""
        prepared = Prepared(docs)
        if self.model is not None:
            prepared.batches = self.model.prepare(docs)
        return prepared

    def _prepare_trees(self, prepared: Prepared) -> None:
        """Step 1, the boosted trees' part: every page's kind features when asked (classify/pagekind.page_rows),
        then every page's P(body) at once (from the model's inputs when there are some)."""
        if self.page_kind:
            prepared.kind_rows = page_rows(prepared.docs)
        if self.gbt is not None:
            inputs = self.model.page_inputs(prepared.batches) if self.model is not None else None
            prepared.gbt = self.gbt.scores(prepared.docs, inputs)

    def forward(self, prepared: Prepared) -> list[np.ndarray]:
        """Step 2: the model's P(body) of every page (touches only torch); empty without a model."""
        return self.model.forward(prepared.docs, prepared.batches) if self.model is not None else []

    def combine(self, prepared: Prepared, probs: list[np.ndarray]) -> list[np.ndarray]:
        """The blended P(body) of every page, from `forward`'s."""
        docs = prepared.docs
        gbt = [prepared.gbt.get(i, _EMPTY) for i in range(len(docs))] if self.gbt is not None else None
        votes = None
        if self.voting:
            votes = [d.extra.get(VOTE, _EMPTY) if len(p) else _EMPTY for d, p in zip(docs, probs, strict=True)]
        return self.blend(probs if self.model is not None else None, gbt, votes)

    def finish(self, prepared: Prepared, probs: list[np.ndarray], sources: Sequence[Source] | None = None
               ) -> list[Extraction]:
        """Step 3: the blend and the decision rule (and the fallback) on every page, from `forward`'s
        probabilities; then the pages' kinds, from step 1's rows and these decisions."""
        out = []
        for i, (doc, p) in enumerate(zip(prepared.docs, self.combine(prepared, probs), strict=True)):
            ex = self.rule.decide(doc, p, self.name)
            unsure = (float(p.max()) if len(p) else 0.0) < self.rule.confident  # not a comment or link page
            if unsure and self.fallback and sources is not None and not ex.error_page:
                ex = self._fall_back(sources[i], ex)
            out.append(with_metadata(ex, doc.extra.get(METADATA)))
        if prepared.kind_rows:  # the kinds read the decisions: every page's trees walked at once
            for ex, kind in zip(out, kinds_of(prepared.kind_rows, out), strict=True):
                ex.page_kind = kind
        return out

    def _fall_back(self, source: Source, ex: Extraction) -> Extraction:
        """The heuristic's answer for a page the model is unsure of; the model's blocks stay attached."""
        if self._heuristic is None:
            self._heuristic = HeuristicExtractor()
        try:
            h = self._heuristic.extract(source())
        except InputError:
            return ex
        return Extraction(
            text=h.text, title=ex.title or h.title, extractor=f"{self.name}+heuristic", encoding=ex.encoding,
            blocks=ex.blocks, probabilities=ex.probabilities, kept=[], confidence=ex.confidence,
            low_confidence=True, no_body=not h.text, replaced=ex.replaced, truncated=ex.truncated,
            low_confidence_reason="the heuristic's answer (--fallback): " + (ex.low_confidence_reason or "unsure"),
            guessed=ex.guessed, hidden_source=ex.hidden_source,
        )
