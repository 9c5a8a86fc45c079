"""What a checkpoint folder must prove before anything is built from it: a config.json that is a JSON object
with the settings its kind needs, weight files that are the ones it was made with, and settings that agree
with the weights' shapes.

    meta = read_config(folder / "config.json")        # a JSON object, or one line that says what is wrong
    verify_files(folder, meta)                         # each file's SHA-256 against meta["sha256"]
    cfg = model_config(folder, meta)                   # meta["model"] as a ModelConfig
    check_shapes(folder, cfg)                          # cfg against model.safetensors' header (no torch)
    record_files(folder, ["model.safetensors"])        # at save / export: the digests into config.json
    stale_inputs(folder, meta)                         # None, or one line: made with another segmenter or features

config.json records `"sha256": {"model.safetensors": ..., "embed.onnx": ..., "context.onnx": ...}` (a gbt
folder: model.safetensors and trees.onnx), written when the weights are saved (model.py, gbt.py) and when they
are exported (training/export.py). A recorded file whose bytes have another digest is refused (a damaged or
tampered file: 4 KB of context.onnx flipped, its metadata kept, loaded silently and changed the results);
folders written before the record have none and are checked as they were. A large file's digest is kept on
disk (file_sha256, digest_cache_path) for as long as the file is not written to: a command's start hashes
nothing. The shapes are read from the safetensors header (JSON, a few KB) and compared with what the config
implies before a model is built: a config that contradicts its weights (d_model 4096 against 256) is refused at
load, where ONNX Runtime failed on every page and torch allocated 5.85 GB first. Every refusal is a
CheckpointError (a ValueError): one line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from bodyblocks.config import ModelConfig, from_dict

DIGESTS = "sha256"  # config.json's key: file name -> SHA-256 (hex) of each weight file of the folder
WEIGHTS = "model.safetensors"
MAX_HEADER_BYTES = 100 * 2**20  # a safetensors header larger than this is no header of ours
_HEX64 = re.compile(r"[0-9a-f]{64}")
# (path, device, inode, size, mtime_ns, ctime_ns) -> digest, this process
_digest_cache: dict[tuple[str, int, int, int, int, int], str] = {}
# Files this large or larger have their digests kept on disk too (digest_cache_path), under the same key: hashing
# the shipped ensemble's weight files (46 MB) cost ~0.1 s of every command's start, before any page. A file
# written since (its size, mtime or ctime changed: any write changes the ctime, which no user can set back) is
# hashed again, so a damaged or tampered file is still refused.
DISK_CACHE_MIN_BYTES = 1 << 20
# a file changed this recently is not kept: a write in the same tick of the file system's clock (a few ms) would
# leave its times as they were (git's "racily clean" entries)
RACY_NS = 100_000_000
DISK_CACHE_ENTRIES = 64  # files whose digests the disk cache keeps (the last hashed)
ENV_CACHE = "BODYBLOCKS_CACHE"  # the folder of bodyblocks' caches; "off": no digest kept on disk
_disk: dict[str, list[Any]] | None = None  # the disk cache as read (path -> [device, inode, size, mtime, ctime, hex])


class CheckpointError(ValueError):
    """A checkpoint folder that cannot be used as it is (the message says what, on one line)."""


def read_config(path: str | Path) -> dict[str, Any]:
    """A checkpoint's config.json as a dict; CheckpointError for a file that is not JSON, is nested past what a
    config is, or is not a JSON object."""
    path = Path(path)
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path} is not valid JSON ({exc})") from None
    except RecursionError:
        raise CheckpointError(f"{path} is nested too deeply to be a checkpoint's config") from None
    if not isinstance(meta, dict):
        raise CheckpointError(f"{path} holds a JSON {type(meta).__name__}, not the object of a checkpoint's config")
    return meta


def checkpoint_kind(folder: str | Path, meta: Mapping[str, Any], kinds: tuple[str, ...]) -> str:
    """config.json's "kind", one of `kinds` (a folder written before the kind was recorded: the first of them, the
    model); CheckpointError for any other."""
    kind = meta.get("kind", kinds[0])
    if not isinstance(kind, str) or kind not in kinds:
        raise CheckpointError(f"{folder}: unknown checkpoint kind {kind!r}")
    return kind


def digest_cache_path() -> Path | None:
    """The file of digests kept between processes: $BODYBLOCKS_CACHE/sha256.json, else
    $XDG_CACHE_HOME/bodyblocks/ (~/.cache/bodyblocks/); None when $BODYBLOCKS_CACHE is "off"."""
    folder = os.environ.get(ENV_CACHE)
    if folder == "off":
        return None
    if not folder:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = os.path.join(base, "bodyblocks")
    return Path(folder) / "sha256.json"


def _read_disk_cache(where: Path) -> dict[str, list[Any]]:
    global _disk
    if _disk is None:
        try:
            loaded = json.loads(where.read_text(encoding="utf-8"))
            _disk = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError, RecursionError):  # none yet, unreadable, or not ours: hashed as without it
            _disk = {}
    return _disk


def _write_disk_cache(where: Path, name: str, entry: list[Any]) -> None:
    """Add a digest to the disk cache (written atomically; a cache that cannot be written is left as it is)."""
    cache = _read_disk_cache(where)
    cache.pop(name, None)
    cache[name] = entry  # the newest last; the oldest dropped past DISK_CACHE_ENTRIES
    for old in list(cache)[:-DISK_CACHE_ENTRIES]:
        del cache[old]
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        tmp = where.with_name(f".{where.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache), encoding="utf-8")
        os.replace(tmp, where)
    except OSError:
        pass


def file_sha256(path: str | Path) -> str:
    """SHA-256 (hex) of a file, computed once per process for the same file (its place, device, inode, size,
    mtime and ctime); a file of DISK_CACHE_MIN_BYTES or more once for as long as it is not written to
    (digest_cache_path keeps its digest under the same key)."""
    st = os.stat(path)
    name = str(Path(path).resolve())
    key = (name, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if key in _digest_cache:
        return _digest_cache[key]
    where = digest_cache_path() if st.st_size >= DISK_CACHE_MIN_BYTES else None
    if where is not None:
        kept = _read_disk_cache(where).get(name)
        if isinstance(kept, list) and kept[:-1] == list(key[1:]) and isinstance(kept[-1], str) \
                and _HEX64.fullmatch(kept[-1]):
            _digest_cache[key] = kept[-1]
            return kept[-1]
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    _digest_cache[key] = digest = h.hexdigest()
    if where is not None and time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > RACY_NS:
        _write_disk_cache(where, name, [*key[1:], digest])
    return digest


def recorded_digests(folder: str | Path, meta: Mapping[str, Any]) -> dict[str, str]:
    """config.json's file digests (empty for a folder written before they were recorded)."""
    recorded = meta.get(DIGESTS)
    if recorded is None:
        return {}
    where = Path(folder) / "config.json"
    if not isinstance(recorded, dict):
        raise CheckpointError(f"{where}: {DIGESTS!r} must be an object of file name -> SHA-256")
    for name, digest in recorded.items():
        if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
            raise CheckpointError(f"{where}: {DIGESTS!r} names {name!r}, not a file of the folder")
        if not isinstance(digest, str) or not _HEX64.fullmatch(digest):
            raise CheckpointError(f"{where}: {DIGESTS!r} of {name} is not a SHA-256 in hex")
    return dict(recorded)


