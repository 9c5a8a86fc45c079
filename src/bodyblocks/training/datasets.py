"""Dataset readers: the shared layout (pages.jsonl + html/ + gold/ + labels/) and plain folders of pairs.

The shared layout is the project's own dataset format (see ../shared/datasets/README.md): one JSON record
per page in `pages.jsonl` naming a gzip HTML file, a gold text file, snippets and an L3S annotated copy.
A plain folder holds `name.html` (or `.htm`, `.html.gz`) with an optional `name.txt` gold text.
Label alignment lives in labels.py, splits in splits.py, the processed cache in cache.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from bodyblocks.errors import InputError
from bodyblocks.page.decode import read_bytes
from bodyblocks.runtime.files import ENV_DATASETS, datasets_root, datasets_root_path
from bodyblocks.training.annotations import Annotation, AnnotationError, read_annotation
from bodyblocks.types import Page

PAGE_SUFFIXES = (".html.gz", ".htm.gz", ".html", ".htm")
ANNOTATIONS = "annotations"  # a dataset's folder of people's block labels (annotate/store.py)


class GoldConvention(NamedTuple):
    """What a source's gold text holds besides the body (evaluation scores those lines with the body there)."""

    title: bool = False  # the page's headline, as its first line
    byline: bool = False  # the byline/dateline next to the headline ("By …, May 3, 2005")
    standfirst: bool = False  # the standfirst (dek): the summary paragraph under the headline
    captions: bool = False  # the article's figure captions and photo credits, where they stand in the page
    comments: bool = False  # readers' comments under the article, after the body
    errors: bool = False  # an error or "not found" page's message, as its body


# Measured on the test splits: of 120 pages each whose headline the segmenter finds, the gold starts with it on
# 53/65 cleaneval-en, 24/24 cleanportaleval, 112/119 daniel, 71/106 dragnet, 86/98 l3s-gn1 and 12/118 wcxb-dev
# pages (its title is in the note); of the short dated lines kept just after the headline, the gold holds 39/45
# on cleaneval-en, 37/40 dragnet, 50/52 l3s-gn1, 7/87 daniel and 4/20 wcxb-dev. Of the standfirsts the shipped
# default finds (extraction/roles.standfirst_block) on all pages of a source, the gold holds 3/3 on cleaneval-en,
# 2/2 cleanportaleval, 71/72 daniel, 29/33 dragnet, 19/19 l3s-gn1 and 31/51 wcxb-dev (its other 20 are deks
# too); on trafilatura-eval a must-contain snippet lies in 60 of them and a must-not-contain one in 2 (1 both, 85
# neither): every source counts the standfirst as body (the two sample pages have none). Blocks of 15+ characters
# under a caption/figcaption path (benchmarks/role_targets.py, 120 pages a source): in the gold 18/18 on l3s-gn1 and
# 51/63 cleanportaleval, against 1/1 cleaneval-en, 5/38 daniel, 16/132 dragnet and 19/173 wcxb-dev: the first two
# count captions as body. Readers' comments put back after the body (the shipped blend on each fold's left-out test
# pages, benchmarks/loso_blend parts): on cleaneval-en 8 of the 10 pages with comments gain token F1 (0.9095 ->
# 0.9143), on every other source almost all lose (dragnet 150 of 160, daniel 51 of 53, l3s-gn1 12 of 12,
# cleanportaleval 10 of 10, wcxb-dev 26 of 27): only cleaneval-en's gold holds them. Of the pages the shipped default
# flags as error pages (kinds.error_page), on every split of every source, only cleaneval-en has any (8 of its test
# pages): its gold holds the page's message on 6, the other 2 have an empty gold. Sources not named: none of these.
GOLD_CONVENTIONS = {
    "cleaneval-en": GoldConvention(True, True, True, comments=True, errors=True),
    "cleanportaleval": GoldConvention(True, True, True, True),
    "daniel": GoldConvention(True, False, True), "dragnet": GoldConvention(True, True, True),
    "l3s-gn1": GoldConvention(True, True, True, True), "wcxb-dev": GoldConvention(False, False, True),
    "trafilatura-eval": GoldConvention(True, True, True), "samples": GoldConvention(True, False),
}
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_LINK_HOST = re.compile(rb"""<a\s[^>]*href\s*=\s*["']?(https?://[^"'\s>/?#]+)""", re.IGNORECASE)
# Hosts that many sites link to (sharing, ads, feeds): never a page's own site. Substrings of host names.
THIRD_PARTY_HOSTS = (
    "facebook", "twitter", "google", "doubleclick", "addthis", "digg", "delicious", "stumbleupon", "reddit",
    "youtube", "linkedin", "pinterest", "instagram", "feedburner", "w3.org", "adobe", "macromedia", "yahoo",
    "technorati", "newsvine", "myspace", "apple.com", "microsoft", "mozilla", "blogger.com", "wordpress.org",
    "feedblitz", "sharethis", "bit.ly", "amazon", "adserver", "adtech", "ads.",
)
_HOST_IN_HTML = re.compile(
    rb"""<(?:link[^>]+rel=["']?canonical["']?[^>]*href|meta[^>]+property=["']?og:url["']?[^>]*content|base[^>]+href)"""
    rb"""\s*=\s*["']?(https?://[^"'\s>]+)""",
    re.IGNORECASE,
)


