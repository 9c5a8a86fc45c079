"""Inference with the block classifier: pages -> blocks -> P(body) per block -> body text.

    extractor = ModelExtractor()                        # the shipped checkpoints/default, loaded once
    result = extractor.extract(html_bytes)              # one page
    results = extractor.extract_documents(docs)         # several segmented pages per forward pass

extract_documents = prepare (model inputs, NumPy) -> forward (torch only) -> finish (decision rule): the
batch runner runs `forward` on a second thread while this one parses the next pages (batch._Classifier).

Decision rule: a block is body when P(body) >= the checkpoint's threshold (tuned on validation by
train.py). A page on which no block reaches `confident` is flagged low_confidence; with nothing kept
the result is empty with no_body=True, never navigation. With fallback=True, low-confidence pages are
handed to the `heuristic` extractor instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bodyblocks.types import Document, Extraction

REPO_CHECKPOINT = Path(__file__).resolve().parents[2] / "checkpoints" / "default"


def shipped_checkpoint() -> Path | None:
    """checkpoints/default beside the source tree, or $BODYBLOCKS_CHECKPOINT."""
    import os

    env = os.environ.get("BODYBLOCKS_CHECKPOINT")
    path = Path(env) if env else REPO_CHECKPOINT
    return path if (path / "model.safetensors").exists() else None


def default_extractor_name() -> str:
    """The most accurate extractor available here.

    "ensemble" (the model, the boosted trees and the heuristic's vote) when checkpoints/ensemble and both of its parts
    are shipped and $BODYBLOCKS_CHECKPOINT does not name another model; else "model" when a checkpoint is
    available; else the best rule-based extractor.
    """
    import os

    from bodyblocks.ensemble import shipped_ensemble

    if not os.environ.get("BODYBLOCKS_CHECKPOINT") and shipped_ensemble() is not None:
        return "ensemble"
    return "model" if shipped_checkpoint() is not None else "heuristic"


def _random_xlmr_encoder(device: str, max_length: int) -> Any:
    """An xlm-roberta-base-sized encoder with random weights and XLM-R's real tokenizer (speed tests)."""
    from transformers import PreTrainedTokenizerFast, XLMRobertaConfig, XLMRobertaModel

    from bodyblocks.e5 import build_tokenizer, read_e5_file
    from bodyblocks.encoders import HFEncoder, resolve_device

    tok = PreTrainedTokenizerFast(tokenizer_object=build_tokenizer(read_e5_file()), bos_token="<s>",
                                  eos_token="</s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>")
    config = XLMRobertaConfig(  # xlm-roberta-base's shape (its config.json), weights left random
        vocab_size=250002, hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
        max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0,
        eos_token_id=2,
    )
    model = XLMRobertaModel(config, add_pooling_layer=False).to(resolve_device(device))
    return HFEncoder(model, tok, name="random-xlmr-base", max_length=max_length, cache_dir=None)


def keep_mask(probs: np.ndarray, threshold: float, rescue: float | None = None) -> np.ndarray:
    """Blocks kept by the decision rule: P(body) >= threshold, or, on a page where none is, >= rescue."""
    keep = probs >= threshold
    if not keep.any() and rescue is not None and rescue < threshold:
        keep = probs >= rescue
    return keep


def decision_rule(tuned_threshold: float, tuned_confident: float | None, tuned_rescue: float | None,
                  threshold: float | None = None, confident: float | None = None, rescue: float | None = None
                  ) -> tuple[float, float, float | None]:
    """(threshold, confident, rescue) of an extractor: the values given, else the checkpoint's tuned ones.

    `confident` defaults to the threshold in use when the checkpoint has none. The tuned rescue belongs to
    the tuned threshold: a threshold given by hand turns it off unless a rescue is given too.
    """
    t = float(threshold if threshold is not None else tuned_threshold)
    c = float(confident if confident is not None else (tuned_confident if tuned_confident is not None else t))
    tuned = tuned_rescue if threshold is None else None
    return t, c, rescue if rescue is not None else (float(tuned) if tuned is not None else None)


def decide_blocks(doc: Document, probs: np.ndarray, threshold: float, confident: float, name: str,
                  rescue: float | None = None) -> Extraction:
    """The decision rule every block classifier shares: keep blocks with P(body) >= threshold; on a page
    where none reaches it, blocks with P(body) >= rescue (tuned on validation; None or >= threshold: no
    rescue). A page whose best block stays under `confident` is low-confidence, and with nothing kept it is
    empty with no_body."""
    kept = [int(i) for i in np.flatnonzero(keep_mask(probs, threshold, rescue))]
    top = float(probs.max()) if len(probs) else 0.0
    return Extraction(
        text="\n".join(doc.blocks[i].text for i in kept), title=doc.title, extractor=name, encoding=doc.encoding,
        blocks=doc.blocks, probabilities=[float(x) for x in probs], kept=kept,
        confidence=float(np.mean(probs[kept])) if kept else top, low_confidence=top < confident,
        no_body=not kept, replaced=doc.replaced,
    )


@dataclass
class Prepared:
    """Pages ready for the forward pass (ModelExtractor.prepare)."""

    docs: Sequence[Document]
    batches: list[tuple[list[int], list[Any] | None]]  # page indices per forward pass, with their PageInputs
    collated: list[Any]  # per forward pass, its PageBatch (None with a frozen encoder: made in forward)
    extra: dict[int, np.ndarray] = field(default_factory=dict)  # per page, what a subclass adds (the trees' P)


class ModelExtractor:
    """The trained block classifier behind the Extractor interface; loads its checkpoint once."""

    name = "model"

    def __init__(
        self,
        checkpoint: str | Path | None = None,
        *,
        device: str = "auto",
        threshold: float | None = None,
        confident: float | None = None,
        rescue: float | None = None,
        fallback: bool = False,
        batch_size: int = 16,
        random_xlmr: bool = False,
        threads: int | None = None,
    ) -> None:
        """
        Args:
            checkpoint: folder with config.json + model.safetensors; None: the shipped model.
            device: "auto", "cpu" or "cuda".
            threshold: P(body) at which a block is kept; None: the checkpoint's tuned value.
            confident: a page is low-confidence when no block reaches this; None: the checkpoint's value.
            rescue: on a page with no block at the threshold, keep those at or above this; None: the
                checkpoint's tuned value when the threshold is the checkpoint's too (else, and in
                checkpoints that predate it, no rescue).
            fallback: low-confidence pages go to the heuristic extractor.
            batch_size: pages per forward pass in extract_documents.
            random_xlmr: replace the model by an untrained xlm-roberta-base-sized one (speed tests only).
            threads: torch CPU threads for this process (None leaves torch's setting, which is every core;
                `bodyblocks extract` gives the usable cores divided by its parsing workers). On the 2-core
                machine here a page's forward pass took 13 ms with 2 threads and 18 ms with 1
                (benchmarks/profile_stages.py).
        """

        from bodyblocks.config import ModelConfig
        from bodyblocks.encoders import make_encoder, resolve_device
        from bodyblocks.model import BlockClassifier, read_checkpoint

        self.device = resolve_device(device)
        if threads and self.device.type == "cpu":
            import torch

            torch.set_num_threads(threads)
        meta: dict[str, Any] = {}
        if random_xlmr:
            from bodyblocks.config import load_config

            cfg = load_config(Path(__file__).resolve().parents[2] / "configs" / "xlmr.yaml").model
            self.model = BlockClassifier(cfg).to(self.device).eval()
            self.encoder = _random_xlmr_encoder(str(self.device), cfg.encoder.max_length)
        else:
            path = Path(checkpoint) if checkpoint else shipped_checkpoint()
            if path is None:
                raise FileNotFoundError("no shipped model in checkpoints/default; pass checkpoint= or train one")
            meta = read_checkpoint(path)
            self.model = BlockClassifier.load(path, device=self.device)
            cfg = self.model.cfg
            frozen = cfg.use_text and cfg.encoder.frozen
            self.encoder = make_encoder(cfg.encoder, device=str(self.device)) if frozen else None
        self.cfg: ModelConfig = cfg
        self.bf16 = self.device.type == "cuda"
        self.threshold, self.confident, self.rescue = decision_rule(
            meta.get("threshold", 0.5), meta.get("confident"), meta.get("rescue"), threshold, confident, rescue)
        self.fallback = fallback
        self.batch_size = batch_size
        self._heuristic: Any = None
        from bodyblocks.segment import segment

        # HTML -> Document for this extractor (the batch runner's workers call it; the ensemble adds a vote)
        self.page_segmenter: Callable[[str | bytes], Document] = segment
        # one-page batches (the batch runner's on CPU) go through the traced forward pass when it is exact
        self.single = self.model.single_page() if self.device.type == "cpu" else None

    # ----------------------------------------------------------------------------------- public API
    def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
        """Segment and classify one page."""
        return self.extract_documents([self.page_segmenter(html)], [lambda: html])[0]

    def extract_documents(
        self, docs: Sequence[Document], sources: Sequence[Callable[[], str | bytes]] | None = None
    ) -> list[Extraction]:
        """Classify segmented pages, several per forward pass (bucketed by block count).

        Args:
            docs: segmented pages.
            sources: per page, a function returning its HTML; called for the fallback, and by the ensemble
                for a page segmented without the heuristic's vote.
        """
        prepared = self.prepare(docs)
        return self.finish(prepared, self.forward(prepared), sources)

    def probabilities(self, docs: Sequence[Document]) -> list[np.ndarray]:
        """P(body) for every block of every page (pages with no block get an empty array)."""
        prepared = self.prepare(docs)
        return self.combine(prepared, self.forward(prepared))

    # Classification in three steps, so that a batch runner can put the forward pass on its own thread
    # (torch releases the GIL in its kernels) while this one parses and prepares the next pages:
    #   prepare (NumPy, this thread) -> forward (torch, any thread) -> finish (decision rule, this thread)
    def prepare(self, docs: Sequence[Document]) -> Prepared:
        """The forward passes' batches and each page's model inputs; a frozen encoder's vectors are left to
        `forward`, since they come from the encoder on the model's device."""
        from bodyblocks.model import collate

        batches, collated = [], []
        for idx in self._batches(docs):
            pages = None if self.encoder is not None else [self._inputs(docs[i]) for i in idx]
            batches.append((idx, pages))
            collated.append(None if pages is None else collate(pages))  # here: Python and NumPy, not forward's
        return Prepared(docs, batches, collated)

    def forward(self, prepared: Prepared) -> list[np.ndarray]:
        """The model's P(body) for every block of every page of a prepared batch (touches only torch)."""
        import torch

        from bodyblocks.model import collate

        docs = prepared.docs
        result: list[np.ndarray] = [np.zeros(0, np.float32)] * len(docs)
        for (idx, _), batch in zip(prepared.batches, prepared.collated, strict=True):
            if batch is None:  # a frozen encoder: its vectors come from the model's device, here
                batch = collate([self._inputs(docs[i]) for i in idx])
            if self.device.type != "cpu":  # (on CPU: every call here waits for the GIL on its way back)
                if self.device.type == "cuda":
                    batch = batch.pin_memory()  # page-locked host memory: the copy below overlaps compute
                batch = batch.to(self.device, non_blocking=True)
            probs = None
            if self.single is not None and self.single.accepts(batch):
                try:
                    probs = [self.single(batch)]
                except RuntimeError:  # the TorchScript interpreter failed on this page: the eager model decides
                    probs = None
            if probs is None:
                with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
                    probs = self.model.probabilities(batch)
            for i, p in zip(idx, probs, strict=True):
                result[i] = p.astype(np.float32)
        return result

    def combine(self, prepared: Prepared, probs: list[np.ndarray]) -> list[np.ndarray]:
        """The final P(body) from the model's (the model alone: unchanged; see EnsembleExtractor)."""
        return probs

    def finish(self, prepared: Prepared, probs: list[np.ndarray],
               sources: Sequence[Callable[[], str | bytes]] | None = None) -> list[Extraction]:
        """The decision rule (and the fallback) on every page, from `forward`'s probabilities."""
        out = []
        for i, (doc, p) in enumerate(zip(prepared.docs, self.combine(prepared, probs), strict=True)):
            ex = self.decide(doc, p)
            if ex.low_confidence and self.fallback and sources is not None:
                ex = self._fall_back(sources[i], ex)
            out.append(ex)
        return out

    def _batches(self, docs: Sequence[Document]) -> list[list[int]]:
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

    def decide(self, doc: Document, probs: np.ndarray) -> Extraction:
        """Keep blocks at or above the threshold; flag pages with no confident block."""
        return decide_blocks(doc, probs, self.threshold, self.confident, self.name, self.rescue)

    # ----------------------------------------------------------------------------------- helpers
    def _inputs(self, doc: Document) -> Any:
        from bodyblocks.model import prepare_page

        vectors = self.encoder.encode([b.text for b in doc.blocks]) if self.encoder is not None else None
        return prepare_page(doc.blocks, self.cfg, text_vectors=vectors)

    def _fall_back(self, source: Callable[[], str | bytes], ex: Extraction) -> Extraction:
        """The heuristic's answer for a page the model is unsure of; the model's blocks stay attached."""
        from bodyblocks.errors import InputError
        from bodyblocks.extractors import get_extractor

        if self._heuristic is None:
            self._heuristic = get_extractor("heuristic")
        try:
            h = self._heuristic.extract(source())
        except InputError:
            return ex
        return Extraction(
            text=h.text, title=ex.title or h.title, extractor=f"{self.name}+heuristic", encoding=ex.encoding,
            blocks=ex.blocks, probabilities=ex.probabilities, kept=[], confidence=ex.confidence,
            low_confidence=True, no_body=not h.text, replaced=ex.replaced,
        )
