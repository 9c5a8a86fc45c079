"""`--comments` / ExtractOptions(comments=True) (decision.py step 5): an article's comments in its text, after it,
though the model doubts them; without it, in Extraction.comments."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bodyblocks.extraction.decision import DecisionRule
from bodyblocks.page.segment import segment

RULE = DecisionRule(threshold=0.5, confident=0.5)
PARAS = "".join(f"<p>Paragraph {i} of the harbour story, with enough words to read as body text here.</p>"
                for i in range(4))
ARTICLE = (
    "<html><head><title>Harbour works begin | City Times</title></head><body>"
    "<ul class='nav'><li><a href='/'>Home</a></li><li><a href='/news'>News</a></li></ul>"
    f"<main><article><h1>Harbour works begin</h1>{PARAS}</article>"
    "<section id='comments'><h3>Comments</h3><div class='comment'><p>Great article, thanks for writing it up.</p>"
    "</div><div class='comment'><p>I disagree with most of it, but it was an interesting read.</p></div></section>"
    "</main><div class='footer'><p>Copyright 2025</p></div></body></html>"
)


def test_comments_the_model_doubts_are_kept_in_the_text_when_asked() -> None:
    # the comments' P(body) under the threshold, as the shipped models give them: asked for, they are still kept
    doc = segment(ARTICLE)
    probs = np.array([0.9 if "/main" in b.tag_path and "comment" not in b.tag_path else 0.15 for b in doc.blocks],
                     np.float32)
    plain = RULE.decide(doc, probs, "test")
    assert "Great article" not in plain.text and plain.comments[0].startswith("Great article")
    asked = DecisionRule(threshold=0.5, confident=0.5, comments=True).decide(doc, probs, "test")
    lines = asked.text.splitlines()
    assert lines[-2:] == ["Great article, thanks for writing it up.",
                          "I disagree with most of it, but it was an interesting read."]
    assert lines[0].startswith("Paragraph 0") and asked.comments == [] and "Comments" not in lines


def test_the_sample_pages_comments_are_in_the_text_with_the_option() -> None:
    import bodyblocks
    from bodyblocks.loading.options import ExtractOptions

    sample = Path(__file__).resolve().parents[1] / "data" / "samples" / "article-en.html"
    said = ["Brilliant idea. I have a spare jigsaw that can go to a better home.",
            "Will there be a way to see which tools are available online before going in?"]
    plain = bodyblocks.load("ensemble").extract(sample)
    assert plain.comments == said and said[0] not in plain.text
    asked = bodyblocks.load("ensemble", ExtractOptions(comments=True)).extract(sample)
    assert asked.text.splitlines()[-2:] == said and asked.comments == []
    assert asked.text.startswith(plain.text)  # the article as it was, the comments after it
