"""Weight files' digests kept on disk between processes (integrity.file_sha256), and hashed again once written."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from bodyblocks.classify import integrity


def _forget(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh process's state: no digest in memory, the disk cache not read yet."""
    monkeypatch.setattr(integrity, "_digest_cache", {})
    monkeypatch.setattr(integrity, "_disk", None)


def test_a_large_file_is_hashed_once_and_again_when_it_is_written(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(integrity.ENV_CACHE, str(tmp_path / "cache"))
    weights = tmp_path / "model.safetensors"
    data = os.urandom(integrity.DISK_CACHE_MIN_BYTES + 10)
    weights.write_bytes(data)
    _forget(monkeypatch)
    integrity.file_sha256(weights)
    assert not (tmp_path / "cache" / "sha256.json").exists()  # written just now: not kept (integrity.RACY_NS)
    time.sleep(integrity.RACY_NS / 1e9 + 0.05)
    _forget(monkeypatch)
    assert integrity.file_sha256(weights) == hashlib.sha256(data).hexdigest()
    assert (tmp_path / "cache" / "sha256.json").is_file()

    _forget(monkeypatch)  # another process: the digest comes from the disk, nothing is read
    real = hashlib.sha256
    monkeypatch.setattr(integrity.hashlib, "sha256", lambda: pytest.fail("hashed again"))
    assert integrity.file_sha256(weights) == real(data).hexdigest()

    # 4 KB flipped in place, the same size and mtime put back: its ctime moved, so it is hashed again
    monkeypatch.setattr(integrity.hashlib, "sha256", real)
    st = weights.stat()
    flipped = bytearray(data)
    flipped[1000:5096] = bytes(b ^ 0xFF for b in flipped[1000:5096])
    weights.write_bytes(bytes(flipped))
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert weights.stat().st_mtime_ns == st.st_mtime_ns and weights.stat().st_size == st.st_size
    _forget(monkeypatch)
    assert integrity.file_sha256(weights) == real(bytes(flipped)).hexdigest()


def test_no_digest_is_kept_on_disk_when_the_cache_is_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(integrity.ENV_CACHE, "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"\0" * integrity.DISK_CACHE_MIN_BYTES)
    _forget(monkeypatch)
    integrity.file_sha256(weights)
    assert integrity.digest_cache_path() is None and not (tmp_path / "xdg").exists()


def test_a_cache_file_that_is_not_ours_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(integrity.ENV_CACHE, str(tmp_path))
    (tmp_path / "sha256.json").write_text("[1, 2", encoding="utf-8")
    weights = tmp_path / "w.bin"
    weights.write_bytes(b"\1" * integrity.DISK_CACHE_MIN_BYTES)
    _forget(monkeypatch)
    assert integrity.file_sha256(weights) == hashlib.sha256(weights.read_bytes()).hexdigest()
