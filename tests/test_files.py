"""files.write_atomic and atomic_path: what lands on disk, and what is left when a write cannot be done."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bodyblocks.runtime.files import atomic_path, write_atomic


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_text_is_written_as_a_utf8_text_file(tmp_path: Path) -> None:
    text = "Zoë's café\nsecond line\n\u4e2d\u6587 \U0001f600\n"
    write_atomic(tmp_path / "a.txt", text)
    with open(tmp_path / "b.txt", "w", encoding="utf-8") as fh:  # what a text file of the same text holds
        fh.write(text)
    assert (tmp_path / "a.txt").read_bytes() == (tmp_path / "b.txt").read_bytes()
    assert _listing(tmp_path) == ["a.txt", "b.txt"]  # no temporary file left


def test_bytes_and_str_targets_and_replacing(tmp_path: Path) -> None:
    write_atomic(str(tmp_path / "x.bin"), b"\x00\xff" * 70_000)  # more than one pipe-sized write
    assert (tmp_path / "x.bin").read_bytes() == b"\x00\xff" * 70_000
    write_atomic(tmp_path / "x.bin", "")
    assert (tmp_path / "x.bin").read_bytes() == b""
    assert _listing(tmp_path) == ["x.bin"]


def test_a_missing_folder_is_made(tmp_path: Path) -> None:
    write_atomic(tmp_path / "sub" / "deeper" / "p.txt", "body")
    assert (tmp_path / "sub" / "deeper" / "p.txt").read_text(encoding="utf-8") == "body"
    assert _listing(tmp_path) == ["sub", "sub/deeper", "sub/deeper/p.txt"]


def test_a_file_where_the_folder_should_be_raises_as_the_folder_would(tmp_path: Path) -> None:
    (tmp_path / "col").write_text("a file", encoding="utf-8")
    with pytest.raises(FileExistsError):  # Path.mkdir's error: the folder cannot be made
        write_atomic(tmp_path / "col" / "p.txt", "body")
    assert _listing(tmp_path) == ["col"]


def test_a_folder_where_the_file_should_be_is_left_and_no_temporary_file_stays(tmp_path: Path) -> None:
    (tmp_path / "p.txt").mkdir()
    with pytest.raises(IsADirectoryError) as raised:
        write_atomic(tmp_path / "p.txt", "body")
    assert str(raised.value).endswith(f"-> '{tmp_path / 'p.txt'}'")  # os.replace's error, both names in it
    assert _listing(tmp_path) == ["p.txt"]


def test_unencodable_text_raises_and_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(UnicodeEncodeError):
        write_atomic(tmp_path / "p.txt", "lone \ud800 surrogate")
    assert _listing(tmp_path) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into any folder")
def test_a_folder_that_takes_no_file(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(PermissionError):
            write_atomic(locked / "p.txt", "body")
    finally:
        locked.chmod(0o700)
    assert _listing(tmp_path) == ["locked"]


def test_atomic_path_removes_its_temporary_file_when_the_block_raises(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), atomic_path(tmp_path / "r.json") as tmp:
        tmp.write_text("half", encoding="utf-8")
        raise RuntimeError("stopped")
    assert _listing(tmp_path) == []
    with atomic_path(tmp_path / "r.json") as tmp:
        tmp.write_text("whole", encoding="utf-8")
    assert _listing(tmp_path) == ["r.json"]
    assert (tmp_path / "r.json").read_text(encoding="utf-8") == "whole"
