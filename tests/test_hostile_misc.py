"""Issue 44's attacks other than on the inputs' walk: review links, annotate's writes, checkpoint checks,
Ctrl-C to the process group, charset labels."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from bodyblocks.batch import BatchOptions, run_batch

ARTICLE = ("<html><head><title>Relief</title></head><body><nav><a href='/'>Home</a></nav><article><h1>Relief "
           "convoys reach the valley</h1><p>Relief convoys reached the valley on Tuesday, after three days of rain "
           "had closed the mountain roads, and residents queued for water.</p><p>Engineers said a temporary "
           "crossing would be built upstream within a month if the river kept falling.</p></article></body></html>")


def _dataset(root: Path, ids: list[str]) -> Path:
    """A dataset folder (pages.jsonl + html/) with one article page per id."""
    (root / "html").mkdir(parents=True)
    lines = []
    for n, page_id in enumerate(ids):
        (root / "html" / f"p{n}.html.gz").write_bytes(gzip.compress(ARTICLE.encode(), mtime=0))
        lines.append(json.dumps({"id": page_id, "html": f"html/p{n}.html.gz"}))
    (root / "pages.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


# ------------------------------------------------------------------------------------------ review pages
def test_review_links_are_relative_and_encoded_and_no_key_takes_the_index(tmp_path: Path) -> None:
    ids = ["javascript:alert(document.domain)", "index", "sub/index", "//evil.example/x", 'q"><script>x</script>']
    out = tmp_path / "out"
    run_batch([_dataset(tmp_path / "ds", ids)], out, BatchOptions(extractor="heuristic", review=1.0,
                                                                 progress=False, workers=1))
    index = (out / "review" / "index.html").read_text(encoding="utf-8")
    hrefs = re.findall(r'href="([^"]*)"', index)
    assert len(hrefs) == len(ids), index
    assert all(h.startswith("./pages/") and ":" not in h and "<" not in h for h in hrefs), hrefs
    assert "./pages/javascript%3Aalert%28document.domain%29.html" in hrefs
    assert "./pages/sub/index.html" in hrefs and "./pages/index.html" in hrefs
    assert "<script>" not in index
    assert index.startswith("<!doctype html>") and "pages to review" in index  # the index is the index
    own = (out / "review" / "pages" / "index.html").read_text(encoding="utf-8")
    assert "Relief convoys reached the valley" in own  # the page with id `index` keeps its own review page
    assert (out / "review" / "pages" / "sub" / "index.html").is_file()