def verify_files(folder: str | Path, meta: Mapping[str, Any], names: Iterable[str] | None = None) -> None:
    """Refuse a weight file whose SHA-256 is not the one config.json records (`names`: only these files; a
    recorded file that is not there is left to its loader, which says so if it needs it)."""
    folder = Path(folder)
    recorded = recorded_digests(folder, meta)
    for name, digest in recorded.items():
        if names is not None and name not in names:
            continue
        path = folder / name
        if path.is_file() and file_sha256(path) != digest:
            raise CheckpointError(f"{path} is not the file its config.json records (SHA-256 differs): it was "
                                  "changed or damaged; reinstall the checkpoint, or export it again")


def record_files(folder: str | Path, names: Iterable[str], drop: Iterable[str] = ()) -> None:
    """Record the SHA-256 of the folder's files `names` in its config.json (written atomically), forgetting
    those of `drop` (files removed with the weights they were made from)."""
    from bodyblocks.runtime.files import write_json

    folder = Path(folder)
    meta = read_config(folder / "config.json")
    recorded = {k: v for k, v in recorded_digests(folder, meta).items() if k not in set(drop)}
    for name in names:
        recorded[name] = file_sha256(folder / name)
    meta[DIGESTS] = dict(sorted(recorded.items()))
    write_json(folder / "config.json", meta)


