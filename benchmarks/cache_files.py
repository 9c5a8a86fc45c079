"""The benchmarks' caches in a plain format: gzipped JSON that any reader can open, and that loads no code.

    write_cached(path, value)   value: None, bool, int, float, str, list, tuple, dict, numpy arrays and scalars,
                                and the package's Document, Block and Metadata (a fold part's segmented page)
    read_cached(path)           the same value back: tuples stay tuples, arrays keep their dtype and shape, a float
                                keeps every bit (JSON's shortest repr round-trips), NaN and infinities included
    parts_file(run, source)     where a benchmarks.loso_blend run keeps fold SOURCE's parts

A value the format does not know is refused when written (TypeError), never stored half. Imports no benchmark
script: loso_blend, loso_replay, role_ablation, convention_loso and vote_split read and write through it.
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bodyblocks.page.metadata import Metadata
from bodyblocks.runtime.files import write_atomic
from bodyblocks.types import Block, Document

SUFFIX = ".json.gz"
# the dataclasses a cache may hold, by name: a file names one of these, never a module to import
_CLASSES: dict[str, type] = {c.__name__: c for c in (Document, Block, Metadata)}
_TAGS = ("__tuple__", "__dict__", "__float__", "__ndarray__", "__numpy__", "__dataclass__")


def parts_file(run: Path, source: str) -> Path:
    """A loso_blend run's cache of fold `source`'s parts (each test page's P(body) of the fold's model and trees, the
    vote and the segmented page)."""
    return run / "parts" / f"{source}{SUFFIX}"


def _float(x: float) -> float | dict[str, str]:
    return x if math.isfinite(x) else {"__float__": repr(x)}


def encode(value: Any) -> Any:
    """A JSON-ready form of `value` (decode inverts it)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise TypeError(f"an array of dtype {value.dtype} has no plain form")
        flat = value.ravel().tolist()
        if value.dtype.kind == "f":
            flat = [x if math.isfinite(x) else repr(x) for x in flat]
        return {"__ndarray__": value.dtype.str, "shape": list(value.shape), "values": flat}
    if isinstance(value, np.generic):
        if value.dtype.kind not in "biuf":
            raise TypeError(f"a numpy {value.dtype} has no plain form")
        return {"__numpy__": value.dtype.str, "value": encode(value.item())}
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) and not k.startswith("__") for k in value):
            return {k: encode(v) for k, v in value.items()}
        return {"__dict__": [[encode(k), encode(v)] for k, v in value.items()]}
    if is_dataclass(value) and _CLASSES.get(type(value).__name__) is type(value):
        return {"__dataclass__": type(value).__name__,
                "fields": {f.name: encode(getattr(value, f.name)) for f in fields(value)}}
    raise TypeError(f"{type(value).__name__} has no plain form in a benchmark cache")


def decode(data: Any) -> Any:
    """The value `encode` gave `data` for."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    tag = next((k for k in data if k in _TAGS), None)
    if tag is None:
        return {k: decode(v) for k, v in data.items()}
    if tag == "__tuple__":
        return tuple(decode(v) for v in data[tag])
    if tag == "__dict__":
        return {_hashable(decode(k)): decode(v) for k, v in data[tag]}
    if tag == "__float__":
        return float(data[tag])
    if tag == "__ndarray__":
        values = [float(x) if isinstance(x, str) else x for x in data["values"]]
        return np.array(values, dtype=np.dtype(data[tag])).reshape(data["shape"])
    if tag == "__numpy__":
        return np.dtype(data[tag]).type(decode(data["value"]))
    cls = _CLASSES[data[tag]]
    return cls(**{k: decode(v) for k, v in data["fields"].items()})


def _hashable(key: Any) -> Any:
    if isinstance(key, list | dict):
        raise ValueError(f"a cache's dict key decoded to a {type(key).__name__}")
    return key


def write_cached(path: Path, value: Any) -> None:
    """`value` to `path` as gzipped JSON, atomically (a reader never sees half a file)."""
    text = json.dumps(encode(value), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    write_atomic(path, gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0))


def read_cached(path: Path) -> Any:
    """The value `write_cached` wrote to `path`."""
    return decode(json.loads(gzip.decompress(path.read_bytes()).decode("utf-8")))
