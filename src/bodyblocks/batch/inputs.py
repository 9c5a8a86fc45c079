"""The pages a batch run is asked for (stage 1 of run_batch): files, folders, dataset folders, URL lists.

    for job in iter_jobs(["pages/", "one.html", "dataset/", "urls.txt"]): ...

Each page becomes a Job whose key names its output (relative to the output folder, without suffix). Jobs
come lazily and in a stable order; a page that cannot even be found, read from its dataset or captured is a
Job with its error. Keys are made safe (`safe_key`: always a relative path inside the output folder, whatever
a file name or a dataset id holds) and unique within a run (`~2`, `~3` on a collision, e.g. `x.html` and
`x.htm`, or two `index.html` given from two folders; keys.FolderKeys: over the output folder's runs too), so
that no output overwrites another or lands elsewhere. A WARC file (batch/warc.py) gives a Job per HTML
response, keyed `<warc-stem>/<position>`; its other records come as Jobs with `filtered` set (no page: counted,
never written). Every Job also knows its input (`source`, a name unique in the run) and its place among that
input's pages (`position`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from bodyblocks.batch.keys import UniqueKeys, url_key
from bodyblocks.batch.review import REVIEW
from bodyblocks.batch.warc import is_warc, warc_stem

HTML_SUFFIXES = (".html.gz", ".htm.gz", ".html", ".htm")
MAX_SEGMENT_BYTES = 120  # of one path segment of a key (file systems allow 255 bytes a name, suffix included)
# of a whole key, and its folders: deeper or longer ids have their tail folded into one last segment, so that an
# output's path stays far inside PATH_MAX (4,096 bytes) and its folders are made without deep recursion
MAX_KEY_BYTES = 1024
MAX_KEY_DEPTH = 16
MAX_WALK_DEPTH = 100  # folders below an input folder that are walked; a deeper one is a failed entry (too-deep)
# a key's folder segment that ends like an output file is given a "_": "col.txt/inner" beside "col" (col.txt),
# "x.html/y" beside "x" (review pages, .html), "report.json/x": no folder where a file must be
FILE_SUFFIXES = (".txt", ".json", ".md", ".html", ".jsonl", ".parquet", ".lock", ".tmp")
RESERVED_KEYS = frozenset(["report", "report.pages"])  # report.json and report.pages.jsonl are the run's
_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")  # control characters, NUL among them
_SEPARATORS = re.compile(r"[/\\]+")


@dataclass
class Job:
    """One page to extract: where it comes from and the name of its output."""

    key: str  # output path relative to DIR, without suffix ("sub/page", a dataset id, a URL index)
    path: str | None = None  # page file
    html: str | bytes | None = None  # already in memory (captured pages, a WARC record's payload)
    url: str | None = None
    error: str | None = None  # failed before extraction (e.g. capture)
    record_id: str | None = None  # a WARC record's WARC-Record-ID
    charset: str | None = None  # declared outside the page (the HTTP Content-Type), tried strictly first
    # what the page declares (HTTP Content-Language, <html lang>): set by the WARC reader, or by the worker
    language: str | None = None
    truncated: bool = False  # the archive holds only the start of the page (WARC-Truncated)
    source: str = ""  # the input it comes from, a name unique in the run (a columnar shard's prefix)
    position: int = 0  # its place among that input's pages
    filtered: str | None = None  # a WARC record that is no page (request-record, not-html, ...): counted only
    # a page file's (size, mtime in ns) before it is read (stamp): what its report line records, so that a resumed
    # run knows the file changed since and extracts it again
    stamp: tuple[int, int] | None = None
    digest: str | None = None  # of the page file's bytes as the worker read them (provenance.digest)


def stamp(path: str) -> tuple[int, int] | None:
    """A page file's (size, modification time in ns), None when it cannot be looked at."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return info.st_size, info.st_mtime_ns


