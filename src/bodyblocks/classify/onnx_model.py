"""The block Transformer and the boosted trees on ONNX Runtime: CPU extraction without torch or scikit-learn.

    scorer = OnnxModelScorer.load("checkpoints/default")   # embed.onnx + context.onnx beside model.safetensors
    p = scorer.page_probabilities(prepare_page(doc.blocks, scorer.cfg))
    walk = trees_session("checkpoints/gbt")                # trees.onnx: GbtModel.raw's engine when it is there

`bodyblocks export CHECKPOINT` (training/export.py) writes the files from the torch model and the tree arrays,
and refuses to keep them unless they give the torch model's probabilities on real pages. Per model folder:
  embed.onnx    one page's blocks -> (n, d_model): the hashed n-gram and tag-path bags (Gather, then
                ScatterND adds in the order of torch's EmbeddingBag), the text LayerNorm, the block MLP and the
                sinusoidal encoding of the block index (given as an input);
  context.onnx  (b, w, d_model) windows -> (b, w, 2) logits: the Transformer and the head;
  trees.onnx    (gbt folder) rows of gbt_features -> log-odds: one TreeEnsembleRegressor, thresholds in double
                as in the NumPy walk.
The windows of a page longer than the model's window are cut and averaged here as in the model's
_contextualise. Each file records the SHA-256 of the weights it was exported from (`source_sha256`); a file
whose weights have changed since is not used. A context.onnx exported with `--int8` (int8 MatMul weights,
training/export.quantize_context; its metadata QUANTIZED_KEY says so) is loaded as the float one is. Sessions run
on one thread by default (a 157-block page: 7.8 ms of CPU on one thread, 10.8 on two for 7.1 ms of wall time), and
each process opens its own (workers fork).
"""

from __future__ import annotations

import importlib.util
import math
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bodyblocks.classify.integrity import check_model_folder, file_sha256
from bodyblocks.classify.model_inputs import EXPORTS, ModelBatch, PageInputs, PageScorer, window_starts
from bodyblocks.config import ModelConfig
from bodyblocks.types import Document

EMBED, CONTEXT = EXPORTS  # a model folder's (the torch model's save removes them: model.py)
TREES = "trees.onnx"  # a gbt folder's (GbtModel.save removes it)
WEIGHTS = "model.safetensors"  # what each export is made from, in the same folder
SOURCE_KEY = "source_sha256"  # metadata of an exported file: the digest of WEIGHTS it was made from
QUANTIZED_KEY = "quantized"  # metadata of a context.onnx with int8 weights (`bodyblocks export --int8`): "int8"
# Work per session call, so that ONNX Runtime's buffers (kept in its arena for the next call) stay small
# whatever the page: blocks and hashed n-grams per embed.onnx call (the n-grams' rows are gathered at once,
# 256 bytes each in float32), and windows per context.onnx call (each holds heads x window^2 attention scores:
# 4 MB for 512 blocks)
EMBED_ROWS = 4096
EMBED_NGRAMS = 1 << 16
CONTEXT_WINDOWS = 4
POSITION_ROWS = 512  # block-index encodings made at first (OnnxModelScorer._position), doubled as pages need


class StaleExport(ValueError):
    """An exported file whose folder's weights have changed since it was made."""


def runtime_installed() -> bool:
    """Whether ONNX Runtime can be imported (without importing it)."""
    return importlib.util.find_spec("onnxruntime") is not None


def weights_digest(folder: str | Path) -> str:
    """SHA-256 of the folder's model.safetensors (about 16 ms for the shipped 21 MB; integrity.file_sha256, so a
    process that checked the weights at load does not read them again)."""
    return file_sha256(Path(folder) / WEIGHTS)


def has_export(folder: str | Path, names: Sequence[str]) -> bool:
    """Whether the folder holds these exported files (not whether they are current: `open_session` checks)."""
    return all((Path(folder) / n).is_file() for n in names)


