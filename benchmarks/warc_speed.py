"""The WARC framing (batch/warc_frames.py) of 20,000 records, in CPU seconds, against another revision's.

    python -m benchmarks.warc_speed                        # a .warc, one gzip member per record, gzipped whole
    python -m benchmarks.warc_speed --against b1a7001      # and that revision's framing, in turn

The records are HTML responses of ~1.2 kB written by `write_warc`, as a crawler writes them. Each round frames
each file once per side (plain_records / gzip_records, process_time; which side goes first alternates), and the
best round is printed. With --against, that revision's warc_frames.py (and warc_streams.py where it has one;
`git show REV:PATH`) is loaded beside this tree's, and the files' chunks (offset, bytes, error) that differ
between the two are counted: on intact files a change meant to be faster only must print 0.
"""

from __future__ import annotations

import gzip
import mmap
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

from benchmarks.common import arguments, in_turn, revision_modules

FRAMES = "src/bodyblocks/batch/warc_frames.py"
STREAMS = "src/bodyblocks/batch/warc_streams.py"
PARAGRAPH = ("This paragraph of page {i} is the body of an article, long enough to be kept by any extractor, and "
             "it goes on for a while so that a record holds a kilobyte of markup like a small real page. ")


def write_files(folder: Path, n: int) -> list[Path]:
    """The n records as a .warc, one gzip member per record, and gzipped whole."""
    from bodyblocks.batch.warc import Response, write_warc

    pages = [Response(f"http://example.org/{i}", f"<html><body><article><p>{PARAGRAPH.format(i=i) * 4}</p>"
                      "</article></body></html>".encode()) for i in range(n)]
    plain, members, whole = folder / "plain.warc", folder / "members.warc.gz", folder / "whole.warc.gz"
    write_warc(plain, pages, gzip=False, requests=False)
    write_warc(members, pages, gzip=True, requests=False)
    whole.write_bytes(gzip.compress(plain.read_bytes(), 6))
    return [plain, members, whole]


def load(rev: str) -> types.ModuleType:
    """Revision `rev`'s warc_frames module (with its warc_streams where it has one)."""
    try:
        subprocess.run(["git", "cat-file", "-e", f"{rev}:{STREAMS}"], check=True, capture_output=True)
    except subprocess.CalledProcessError:
        return revision_modules(rev, (("frames", FRAMES, ()),), "warc_speed")["frames"]
    return revision_modules(rev, (("streams", STREAMS, ()),
                                  ("frames", FRAMES, (("bodyblocks.batch.warc_streams", "streams"),))),
                            "warc_speed")["frames"]


def frame(module: types.ModuleType, path: Path) -> tuple[float, list[tuple[int, bytes | None, str | None]]]:
    """CPU seconds to frame the file, and its chunks."""
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        records = module.gzip_records if path.name.endswith(".gz") else module.plain_records
        start = time.process_time()
        chunks = list(records(mm, 64 << 20))
        return time.process_time() - start, chunks


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, rounds=5)
    ap.add_argument("--records", type=int, default=20_000, help="records in each file (default 20000)")
    ap.add_argument("--against", default=None, help="a git revision whose framing to time beside this tree's")
    args = ap.parse_args(argv)
    from bodyblocks.batch import warc_frames

    sides = {"this tree": warc_frames}
    if args.against:
        sides[args.against] = load(args.against)
    with tempfile.TemporaryDirectory() as tmp:
        files = write_files(Path(tmp), args.records)
        for path in files:
            best = {name: float("inf") for name in sides}
            chunks: dict[str, list[tuple[int, bytes | None, str | None]]] = {}
            for round_ in range(args.rounds):
                for name in in_turn(list(sides), 0, round_):
                    seconds, chunks[name] = frame(sides[name], path)
                    best[name] = min(best[name], seconds)
            pages = sum(raw is not None for _, raw, _ in chunks["this tree"])
            line = f"{path.name} ({path.stat().st_size / 2**20:.1f} MiB, {pages:,} records): " + ", ".join(
                f"{name} {seconds:.3f} s" for name, seconds in best.items())
            if args.against:
                a, b = chunks["this tree"], chunks[args.against]
                differ = sum(x != y for x, y in zip(a, b, strict=False)) + abs(len(a) - len(b))
                line += f"; chunks that differ: {differ}"
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
