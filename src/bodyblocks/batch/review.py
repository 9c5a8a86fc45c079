"""Review pages: a page's blocks with the kept ones highlighted, beside the extracted text, for checking by eye.

A run's review folder holds `index.html` and the pages under `pages/` (`review/pages/<key>.html`): no page key
can take the index's name, whatever it is (`index`, `sub/index`). The index links each page by a relative
`./pages/...` address with every character of the key that is not a plain name character percent-encoded, so
that no key (`javascript:alert(1)`, `//host/x`, `"><script>`) becomes a link anywhere else.
"""

from __future__ import annotations

import html
from pathlib import Path
from urllib.parse import quote

from bodyblocks.runtime.files import write_atomic
from bodyblocks.types import Extraction

REVIEW = "review"  # the review folder, in the output folder
PAGES = "pages"  # the review pages' subfolder of the review folder; index.html beside it

_STYLE = """body{font:14px/1.45 system-ui,sans-serif;margin:0}header{padding:8px 16px;background:#223;color:#fff}
main{display:grid;grid-template-columns:1fr 1fr;gap:16px;padding:16px}
.b{padding:3px 6px;margin:2px 0;border-left:4px solid #ccc;color:#666;white-space:pre-wrap}
.b.kept{border-color:#2a7;background:#e9f8ef;color:#000}.p{float:right;font:11px monospace;color:#999}
.path{font:10px monospace;color:#aaa;display:block}pre{white-space:pre-wrap;font:14px/1.5 system-ui}
h2{font-size:15px;margin:4px 0 8px}"""


def write_review(path: Path, key: str, ex: Extraction) -> None:
    """One review page: left the page's blocks (kept ones green, with P(body)), right the output text; written
    atomically (a link at its name is replaced, never written through)."""
    kept = set(ex.kept or [])
    left: list[str] = []
    if ex.blocks is None:
        left.append("<p><i>This extractor does not work on blocks; only its output is shown.</i></p>")
    else:
        probs = ex.probabilities or [None] * len(ex.blocks)
        for b, p in zip(ex.blocks, probs, strict=True):
            cls = "b kept" if b.index in kept else "b"
            pr = f'<span class="p">{p:.2f}</span>' if p is not None else ""
            left.append(f'<div class="{cls}">{pr}<span class="path">{html.escape(b.tag_path[-90:])}</span>'
                        f"{html.escape(b.text)}</div>")
    flags = []
    if ex.low_confidence:
        flags.append(f"LOW CONFIDENCE: {html.escape(ex.low_confidence_reason)}" if ex.low_confidence_reason
                     else "LOW CONFIDENCE")
    if ex.no_body:
        flags.append("NO BODY")
    conf = f"confidence {ex.confidence:.2f}" if ex.confidence is not None else ""
    doc = (f"<!doctype html><meta charset=utf-8><title>review {html.escape(key)}</title><style>{_STYLE}</style>"
           f"<header><b>{html.escape(key)}</b> — {html.escape(ex.title)} · {ex.extractor} · {conf} "
           f"{' '.join(flags)}</header><main><section><h2>Blocks ({len(kept)} kept)</h2>{''.join(left)}</section>"
           f"<section><h2>Extracted text</h2><pre>{html.escape(ex.text) or '<i>(empty)</i>'}</pre></section></main>")
    write_atomic(path, doc)


def review_path(folder: Path, key: str) -> Path:
    """Where the review page of the page with this key goes in the review folder (module docstring)."""
    return folder / PAGES / (key + ".html")


def review_link(key: str) -> str:
    """The index's link to a key's review page: relative, percent-encoded but for its "/" separators."""
    return "./" + PAGES + "/" + quote(key + ".html", safe="/")


def write_review_index(folder: Path, order: dict[str, tuple[bool, float]] | None = None) -> None:
    """review/index.html linking every review page; `order`: per page key a sort key (low-confidence first,
    then by confidence), so that the pages most worth a look come first."""
    if not folder.exists():
        return
    root = folder / PAGES
    keys = sorted(p.relative_to(root).as_posix()[: -len(".html")] for p in root.rglob("*.html") if p.is_file())
    if order:
        keys.sort(key=lambda key: order.get(key, (True, 1.0)))
    items = "".join(f'<li><a href="{html.escape(review_link(k))}">{html.escape(k)}</a></li>' for k in keys)
    write_atomic(folder / "index.html", "<!doctype html><meta charset=utf-8><title>review</title>"
                 f"<h1>{len(keys)} pages to review</h1><ul>{items}</ul>")
