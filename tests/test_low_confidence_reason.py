"""A page flagged low_confidence says why, at whatever confidence: in the Extraction, the json output, the report
line and the review page."""

from __future__ import annotations

import json
import re

import numpy as np

from bodyblocks.batch.outputs import outcome, render
from bodyblocks.extraction.decision import RESCUED, DecisionRule
from bodyblocks.page.segment import segment
from bodyblocks.types import Extraction

RULE = DecisionRule.from_meta({"threshold": 0.5})


def decide(html: str, high: float = 0.9) -> Extraction:
    doc = segment(html)
    probs = np.array([high if "/main" in b.tag_path else 0.1 for b in doc.blocks], np.float32)
    return RULE.decide(doc, probs, "test")


def test_a_page_of_links_is_unsure_at_high_confidence_and_says_why() -> None:
    items = "".join(f"<li><a href='/s/{i}'>Another story number {i} worth reading today</a></li>" for i in range(12))
    ex = decide(f"<html><body><main><h2>More stories</h2><ul>{items}</ul></main></body></html>")
    assert ex.low_confidence and ex.confidence is not None and ex.confidence > 0.85
    assert re.fullmatch(r"link text is (9\d|100)% of the kept text", ex.low_confidence_reason)


def test_a_page_of_comments_says_so() -> None:
    posts = "".join(f"<div class='comment'><p>Post {i}: a reply in the thread with a few words of its own.</p></div>"
                    for i in range(8))
    ex = decide(f"<html><body><h1>Which bike?</h1><main><div id='comments'>{posts}</div></main></body></html>")
    assert ex.low_confidence and ex.low_confidence_reason == "comments are 100% of the kept text"


def test_a_page_without_a_confident_block_names_its_best_and_the_bar() -> None:
    paragraphs = "".join(f"<p>Paragraph {i} of the story, with enough words to be read as prose.</p>" for i in range(4))
    ex = decide(f"<html><body><main>{paragraphs}</main></body></html>", high=0.45)
    assert ex.low_confidence
    assert ex.low_confidence_reason == "no block is confidently body (the best P(body) 0.450 < 0.500)"
    sure = decide(f"<html><body><main>{paragraphs}</main></body></html>")
    assert not sure.low_confidence and sure.low_confidence_reason == ""


def test_the_reason_is_in_the_json_output_and_the_report_line() -> None:
    ex = Extraction(text="a line", extractor="test", confidence=0.93, low_confidence=True,
                    low_confidence_reason=RESCUED)
    assert json.loads(render(ex, "json", "k"))["low_confidence_reason"] == RESCUED
    assert outcome(ex)["low_confidence_reason"] == RESCUED
    assert outcome(Extraction(text="a line", confidence=0.9))["low_confidence_reason"] is None