def list_datasets(root: str | Path | None = None) -> list[Path]:
    """Dataset folders (those holding pages.jsonl) under root (default: datasets_root())."""
    base = Path(root) if root is not None else datasets_root()
    if base is None or not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if (p / "pages.jsonl").is_file())


def resolve_dataset(name_or_path: str | Path) -> Path:
    """A dataset folder: the path as given (from the current folder), else its last part as a folder name under
    the datasets root, so `../shared/datasets/dragnet` finds `dragnet` wherever $BODYBLOCKS_DATASETS puts it.

    Raises:
        FileNotFoundError: neither is a folder; the message names both places looked in.
    """
    path = Path(name_or_path)
    if path.is_dir():
        return path
    places = [path.resolve()]
    root = datasets_root_path()
    if not path.is_absolute() and path.name not in ("", ".", ".."):
        under = root / path.name
        if under.is_dir():
            return under
        places += [under] if under.resolve() != places[0] else []
    hint = "" if path.is_absolute() or root.is_dir() else f"; no datasets root at {root}: set ${ENV_DATASETS}"
    raise FileNotFoundError(f"no dataset folder {str(name_or_path)!r} (looked in {' and '.join(map(str, places))}"
                            f"{hint})")


def resolve_datasets(names: Sequence[str]) -> list[Path]:
    """Dataset folders from paths or names; the single name "all" means every dataset under the root."""
    if list(names) == ["all"]:
        return list_datasets()
    return [resolve_dataset(n) for n in names]


def gold_convention(dataset: str | Path | None) -> GoldConvention:
    """What the gold of this dataset (a folder or its name) holds besides the body (GOLD_CONVENTIONS; a folder
    named `<source>-<part>` reads as its source; anything unknown: the body alone)."""
    if dataset is None:
        return GoldConvention()
    name = Path(dataset).name
    return GOLD_CONVENTIONS.get(name, GOLD_CONVENTIONS.get(name.rsplit("-", 1)[0], GoldConvention()))


def read_records(dataset_dir: str | Path) -> list[dict[str, Any]]:
    """The pages.jsonl records of a shared-layout dataset, in file order."""
    path = Path(dataset_dir) / "pages.jsonl"
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def parse_note(note: str | None) -> dict[str, Any]:
    """A record's note as a dict (a JSON object string, or {"note": text} for anything else)."""
    if not note:
        return {}
    try:
        value = json.loads(note)
    except json.JSONDecodeError:
        return {"note": note}
    return value if isinstance(value, dict) else {"note": value}


