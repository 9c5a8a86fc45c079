"""A frozen text encoder's vectors for many block texts, computed once per distinct text into its disk cache.

    done = embed_texts(make_encoder(cfg.model.encoder), texts, chunk=20_000)   # `bodyblocks data embed`

Training and evaluation with a frozen encoder (e5-small, any Hugging Face encoder) read vectors from the
encoder's cache (encoders.EmbeddingCache) and compute the missing ones on the spot; filling the cache first,
on a GPU or in a background run, keeps that cost out of the training loop. The distinct texts are taken in
chunks, each stored before the next starts, so a run that is stopped resumes where it was.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bodyblocks.classify.encoders import text_key
from bodyblocks.config import Config, ConfigError, EncoderConfig


def cached_frozen_encoder(cfg: Config, where: str) -> EncoderConfig:
    """cfg's text encoder, which must be a frozen one with its vector cache on (`where`: the config, for the error)."""
    enc = cfg.model.encoder
    if not (cfg.model.use_text and enc.frozen and enc.cache):
        raise ConfigError(f"{where}: model.encoder must be a frozen encoder with its cache on "
                          f"(kind {enc.kind!r}, cache {enc.cache})")
    return enc


@dataclass
class Embedded:
    """What embed_texts did."""

    distinct: int  # distinct texts as the encoder reads them (prefixed, cut to max_chars)
    cached: int  # of those, already in the cache
    computed: int  # computed by this call
    seconds: float  # spent computing


def embed_texts(encoder: Any, texts: Sequence[str], chunk: int = 20_000,
                progress: Callable[[str], None] | None = None) -> Embedded:
    """Put the vector of every distinct text of `texts` into the frozen `encoder`'s cache (which it must have)."""
    if getattr(encoder, "cache", None) is None:
        raise ValueError(f"encoder {getattr(encoder, 'id', encoder)!r} has no cache to fill")
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1, got {chunk}")
    by_key: dict[bytes, str] = {}
    for t in texts:  # keyed as FrozenEncoder.encode keys them, so that its lookups hit
        by_key.setdefault(text_key(encoder.prefix + t[: encoder.max_chars]), t)
    keys = sorted(by_key)
    have = encoder.cache.known(keys)
    todo = [by_key[k] for k in keys if k not in have]
    todo.sort(key=len)  # chunks of similar lengths batch with little padding
    start, computed = time.perf_counter(), 0
    for i in range(0, len(todo), chunk):
        part = todo[i : i + chunk]
        encoder.encode(part)  # computes what is missing and stores it
        computed += len(part)
        if progress is not None:
            rate = computed / max(time.perf_counter() - start, 1e-9)
            progress(f"{computed} of {len(todo)} texts computed ({rate:.0f} texts/s)")
    return Embedded(len(keys), len(have), computed, time.perf_counter() - start)
