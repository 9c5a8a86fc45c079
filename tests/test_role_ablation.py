"""benchmarks/role_ablation.py: each role step turned off alone, scored and counted on the folds' pages."""

import numpy as np
from benchmarks import loso_blend, role_ablation

from bodyblocks.extraction import decision, roles
from bodyblocks.extraction.segmenting import segment_page

PARAS = "".join(f"<p>Paragraph {i} of the harbour story, with enough words to read as body text here.</p>"
                for i in range(4))
PAGE = ("<html><head><title>Harbour works begin | City Times</title></head><body><main><article>"
        "<h1>Harbour works begin</h1><div class='byline'>By Ann Lee, May 3, 2025</div>" + PARAS
        + "<figure><img src='/w.jpg'><figcaption>Water covers Mill Street. (AP Photo/John Doe)</figcaption></figure>"
        "</article><section id='comments'><div class='comment'><p>Great article, thanks for writing it up.</p></div>"
        "</section></main><div class='nav'><a href='/'>Home</a></div></body></html>")
GOLD = "\n".join(f"Paragraph {i} of the harbour story, with enough words to read as body text here." for i in range(4))


def _parts() -> dict:
    doc = segment_page(PAGE, voting=True)
    probs = np.array([0.9 if "/main" in b.tag_path else 0.1 for b in doc.blocks], np.float32)
    page = {"id": "p", "lang": "en", "gold": GOLD, "doc": doc, "model": probs, "gbt": probs, "vote": probs}
    return {s: [page] for s in loso_blend.SOURCES}


def test_each_step_off_changes_only_what_it_names_and_is_restored():
    parts = _parts()
    settings = {s: (0.2, 0.2, 0.5, 0.7, 0.7) for s in loso_blend.SOURCES}
    labels = {s: [role_ablation.page_roles(p) for p in pages] for s, pages in parts.items()}
    every = role_ablation.replay(parts, settings, labels, None)
    assert every["not_gold"] == 0 and every["folds"]["wcxb-dev"][0] > 0.99  # its gold: the paragraphs alone
    captions = role_ablation.replay(parts, settings, labels, "captions")
    caption = len("Water covers Mill Street. (AP Photo/John Doe)".replace(" ", ""))
    assert captions["by_role"] == {"caption": 6 * caption}  # the same page in each of the six folds, pooled
    assert set(role_ablation.replay(parts, settings, labels, "comments")["by_role"]) == {"comment"}
    assert set(role_ablation.replay(parts, settings, labels, "byline")["by_role"]) == {"byline"}
    assert role_ablation.replay(parts, settings, labels, "byline", trees=True)["by_role"].keys() == {"byline"}
    assert decision.headline_block.__name__ == "headline_block"  # the patches are undone
    assert roles.byline_blocks.__name__ == "byline_blocks"
    assert captions["folds"]["wcxb-dev"][0] < every["folds"]["wcxb-dev"][0]
    assert captions["by_source"]["wcxb-dev"] == [captions["kept"] // 6, caption]  # each fold's own counts
    text = role_ablation.table({"ensemble, every step": every, "ensemble, without captions": captions}, "b")
    by_fold = text.split("The same share by left-out source")[1]
    assert "| ensemble, every step | 0.00% |" in by_fold and "without captions" not in by_fold