def read_gold(path: str | Path) -> tuple[str, str | None]:
    """A gold text file as text, and the repair applied to it (None when it was clean UTF-8)."""
    raw = Path(path).read_bytes()
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if raw.startswith(bom):
            return raw[len(bom) :].decode(codec, errors="replace"), f"bom-{codec}"
    text = raw.decode("utf-8", errors="replace")
    if text.count("\x00") > len(text) // 4:
        return undo_utf16_mangling(text), "utf16-remnant"
    if "<!--" in text and not _HTML_COMMENT.sub("", text).strip():  # "<!-- this page contains no article -->"
        return "", "comment-only"
    return text, None


def undo_utf16_mangling(text: str) -> str:
    """Recover UTF-16LE text that was read as UTF-8 with replacement (dragnet: 5 gold files).

    Such files hold U+FFFD for the BOM and every byte >= 0x80, and the remaining bytes as characters: an
    ASCII letter is "x\x00", a character such as U+2019 is "\x19 " (low byte, high byte). Pairs are
    rebuilt where both bytes survived; a pair with a lost byte becomes "?"; a stray NUL resynchronises.
    """
    body = text.lstrip("\ufffd")
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        low, high = body[i], body[i + 1] if i + 1 < n else "\x00"
        if low == "\x00":  # out of step: skip one character
            i += 1
            continue
        if high == "\x00":
            out.append("?" if low == "\ufffd" else low)
        elif "\ufffd" in (low, high):
            out.append("?")
        else:
            out.append(chr(ord(high) << 8 | ord(low)))
        i += 2
    return "".join(out)


def page_from_record(dataset_dir: str | Path, rec: dict[str, Any], with_html: bool = True) -> Page:
    """Load one record's files into a Page; an unreadable page carries meta["error"] instead of raising."""
    base = Path(dataset_dir)
    meta = parse_note(rec.get("note"))
    meta["page_type"] = rec.get("page_type")
    html: bytes = b""
    labels_html: bytes | None = None
    try:
        if with_html:
            html = read_bytes(base / rec["html"])
        if with_html and rec.get("labels"):
            labels_html = read_bytes(base / rec["labels"])
    except (InputError, OSError) as exc:
        meta["error"] = f"{type(exc).__name__}: {exc}"
    block_labels = _annotation(base, rec["id"], meta)
    gold = None
    gold_file = base / rec["gold"] if rec.get("gold") else _annotated_gold(base, block_labels)
    if gold_file is not None:
        gold, repair = read_gold(gold_file)
        if repair:
            meta["gold_repair"] = repair
    return Page(
        id=rec["id"], html=html, url=rec.get("url"), lang=rec.get("lang"), gold=gold,
        snippets=rec.get("snippets"), split=rec.get("split"), dataset=base.name,
        labels_html=labels_html, meta=meta, block_labels=block_labels,
    )


def _annotated_gold(base: Path, ann: Any) -> Path | None:
    """The gold file `bodyblocks annotate` wrote for a page marked done (its annotation's written_gold), when it
    is there inside the dataset: the page's gold when its record names none (pages.jsonl is never rewritten)."""
    rel = getattr(ann, "written_gold", None)
    if not isinstance(rel, str) or not rel:
        return None
    path = (base / rel).resolve()
    return path if path.is_relative_to(base.resolve()) and path.is_file() else None


def _annotation(base: Path, page_id: str, meta: dict[str, Any]) -> Any:
    """The page's block labels from DATASET/annotations/<id>.json (bodyblocks annotate), when done."""
    path = base / ANNOTATIONS / f"{page_id}.json"
    if not path.is_file():
        return None
    try:
        ann = read_annotation(path)
    except AnnotationError as exc:
        meta["annotation_error"] = str(exc)
        return None
    return ann if ann.done else None