def model_config(folder: str | Path, meta: Mapping[str, Any]) -> ModelConfig:
    """A model folder's settings (config.json "model") as a ModelConfig; CheckpointError when they are missing
    or not an object (the ConfigError of a bad value says which)."""
    settings = meta.get("model")
    if not isinstance(settings, dict):
        what = "has no" if settings is None else f"has a {type(settings).__name__} for its"
        raise CheckpointError(f"{Path(folder) / 'config.json'} {what} \"model\" object (the model's settings): "
                              "not a model checkpoint's config")
    try:
        return from_dict(ModelConfig, settings, prefix="model.")
    except (TypeError, AttributeError) as exc:
        raise CheckpointError(f"{Path(folder) / 'config.json'}: bad model settings ({exc})") from None


RULE_KEYS = ("threshold", "confident", "rescue")


def check_rule(folder: str | Path, meta: Mapping[str, Any], required: Iterable[str] = ()) -> None:
    """The decision rule's values of a config.json: threshold, confident, rescue numbers in [0, 1] (confident
    and rescue may be null), container null or three or five numbers; `required`: keys that must be there."""
    where = Path(folder) / "config.json"
    for key in required:
        if key not in meta:
            raise CheckpointError(f"{where} has no {key!r}")
    for key in RULE_KEYS:
        value = meta.get(key)
        if value is None and (key != "threshold" or key not in meta):
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
            raise CheckpointError(f"{where}: {key!r} must be a number between 0 and 1, not {value!r}")
    box = meta.get("container")
    if box is not None and not (isinstance(box, list) and len(box) in (3, 5) and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in box)):
        raise CheckpointError(f"{where}: 'container' must be null or three or five numbers (share, inside, outside"
                              f"[, core, core_share]), not {box!r}")


ENSEMBLE_FORMAT = 1  # of an ensemble folder's config.json


def check_ensemble_config(folder: str | Path, meta: Mapping[str, Any]) -> None:
    """The settings an ensemble folder's config.json must hold: kind and format, its two parts as paths relative to
    it, the blend's weights as numbers and the rule's values (check_rule)."""
    path = Path(folder)
    if meta.get("kind") != "ensemble" or meta.get("format_version") != ENSEMBLE_FORMAT:
        raise ValueError(f"{path}: not an ensemble folder of format {ENSEMBLE_FORMAT}")
    for part in ("model", "gbt"):
        if not isinstance(meta.get(part), str) or not meta[part]:
            raise CheckpointError(f"{path / 'config.json'}: {part!r} must name the {part} folder (a path "
                                  f"relative to it), not {meta.get(part)!r}")
    for key in ("weight", "heuristic"):
        if key in meta and (isinstance(meta[key], bool) or not isinstance(meta[key], int | float)):
            raise CheckpointError(f"{path / 'config.json'}: {key!r} must be a number, not {meta[key]!r}")
    check_rule(path, meta)


def check_gbt_config(folder: str | Path, meta: Mapping[str, Any]) -> None:
    """The settings a gbt folder's config.json must hold: the "gbt" object, the baseline log-odds, the depth and
    the rule's values (check_rule)."""
    where = Path(folder) / "config.json"
    if not isinstance(meta.get("gbt"), dict):
        raise CheckpointError(f"{where} has no \"gbt\" object (the trees' settings): not a gbt checkpoint's config")
    baseline, depth = meta.get("baseline"), meta.get("depth")
    if isinstance(baseline, bool) or not isinstance(baseline, int | float):
        raise CheckpointError(f"{where}: 'baseline' must be a number, not {baseline!r}")
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise CheckpointError(f"{where}: 'depth' must be a whole number, not {depth!r}")
    check_rule(folder, meta, required=("threshold", "confident"))