def printable(text: str) -> str:
    """`text` as valid Unicode: a file name's undecodable bytes (surrogate escapes) become U+FFFD."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a lone surrogate that is no escaped byte
        return text.encode("utf-8", "replace").decode("utf-8")


def safe_key(raw: str) -> str:
    """An output key that names a file inside the output folder, whatever `raw` holds.

    Separators split it into segments; empty, "." and ".." segments are dropped (so "../x", "sub/../../x"
    and "/abs/path" stay inside), control characters become "_", undecodable bytes U+FFFD, and a segment
    longer than MAX_SEGMENT_BYTES is cut and given a hash of the whole so that cut keys stay distinct.
    """
    segments = []
    for part in _SEPARATORS.split(printable(raw)):
        part = _UNSAFE.sub("_", part).strip()
        if part in ("", ".", ".."):
            continue
        data = part.encode("utf-8")
        if len(data) > MAX_SEGMENT_BYTES:
            digest = hashlib.sha1(data).hexdigest()[:10]
            part = data[: MAX_SEGMENT_BYTES - 11].decode("utf-8", "ignore") + "-" + digest
        segments.append(part)
    segments = [s + "_" if i < len(segments) - 1 and s.casefold().endswith(FILE_SUFFIXES) else s
                for i, s in enumerate(segments)]
    key = "/".join(segments) or "_"
    if len(segments) > MAX_KEY_DEPTH or len(key.encode("utf-8")) > MAX_KEY_BYTES:
        key = _folded(segments, key)
    return f"{key}~page" if key in RESERVED_KEYS else key


def _folded(segments: list[str], key: str) -> str:
    """A key too deep or too long (safe_key): its leading folders as far as MAX_KEY_DEPTH and MAX_KEY_BYTES
    allow, then the rest in one last segment, cut and given a hash of the whole key (folded keys stay distinct)."""
    keep, size = 0, 0
    while (keep < min(len(segments) - 1, MAX_KEY_DEPTH - 1)
           and size + len(segments[keep].encode("utf-8")) + 1 <= MAX_KEY_BYTES - MAX_SEGMENT_BYTES):
        size += len(segments[keep].encode("utf-8")) + 1
        keep += 1
    rest = "_".join(segments[keep:]).encode("utf-8")
    digest = hashlib.sha1(key.encode("utf-8")).hexdigest()[:10]
    last = rest[: MAX_SEGMENT_BYTES - 11].decode("utf-8", "ignore") + "-" + digest
    return "/".join([*segments[:keep], last])


def stem_of(path: Path) -> str:
    """File name without .html / .htm / .html.gz."""
    name = path.name
    for suffix in HTML_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def is_url_list(path: Path) -> bool:
    """A file (not named like a page) whose first non-comment lines are mostly URLs and hold no markup: a URL
    list, whatever its name; a line in it that is not a URL becomes a failed page (the capture rejects it)."""
    if path.name.lower().endswith(HTML_SUFFIXES):
        return False
    with open(path, "rb") as fh:
        head = fh.read(1 << 16)
    if head[:2] == b"\x1f\x8b" or b"<" in head:  # gzip, or markup
        return False
    lines = [ln.strip() for ln in head.decode("utf-8", errors="replace").splitlines()[:200]
             if ln.strip() and not ln.lstrip().startswith("#")]
    urls = sum(ln.split(":", 1)[0].lower() in ("http", "https", "file") and " " not in ln for ln in lines)
    return bool(lines) and urls * 2 > len(lines)


def count_pages(inputs: Iterable[str | Path], stop_at: int | None = None, out: str | Path | None = None
                ) -> int | None:
    """How many pages iter_jobs will yield for these inputs, counted cheaply (names and lines, nothing parsed):
    the progress bar's total; None when an input is a WARC file (its pages are known once it is read).
    `stop_at`: stop counting there (whether there are any pages: 1; a WARC file counts 1); `out`: the output
    folder, not walked."""
    total, unknown = 0, False
    for raw in inputs:
        path = Path(raw)
        try:
            if path.is_file() and is_warc(path):
                total += 1
                unknown = stop_at is None
            elif path.is_dir() and (path / "pages.jsonl").exists():
                with open(path / "pages.jsonl", "rb") as fh:
                    total += sum(islice((1 for line in fh if line.strip()), stop_at))
            elif path.is_dir():
                pages = (1 for _ in _folder_entries(path, Path(out) if out is not None else None))
                total += sum(islice(pages, stop_at))
            elif path.is_file() and is_url_list(path):
                from bodyblocks.capture import read_urls

                total += len(read_urls(path))
            else:
                total += 1
        except OSError:
            total += 1
        if stop_at is not None and total >= stop_at:
            return total
    return None if unknown else total


# (a raw key, the job it names or None) -> the job's safe and unique key (keys are handed out in job order)
Name = Callable[[str, Job | None], str]


def iter_jobs(inputs: Iterable[str | Path], capture_opts: dict[str, Any] | None = None,
              done: Callable[[str], bool] | None = None, out: str | Path | None = None,
              follow_symlinks: bool = False, unique: UniqueKeys | None = None) -> Iterator[Job]:
    """Every page named by INPUT arguments, lazily, in a stable order, each with a safe and unique key.

    `done(key)`: whether a page's output exists already (resume); a URL whose page is done is not captured
    again (its Job comes without HTML, to be reported as skipped). `out`: the output folder, never walked as an
    input; `follow_symlinks`: read links under an input folder wherever they lead (_folder_entries); `unique`:
    hands out the keys (keys.FolderKeys: unique over the output folder's runs too), a fresh UniqueKeys if None.
    """
    unique = unique or UniqueKeys()

    def name(raw: str, job: Job | None = None) -> str:
        return unique(safe_key(raw), job)

    for path, source in input_sources(inputs):
        yield from input_jobs(path, source, name, capture_opts, done, out=out, follow_symlinks=follow_symlinks)


def input_sources(inputs: Iterable[str | Path]) -> list[tuple[Path, str]]:
    """Each input with its name in the run (a WARC or page file's stem, a folder's name), made unique."""
    sources = UniqueKeys()
    out = []
    for raw in inputs:
        path = Path(raw)
        stem = warc_stem(path) if path.is_file() and is_warc(path) else path.name if path.is_dir() else stem_of(path)
        out.append((path, sources(safe_key(stem))))
    return out


def input_jobs(path: Path, source: str, name: Name, capture_opts: dict[str, Any] | None = None,
               done: Callable[[str], bool] | None = None, out: str | Path | None = None,
               follow_symlinks: bool = False) -> Iterator[Job]:
    """The jobs of one input (iter_jobs'), each told its source and position."""
    if path.is_file() and is_warc(path):
        jobs = _warc_jobs(path, name, source)
    elif path.is_dir() and (path / "pages.jsonl").exists():
        jobs = _dataset_jobs(path, name, follow_symlinks)
    elif path.is_dir():
        jobs = _folder_jobs(path, name, Path(out) if out is not None else None, follow_symlinks)
    elif path.is_file() and is_url_list(path):
        jobs = _url_jobs(path, capture_opts or {}, name, done)
    else:
        job = Job(key="", path=str(path), error=None if path.is_file() else _missing(path))
        job.key = name(stem_of(path), job)
        jobs = iter([job])
    return _numbered(jobs, source)


def _missing(path: Path) -> str:
    """Why an input that is no file, folder, WARC or list cannot be read: not there, or no regular file (a FIFO
    is never opened: it would block)."""
    return (_not_a_page(path) if os.path.lexists(path) else None) or "not-found: no such file or folder"


def _numbered(jobs: Iterator[Job], source: str) -> Iterator[Job]:
    """The jobs of one input, each told its input and its position among the input's pages (a record that is
    no page: the position the next page takes, so that it is counted with that page's shard)."""
    position = 0
    for job in jobs:
        job.source, job.position = source, position
        position += job.filtered is None
        yield job


def _warc_jobs(path: Path, name: Name, source: str) -> Iterator[Job]:
    """The records of a WARC file (batch/warc.py): a Job per HTML response or unreadable record, keyed
    `<source>/<position>`, and a `filtered` Job for each record that is no page."""
    from bodyblocks.batch.warc import iter_warc  # warcio: imported only for WARC inputs

    position = 0
    try:
        for item in iter_warc(path):
            if item.skip is not None:
                yield Job(key="", url=item.url, record_id=item.record_id, filtered=item.skip)
                continue
            job = Job(key="", path=str(path), html=item.body, url=item.url, error=item.error,
                      record_id=item.record_id, charset=item.charset, language=item.language, truncated=item.truncated)
            job.key = name(f"{source}/{position:07d}", job)
            yield job
            position += 1
    except OSError as exc:  # the file cannot be opened or read: a failed page, not a failed run
        key = name(f"{source}/{position:07d}", None)
        yield Job(key=key, path=str(path), error=f"unreadable: {exc.strerror or exc}")


def _folder_jobs(root: Path, name: Name, out: Path | None = None, follow_symlinks: bool = False) -> Iterator[Job]:
    """The page files under a folder, by path; keys mirror their paths relative to it.

    What looks like a page but cannot be one is a failed page with its reason, not an omission: a symbolic link
    out of the folder (unless `follow_symlinks`), a dangling link, a FIFO, socket or device (never opened: a FIFO
    would block), a folder that cannot be listed or lies too deep (_folder_entries, which leaves `out` out).
    """
    found: list[tuple[Path, Job]] = []  # sorted as paths (by their parts), as the jobs always came
    for path, error in _folder_entries(root, out, follow_symlinks):
        if error is not None and not path.name.lower().endswith(HTML_SUFFIXES):  # a folder
            key = str(path.relative_to(root)) if path != root else root.name
        else:
            rel = path.relative_to(root)
            key = str(rel.parent / stem_of(path)) if rel.parent != Path(".") else stem_of(path)
        found.append((path, Job(key=key, path=str(path), error=error or _not_a_page(path))))
    for _, job in sorted(found, key=lambda item: item[0]):
        job.key = name(job.key, job)
        yield job


def _folder_entries(root: Path, out: Path | None = None, follow_symlinks: bool = False
                    ) -> Iterator[tuple[Path, str | None]]:
    """Every page-named entry under a folder, with why it is no page to read (None: read it), and every folder
    that cannot be walked, with why; walked with a stack, not recursion, in no particular order.

    The rule for symbolic links: a linked folder is never walked (no loops); a linked page is read only when it
    resolves to a file inside the named folder, else it fails as `outside-input` (`follow_symlinks`: read
    wherever it leads). The output folder `out` and its review folder are never walked (a run's outputs and
    review pages are not read back as inputs by the next, whatever the format, --out IN included). A folder
    more than MAX_WALK_DEPTH levels down fails as `too-deep`.
    """
    base = root.resolve()
    # the output folder, and its review folder (with --out IN, the output folder is the root: never skipped)
    skip = {i for i in (_identity(out), _identity(out and out / REVIEW)) if i is not None}
    inodes = {i[1] for i in skip}  # known from the listing: a folder is stat'ed only when its inode is one
    stack = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError as exc:
            yield folder, f"unreadable: {exc.strerror or exc}"
            continue
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                if is_dir and entry.inode() in inodes and _identity(entry) in skip:
                    continue
            except OSError:
                is_dir = False
            if is_dir and depth >= MAX_WALK_DEPTH:
                yield (folder / entry.name,
                       f"too-deep: more than {MAX_WALK_DEPTH} folders below {printable(str(root))}, not walked")
            elif is_dir:
                stack.append((folder / entry.name, depth + 1))
            elif entry.name.lower().endswith(HTML_SUFFIXES):
                path = folder / entry.name
                yield path, None if follow_symlinks or not entry.is_symlink() else _link_out(path, base)


def _identity(where: Path | os.DirEntry | None) -> tuple[int, int] | None:
    """(device, inode) of a folder, to know it however it is spelled; None when there is none."""
    if where is None:
        return None
    try:
        st = where.stat(follow_symlinks=False) if isinstance(where, os.DirEntry) else os.stat(where)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _link_out(path: Path, base: Path) -> str | None:
    """Why a symbolic link under the input folder BASE (resolved) is not read: it leads out of it; None when it
    stays inside."""
    target = os.path.realpath(path)
    if Path(target).is_relative_to(base):
        return None
    return (f"outside-input: a symbolic link to {printable(target)}, outside {printable(str(base))} "
            "(--follow-symlinks reads it)")


def _not_a_page(path: Path) -> str | None:
    """Why a page-named directory entry cannot be read as a page, or None when it is a regular file."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "not-found: a dangling symbolic link"
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    if stat.S_ISREG(mode):
        return None
    kind = "FIFO" if stat.S_ISFIFO(mode) else "socket" if stat.S_ISSOCK(mode) else "device" if (
        stat.S_ISCHR(mode) or stat.S_ISBLK(mode)) else "folder" if stat.S_ISDIR(mode) else "special file"
    return f"not-a-file: a {kind}, not a page file"


def _dataset_jobs(folder: Path, name: Name, follow_symlinks: bool = False) -> Iterator[Job]:
    """Pages of a folder in the shared dataset layout, named by their ids; a record that cannot be used (not
    JSON, nested too deep to decode, no id, no html path, or a path that leads out of the dataset folder, by
    its name or, unless `follow_symlinks`, by a symbolic link) is a failed page."""
    base = folder.resolve()
    with open(folder / "pages.jsonl", encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                job = _dataset_job(folder, base, n, line, follow_symlinks)
                job.key = name(job.key, job)
                yield job


def _dataset_job(folder: Path, base: Path, n: int, line: str, follow_symlinks: bool = False) -> Job:
    """One pages.jsonl line (number `n`) as a Job."""
    where = f"pages.jsonl line {n}"
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as exc:
        return Job(key=f"pages.jsonl-line-{n}", error=f"bad-record: {where} is not JSON ({exc.msg})")
    except RecursionError:  # e.g. 100,000 nested [
        return Job(key=f"pages.jsonl-line-{n}", error=f"bad-record: {where} is nested too deeply to decode")
    if not isinstance(rec, dict) or rec.get("id") in (None, ""):
        return Job(key=f"pages.jsonl-line-{n}", error=f"bad-record: {where} has no id")
    key, html = str(rec["id"]), rec.get("html")
    if not isinstance(html, str) or not html:
        return Job(key=key, error=f"bad-record: {where} has no html path")
    if "\0" in html:
        return Job(key=key, error=f"bad-record: {where} has a NUL byte in its html path")
    path = folder / html
    # by its name (../../etc/passwd, an absolute path), or through a symbolic link unless they are followed
    lands = os.path.normpath(base / html) if follow_symlinks else os.path.realpath(path)
    if not Path(lands).is_relative_to(base):
        return Job(key=key, error=f"outside-dataset: {where} points out of {folder}: {printable(html)}")
    url = rec.get("url")
    return Job(key=key, path=str(path), url=url if isinstance(url, str) else None)


def _url_jobs(path: Path, capture_opts: dict[str, Any], name: Name,
              done: Callable[[str], bool] | None) -> Iterator[Job]:
    """Render URLs in headless Chromium (bodyblocks.capture); a failed capture is a failed page, and so is a line
    that is no http(s) URL (file:///etc/passwd, a line that is not UTF-8: never captured); a URL whose page is
    done already (resume) is not captured again. Keys are named from the URLs (url_key: host and path, made
    safe and unique); a line that is no http(s) URL is keyed by its position in the list."""
    from bodyblocks.capture import capture, read_urls  # Selenium: imported only for URL lists
    from bodyblocks.capture.urls import _rejection

    urls = read_urls(path)
    keys = [name(url_key(url) or f"{i:06d}", None) for i, url in enumerate(urls)]
    rejected = {i: reason for i, url in enumerate(urls) if (reason := _rejection(url)) is not None}
    todo = [i for i in range(len(urls)) if i not in rejected and not (done is not None and done(keys[i]))]

    def between(start: int, stop: int) -> Iterator[Job]:  # the rejected and done ones, in the list's order
        for j in range(start, stop):
            bad = rejected.get(j)
            yield Job(key=keys[j], url=urls[j], error=f"bad-url: {bad}" if bad else None)

    position = 0  # the next URL to yield a Job for
    for page in capture([urls[i] for i in todo], **capture_opts) if todo else ():
        i = todo[page.index]
        yield from between(position, i)
        position = i + 1
        if page.ok:
            yield Job(key=keys[i], html=page.html, url=page.final_url or page.url)
        else:
            yield Job(key=keys[i], url=page.url, error=f"capture-{page.status}: {page.error}")
    yield from between(position, len(urls))