def open_session(path: Path, threads: int = 1, digest: str | None = None) -> Any:
    """An ONNX Runtime CPU session of one exported file on `threads` threads that never spin while idle.

    Raises:
        StaleExport: `digest` given and not the one the file was exported from.
    """
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = max(1, threads), 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
    # no memory arena and no memory pattern: ONNX Runtime's arena grows to a page's largest tensors and keeps them
    # (a worker's peak RSS ratcheted up with each longer page); allocating per call cost no measurable CPU on
    # 150 dataset pages, and took 100 MB off the peak over 112 pages with the 2,000-page run's largest
    opts.enable_cpu_mem_arena = False
    opts.enable_mem_pattern = False
    opts.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - ONNX Runtime's own exception types, each a bad export
        detail = (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
        raise ValueError(f"{path}: ONNX Runtime cannot load this export ({detail}); run `bodyblocks export "
                         f"{path.parent}` again") from None
    if digest is not None:
        _refuse_stale(path, session.get_modelmeta().custom_metadata_map.get(SOURCE_KEY), digest)
    return session


def _refuse_stale(path: Path, made_from: str | None, digest: str) -> None:
    """StaleExport when the exported file at `path` was made from other weights (`made_from`) than `digest`."""
    if made_from != digest:
        raise StaleExport(f"{path} was exported from other weights than {path.parent / WEIGHTS}: "
                          f"run `bodyblocks export {path.parent}` again")


def _varint(buf: Any, pos: int) -> tuple[int, int]:
    """A protobuf varint at `pos`: (value, the position after it)."""
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise ValueError("truncated or malformed varint")
        byte = buf[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            return value, pos


MAX_FIELDS = 100_000  # top-level fields of a ModelProto, or entries of one metadata entry, read at most


def _fields(buf: Any, start: int, end: int) -> list[tuple[int, int, int]]:
    """The (field number, start, end) of each length-delimited field of a protobuf message in buf[start:end];
    the other wire types are skipped. ValueError: not a well-formed message, or more than MAX_FIELDS fields (a
    real ModelProto has a few dozen)."""
    out, pos, seen = [], start, 0
    while pos < end:
        seen += 1
        if seen > MAX_FIELDS:
            raise ValueError(f"more than {MAX_FIELDS} fields")
        key, pos = _varint(buf, pos)
        field, kind = key >> 3, key & 7
        if kind == 0:
            _, pos = _varint(buf, pos)
        elif kind in (1, 5):
            pos += 8 if kind == 1 else 4
        elif kind == 2:
            size, pos = _varint(buf, pos)
            out.append((field, pos, pos + size))
            pos += size
        else:
            raise ValueError(f"unexpected protobuf wire type {kind}")
        if pos > end:
            raise ValueError("truncated protobuf message")
    return out


MODEL_GRAPH, MODEL_METADATA = 7, 14  # onnx.proto: ModelProto.graph and metadata_props (StringStringEntryProto)


def export_metadata(path: str | Path) -> dict[str, str]:
    """The metadata of an exported file (SOURCE_KEY, QUANTIZED_KEY, ...), read from its bytes without ONNX Runtime
    (a walk over the ModelProto's top-level fields, a few milliseconds where opening a session costs about 100 on
    embed.onnx).

    Raises:
        ValueError: the file is not a well-formed ONNX model (empty, truncated, or without a graph).
    """
    import mmap

    found: dict[str, str] = {}
    with open(path, "rb") as fh:
        if not os.fstat(fh.fileno()).st_size:
            raise ValueError(f"{path}: empty file, not an ONNX model")
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            try:
                top = _fields(buf, 0, len(buf))
                if not any(field == MODEL_GRAPH for field, _, _ in top):
                    raise ValueError("no graph")
                for field, a, b in top:
                    if field == MODEL_METADATA:
                        entry = {k: bytes(buf[x:y]).decode("utf-8") for k, x, y in _fields(buf, a, b)}
                        if 1 in entry:
                            found.setdefault(entry[1], entry.get(2, ""))
            except (ValueError, UnicodeDecodeError) as e:
                raise ValueError(f"{path}: not a well-formed ONNX model ({e})") from None
    return found


def export_source(path: str | Path) -> str | None:
    """The SOURCE_KEY metadata of an exported file (export_metadata), None when it has none."""
    return export_metadata(path).get(SOURCE_KEY)


def check_export(path: Path, digest: str) -> dict[str, str]:
    """Refuse an exported file that was made from other weights than `digest`, or that is not an ONNX model,
    without opening a session (open_session checks the same when it opens one); the file's metadata.

    Raises:
        StaleExport: made from other weights.
        ValueError: not a well-formed ONNX model.
    """
    meta = export_metadata(path)
    _refuse_stale(path, meta.get(SOURCE_KEY), digest)
    return meta


def _new_opening_lock() -> None:
    global _OPENING
    _OPENING = threading.Lock()


_OPENING = threading.Lock()  # held while a session opens (_PerProcess.get); new in a forked child
os.register_at_fork(after_in_child=_new_opening_lock)


class _PerProcess:
    """Sessions opened on first use in each process: a session's threads do not survive a fork. Threads that
    ask at once on first use wait for the one that opens it (the process id is set only once the session or its
    error is there, under _OPENING)."""

    def __init__(self, opener: Any) -> None:
        self._opener, self._pid, self._value, self._error = opener, -1, None, None

    def get(self) -> Any:
        """This process's session; a session that failed to open fails again at once (it is not retried)."""
        pid = os.getpid()
        if self._pid != pid:
            with _OPENING:
                if self._pid != pid:
                    value, error = None, None
                    try:
                        value = self._opener()
                    except Exception as e:  # noqa: BLE001 - kept and raised again, as it was
                        error = e
                    self._value, self._error, self._pid = value, error, pid
        if self._error is not None:
            raise self._error
        return self._value


def sinusoidal(start: int, stop: int, dim: int) -> np.ndarray:
    """(stop - start, dim) float32 sine/cosine encoding of block indices start..stop, as model.sinusoidal."""
    freqs = np.exp(np.arange(0, dim, 2, dtype=np.float32) * np.float32(-math.log(10000.0) / dim))
    angles = np.arange(start, stop, dtype=np.float32)[:, None] * freqs[None, :]
    return np.stack((np.sin(angles), np.cos(angles)), axis=-1).reshape(stop - start, -1)[:, :dim]


def bag_inputs(ids: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """EmbeddingBag input (ids, offsets) as embed.onnx takes it: ids, each id's block, ids per block (>= 1)."""
    counts = np.diff(np.append(offsets, len(ids)))
    owner = np.repeat(np.arange(len(offsets), dtype=np.int64), counts)
    return ids.astype(np.int64), owner, np.maximum(counts, 1).astype(np.float32)[:, None]


class OnnxModelScorer(PageScorer):
    """The block Transformer's P(body) on ONNX Runtime: the interface of ModelScorer (model_scorer.py), one
    page per call (no padding: a page's probabilities never depend on the pages beside it)."""

    engine = "onnx"

    def __init__(self, folder: str | Path, cfg: ModelConfig, threads: int = 1, batch_size: int = 16) -> None:
        if cfg.use_text and cfg.encoder.frozen:
            raise ValueError(f"{folder}: a model reading {cfg.encoder.kind} vectors needs torch for its encoder")
        self.folder, self.cfg, self.threads, self.batch_size = Path(folder), cfg, threads, batch_size
        digest = weights_digest(folder)
        self._embed = _PerProcess(lambda: open_session(self.folder / EMBED, threads, digest))
        self._context = _PerProcess(lambda: open_session(self.folder / CONTEXT, threads, digest))
        self._positions = np.zeros((0, cfg.d_model), np.float32)
        # fail now (a stale or broken export), not on the first page; the sessions open on first use, in the
        # process that runs the model
        check_export(self.folder / EMBED, digest)
        self.int8 = check_export(self.folder / CONTEXT, digest).get(QUANTIZED_KEY) == "int8"  # export --int8

    @classmethod
    def load(cls, folder: str | Path, *, threads: int | None = None, batch_size: int = 16) -> OnnxModelScorer:
        """A model checkpoint folder with its export (embed.onnx, context.onnx); `threads`: per session (None: 1)."""
        from bodyblocks.classify.model_inputs import read_checkpoint

        meta = read_checkpoint(folder)
        # its settings, the recorded digests of its weights and exports, the settings against the weights' shapes
        return cls(folder, check_model_folder(folder, meta), threads or 1, batch_size)

    def sessions(self) -> tuple[Any, Any]:
        """This process's (embed, context) sessions."""
        return self._embed.get(), self._context.get()

    def warm_up(self) -> None:
        """The block-index encoding of the first POSITION_ROWS blocks, made now (BlockExtractor.warm_up)."""
        self._position(0, 1)

    def open(self) -> None:
        """Scorer.open: this process's sessions, opened now."""
        self.sessions()

    def prepare(self, docs: Sequence[Document]) -> list[ModelBatch]:
        """The pages' inputs (Python and NumPy), in forward's batches."""
        return [ModelBatch(idx, [self.inputs(docs[i]) for i in idx]) for idx in self.batches(docs)]

    def forward(self, docs: Sequence[Document], batches: Sequence[ModelBatch]) -> list[np.ndarray]:
        """P(body) for every block of every page (an empty array for a page with no block)."""
        result: list[np.ndarray] = [np.zeros(0, np.float32)] * len(docs)
        for b in batches:
            for i, page in zip(b.pages, b.inputs or [self.inputs(docs[i]) for i in b.pages], strict=True):
                result[i] = self.page_probabilities(page)
        return result

    def _position(self, a: int, b: int) -> np.ndarray:
        """The encoding of blocks a..b (up to EMBED_ROWS kept, made as far as a page has needed: 512 rows, then
        doubled; a row's values do not depend on how many are made with it)."""
        if b > EMBED_ROWS:
            return sinusoidal(a, b, self.cfg.d_model)
        if len(self._positions) < b:
            rows = max(POSITION_ROWS, len(self._positions))
            while rows < b:
                rows *= 2
            self._positions = sinusoidal(0, min(rows, EMBED_ROWS), self.cfg.d_model)
        return self._positions[a:b]

    def page_probabilities(self, page: PageInputs) -> np.ndarray:
        """P(body) of one page's blocks (float32)."""
        if page.n == 0:
            return np.zeros(0, np.float32)
        logits = self._contextualise(self.sessions()[1], self.block_vectors(page))
        z = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(z)
        return (e[:, 1] / e.sum(axis=1)).astype(np.float32)

    def block_vectors(self, page: PageInputs) -> np.ndarray:
        """embed.onnx's (n, d_model) vectors of a page's blocks (n >= 1), before the context layers."""
        embed = self.sessions()[0]
        parts = [embed.run(None, self._embed_feed(page, a, b))[0] for a, b in self._embed_chunks(page)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)  # (n, d); the blocks are independent here

    def _embed_chunks(self, page: PageInputs) -> list[tuple[int, int]]:
        """Blocks a..b per embed.onnx call: up to EMBED_ROWS blocks and EMBED_NGRAMS n-grams (at least a block)."""
        n, offsets = page.n, page.text_offsets
        if offsets is None or page.text_ids is None or len(page.text_ids) <= EMBED_NGRAMS:
            return [(a, min(n, a + EMBED_ROWS)) for a in range(0, n, EMBED_ROWS)]
        chunks, a = [], 0
        while a < n:
            b = int(np.searchsorted(offsets, offsets[a] + EMBED_NGRAMS, side="right")) - 1  # last start within
            b = min(n, a + EMBED_ROWS, max(b, a + 1))
            chunks.append((a, b))
            a = b
        return chunks

    def _embed_feed(self, page: PageInputs, a: int, b: int) -> dict[str, np.ndarray]:
        """embed.onnx's inputs for blocks a..b of the page."""
        cfg = self.cfg
        feed = {"features": np.ascontiguousarray(page.features[a:b], dtype=np.float32)}
        if cfg.use_tag_path:
            feed["tag_ids"], feed["tag_owner"], feed["tag_count"] = bag_inputs(*_rows(page.tag_ids, page.tag_offsets,
                                                                                       a, b))
        if cfg.use_text:
            assert page.text_ids is not None and page.text_offsets is not None, "page lacks hash n-grams"
            feed["text_ids"], feed["text_owner"], feed["text_count"] = bag_inputs(
                *_rows(page.text_ids, page.text_offsets, a, b))
        if cfg.use_context and cfg.positional:
            feed["position"] = self._position(a, b)
        return feed

    def _contextualise(self, context: Any, x: np.ndarray) -> np.ndarray:
        """(n, d) -> (n, 2) logits, over overlapping windows past the model's window (as the torch model)."""
        n = len(x)
        w, starts = self.cfg.window, window_starts(n, self.cfg.window, self.cfg.stride)
        if len(starts) == 1 or not self.cfg.use_context:  # (without the Transformer, no windows)
            return context.run(None, {"x": x[None]})[0][0]
        total, count = np.zeros((n, 2), np.float32), np.zeros(n, np.float32)
        for k in range(0, len(starts), CONTEXT_WINDOWS):
            some = starts[k : k + CONTEXT_WINDOWS]
            ys = context.run(None, {"x": np.stack([x[s : s + w] for s in some])})[0]
            for s, y in zip(some, ys, strict=True):
                total[s : s + w] += y
                count[s : s + w] += 1
        return total / count[:, None]


def _rows(ids: np.ndarray, offsets: np.ndarray, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    """The EmbeddingBag input (ids, offsets) of blocks a..b of a page's."""
    start = int(offsets[a]) if a < len(offsets) else len(ids)
    end = int(offsets[b]) if b < len(offsets) else len(ids)
    return ids[start:end], offsets[a:b] - start


def trees_session(folder: str | Path, threads: int = 1) -> _PerProcess | None:
    """The gbt folder's trees.onnx as a per-process session (its digest checked on first use), or None when
    the folder has none or ONNX Runtime is not installed (the NumPy walk then)."""
    path = Path(folder) / TREES
    if not (path.is_file() and runtime_installed()):
        return None
    digest = weights_digest(folder)
    return _PerProcess(lambda: open_session(path, threads, digest))