def safetensors_shapes(path: str | Path) -> dict[str, list[int]]:
    """Tensor name -> shape from a safetensors file's header (its first 8 + n bytes), without reading weights."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
            size = struct.unpack("<Q", head)[0] if len(head) == 8 else -1
            if not 0 < size <= MAX_HEADER_BYTES:
                raise CheckpointError(f"{path}: not a safetensors file (header of {size} bytes)")
            header = json.loads(fh.read(size))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        raise CheckpointError(f"{path}: not a safetensors file (its header is no JSON object)") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: not a safetensors file (its header is no JSON object)")
    shapes = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        shape = info.get("shape") if isinstance(info, dict) else None
        if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
            raise CheckpointError(f"{path}: tensor {name!r} has no valid shape in the header")
        shapes[name] = shape
    return shapes


def expected_shapes(cfg: ModelConfig) -> dict[str, list[int]]:
    """The shapes that the settings give the block Transformer's tensors whose shapes follow from them alone
    (classify/model.BlockClassifier): its input and output layers, text and tag-path tables, context norm."""
    d, enc = cfg.d_model, cfg.encoder
    in_dim = (enc.dim if cfg.use_text else 0) + (cfg.tag_dim if cfg.use_tag_path else 0) + cfg.block_columns
    out = {"embed.0.weight": [d, in_dim], "embed.0.bias": [d], "embed.3.weight": [d, d], "embed.4.weight": [d],
           "head.0.weight": [d, d], "head.3.weight": [2, d], "head.3.bias": [2]}
    if cfg.use_text:
        out["text_norm.weight"] = [enc.dim]
        if not enc.frozen:
            out["hash.bag.weight"] = [enc.buckets, enc.dim]
    if cfg.use_tag_path:
        out["tags.weight"] = [cfg.tag_buckets, cfg.tag_dim]
    if cfg.use_context:
        out["context.norm.weight"] = [d]
    return out


_LAYER = re.compile(r"context\.layers\.(\d+)\.")


def check_shapes(folder: str | Path, cfg: ModelConfig) -> None:
    """Refuse a model folder whose settings contradict its weights' shapes (read from the header only, before
    anything is built): each tensor expected_shapes names, and the number of context layers."""
    path = Path(folder) / WEIGHTS
    shapes = safetensors_shapes(path)
    for name, want in expected_shapes(cfg).items():
        got = shapes.get(name)
        if got != want:
            said = "is not there" if got is None else f"is {got}"
            raise CheckpointError(f"{Path(folder) / 'config.json'} does not match {path.name}: tensor {name} "
                                  f"{said}, the settings (d_model {cfg.d_model}, ...) make it {want}")
    layers = {int(m.group(1)) for name in shapes if (m := _LAYER.match(name))}
    want_layers = cfg.n_layers if cfg.use_context else 0
    if len(layers) != want_layers:
        raise CheckpointError(f"{Path(folder) / 'config.json'} does not match {path.name}: {len(layers)} context "
                              f"layers in the weights, n_layers {want_layers} in the settings")


def check_model_folder(folder: str | Path, meta: Mapping[str, Any], files: Iterable[str] | None = None
                       ) -> ModelConfig:
    """Everything a model folder must prove before it is built (module docstring): its settings, returned."""
    cfg = model_config(folder, meta)
    verify_files(folder, meta, files)
    check_shapes(folder, cfg)
    return cfg


def block_inputs() -> dict[str, str]:
    """What a learned part reads of the code: the segmenter's version (its blocks) and a digest of the block
    features' names. Training records them in a checkpoint's config.json (`made_with`, with the labels' version)."""
    from bodyblocks.page.features import FEATURE_NAMES
    from bodyblocks.page.segment import SEGMENTER_VERSION

    features = hashlib.sha256("|".join(FEATURE_NAMES).encode()).hexdigest()[:12]
    return {"segmenter": SEGMENTER_VERSION, "features": features}


def stale_inputs(folder: str | Path, meta: Mapping[str, Any]) -> str | None:
    """One line when a checkpoint records what it was made with (`made_with`) and this code segments pages or
    describes blocks otherwise (the part then reads blocks it never saw in training); None when they agree or the
    checkpoint records nothing."""
    made = meta.get("made_with")
    if not isinstance(made, Mapping):
        return None
    differ = [f"{key} {made.get(key)!r} (this code: {now!r})" for key, now in block_inputs().items()
              if str(made.get(key)) != now]
    if not differ:
        return None
    return f"{folder}: made with {', '.join(differ)}: its scores may be off; rebuild it (bodyblocks build)"