def read_pairs(folder: str | Path, with_html: bool = True) -> Iterator[Page]:
    """Pages from a plain folder of `name.html` (.htm, .html.gz) files with optional `name.txt` gold."""
    base = Path(folder)
    for path in sorted(base.iterdir()):
        suffix = next((s for s in PAGE_SUFFIXES if path.name.lower().endswith(s)), None)
        if suffix is None or not path.is_file():
            continue
        name = path.name[: -len(suffix)]
        gold_path = base / f"{name}.txt"
        meta: dict[str, Any] = {"file": path.name}
        html = b""
        try:
            html = read_bytes(path) if with_html else b""
        except (InputError, OSError) as exc:
            meta["error"] = f"{type(exc).__name__}: {exc}"
        gold = read_gold(gold_path)[0] if gold_path.is_file() else None
        yield Page(id=name, html=html, gold=gold, dataset=base.name, meta=meta,
                   block_labels=_annotation(base, name, meta))


def read_dataset(path: str | Path, with_html: bool = True) -> Iterator[Page]:
    """Pages of a dataset folder, in order: the shared layout when pages.jsonl exists, else name.html pairs.

    Args:
        path: a dataset folder, or a folder name under datasets_root().
        with_html: False skips reading page bytes (Page.html is b"") for fast metadata passes.
    Yields:
        Page objects; a page whose files cannot be read has meta["error"] (callers count and report it).
    """
    folder = resolve_dataset(path)
    if (folder / "pages.jsonl").is_file():
        for rec in read_records(folder):
            yield page_from_record(folder, rec, with_html)
    else:
        yield from read_pairs(folder, with_html)


def annotated_pages(dataset: str | Path, labels: str | Path | None = None, *, done_only: bool = True
                    ) -> Iterator[tuple[Page, Annotation]]:
    """The dataset's pages that have annotations (done ones only by default), each with its annotation: the
    loader that joins a labels folder kept elsewhere (e.g. this project's data/annotations/gne-pages) with
    the dataset's pages. `labels`: the annotations folder (default DATASET/annotations)."""
    folder = resolve_dataset(dataset)
    labels_dir = Path(labels) if labels is not None else folder / ANNOTATIONS
    for page in read_dataset(folder):
        path = labels_dir / f"{page.id}.json"
        if not path.is_file():
            continue
        ann = read_annotation(path)
        if done_only and not ann.done:
            continue
        page.block_labels = ann
        page.meta["annotation_kind"] = ann.kind
        yield page, ann


def _host(url: str | None) -> str | None:
    """Lower-cased host without a leading www., or None."""
    if not url:
        return None
    try:
        host = (urlsplit(url.strip()).hostname or "").lower()
    except ValueError:
        return None
    host = host[4:] if host.startswith("www.") else host
    return host or None


def site_of(page: Page) -> str:
    """The group key of a page for splits: its host (url, note, canonical link, dominant link host), else its id."""
    host = _host(page.url)
    if host:
        return host
    for key in ("host", "site"):
        value = page.meta.get(key)
        if isinstance(value, str) and value:
            return _host(value if "//" in value else f"http://{value}") or value.lower()
    if isinstance(page.html, bytes) and page.html:
        m = _HOST_IN_HTML.search(page.html[:200_000])
        host = _host(m.group(1).decode("ascii", "replace")) if m else None
        if host:
            return host
        host = _main_link_host(page.html)
        if host:
            return host
    return f"page:{page.id}"


def _main_link_host(html: bytes) -> str | None:
    """The host most absolute <a href> links point to, when it clearly dominates (own-site navigation)."""
    counts: dict[str, int] = {}
    for m in _LINK_HOST.finditer(html[:500_000]):
        host = _host(m.group(1).decode("latin-1"))
        if host and not any(word in host for word in THIRD_PARTY_HOSTS):
            counts[host] = counts.get(host, 0) + 1
    if not counts:
        return None
    host, n = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
    return host if n >= 3 and n >= 0.2 * sum(counts.values()) else None
