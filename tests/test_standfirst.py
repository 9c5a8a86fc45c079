"""The standfirst (the dek: the summary paragraph under the headline) is a field, not body
(extraction/roles.standfirst_block, decision.py step 7); a first body paragraph that repeats the page's meta
description stays body."""

from __future__ import annotations

import json

import numpy as np

from bodyblocks.batch.outputs import page_row, render
from bodyblocks.evaluation.evaluate import scored_text
from bodyblocks.extraction.decision import DecisionRule
from bodyblocks.extraction.roles import DESCRIPTIONS, matches_description, page_descriptions
from bodyblocks.extraction.segmenting import segment_page
from bodyblocks.page.markdown import to_markdown
from bodyblocks.page.segment import segment, segment_tree
from bodyblocks.training.datasets import GoldConvention
from bodyblocks.types import Extraction

RULE = DecisionRule(threshold=0.5, confident=0.5)
DEK = "Councillors approved the plan on Tuesday, after two years of arguing about the cost of it."
BODY = "".join(f"<p>Paragraph {i} of the harbour story, with enough words in it to read as body text here.</p>"
               for i in range(4))


def _page(header: str, body: str = BODY, description: str | None = None) -> str:
    meta = f"<meta name='description' content='{description}'>" if description else ""
    return (f"<html><head><title>Harbour works begin | City Times</title>{meta}</head><body>"
            "<ul class='nav'><li><a href='/'>Home</a></li><li><a href='/news'>News</a></li></ul>"
            f"<main><article><header>{header}</header><div class='article-body'>{body}</div></article></main>"
            "<div class='footer'><p>Copyright 2025</p></div></body></html>")


def _decide(html: str) -> Extraction:
    """The rule on a page segmented as a block extractor segments it (segment_page: with its meta descriptions),
    the blocks below <main> at P(body) 0.9, the others 0.1."""
    doc = segment_page(html)
    probs = np.array([0.9 if "/main" in b.tag_path else 0.1 for b in doc.blocks], np.float32)
    return RULE.decide(doc, probs, "test")


def test_a_class_cued_dek_is_the_standfirst_and_not_body() -> None:
    ex = _decide(_page(f"<h1>Harbour works begin</h1><p class='standfirst'>{DEK}</p>"))
    assert ex.title == "Harbour works begin" and ex.standfirst == DEK
    assert DEK not in ex.text and ex.text.startswith("Paragraph 0")
    assert render(ex, "txt", "p") == f"{ex.title}\n\n{ex.text}\n"  # the headline, a blank line, the body; no dek


def test_a_dek_that_repeats_the_meta_description_under_the_headline_is_the_standfirst() -> None:
    html = _page(f"<h1>Harbour works begin</h1><h2>{DEK}</h2>", description=DEK)
    ex = _decide(html)
    assert ex.standfirst == DEK and DEK not in ex.text
    # the description is the cue: without it (a plain segment), an unnamed h2 stays body
    doc = segment(html)
    probs = np.array([0.9 if "/main" in b.tag_path else 0.1 for b in doc.blocks], np.float32)
    plain = RULE.decide(doc, probs, "test")
    assert DESCRIPTIONS not in doc.extra and plain.standfirst == "" and DEK in plain.text


def test_a_first_body_paragraph_that_repeats_the_meta_description_stays_body() -> None:
    first = f"<p>{DEK}</p>"
    ex = _decide(_page("<h1>Harbour works begin</h1>", first + BODY, description=DEK))
    assert ex.standfirst == "" and ex.text.startswith(DEK)


def test_a_sibling_of_the_body_paragraphs_is_the_standfirst_only_by_its_own_class() -> None:
    cued = _decide(_page("<h1>Harbour works begin</h1>", f"<p class='intro'>{DEK}</p>" + BODY))
    assert cued.standfirst == DEK and DEK not in cued.text
    parent = _decide(_page("<h1>Harbour works begin</h1>",
                           f"<div class='summary-box'><p>{DEK}</p>{BODY}</div>"))  # the class is the body's too
    assert parent.standfirst == "" and parent.text.startswith(DEK)


def test_captions_datelines_anchors_and_a_short_body_are_no_standfirst() -> None:
    caption = _decide(_page("<h1>Harbour works begin</h1>"
                            f"<div class='lead-media'><p class='lead-image-caption'>{DEK}</p></div>"))
    assert caption.standfirst == ""
    dateline = _decide(_page("<h1>Harbour works begin</h1>",
                             f"<p class='lead'>LONDON (Reuters) - {DEK}</p>" + BODY))
    assert dateline.standfirst == "" and dateline.text.startswith("LONDON")
    anchor = _decide(_page("<h1>Harbour works begin</h1>",
                           "<h2 id='introduction-to-the-harbour-works'>Introduction to the harbour works and what "
                           "they will cost</h2>" + BODY))
    assert anchor.standfirst == ""
    short = _decide(_page(f"<h1>Harbour works begin</h1><p class='standfirst'>{DEK}</p>", "<p>One line.</p>"))
    assert short.standfirst == "" and DEK in short.text


def test_no_headline_no_standfirst() -> None:
    html = f"<html><body><main><p class='standfirst'>{DEK}</p>{BODY}</main></body></html>"
    ex = _decide(html)
    assert ex.headline is None and ex.standfirst == "" and ex.text.startswith(DEK)


def test_page_descriptions_and_the_match() -> None:
    _, tree = segment_tree("<html><head><meta name='description' content=' A  summary of it, long enough. '>"
                           "<meta property='og:description' content='A summary of it, long enough.'>"
                           "<meta name='twitter:description' content='Another one, also long enough here.'>"
                           "<meta name='keywords' content='x'></head><body><p>Text.</p></body></html>")
    assert page_descriptions(tree) == ("A summary of it, long enough.", "Another one, also long enough here.")
    assert page_descriptions(None) == ()
    long = "A summary that goes on for a while, so that the site cut it short when it wrote the meta tag for it"
    assert matches_description(long + " and then some more words.", [long[:90] + "…"])
    assert matches_description(DEK.upper(), [DEK]) and not matches_description(DEK, ["Something else entirely."])


def test_outputs_hold_the_standfirst_apart() -> None:
    ex = _decide(_page(f"<h1>Harbour works begin</h1><p class='standfirst'>{DEK} *Really*.</p>"))
    md = render(ex, "md", "p")
    assert md.startswith(f"# Harbour works begin\n\n*{DEK} \\*Really\\*.*\n\nParagraph 0")
    rec = json.loads(render(ex, "json", "p"))
    assert rec["standfirst"] == ex.standfirst and rec["text"] == ex.text and DEK not in rec["text"]
    from bodyblocks.batch.columnar import COLUMNS
    from bodyblocks.batch.inputs import Job

    row = page_row(Job(key="p"), ex, None)
    assert set(row) == set(COLUMNS) and row["standfirst"] == ex.standfirst
    assert json.loads(render(_decide(_page("<h1>Harbour works begin</h1>")), "json", "p"))["standfirst"] is None
    plain = Extraction("Body line.", title="Headline", standfirst="The dek.")  # no blocks: the text's lines
    assert render(plain, "md", "p") == "# Headline\n\n*The dek.*\n\nBody line.\n"
    assert to_markdown("Headline", [], standfirst="The dek.") == "# Headline\n\n*The dek.*\n"


def test_evaluation_scores_the_standfirst_where_the_gold_holds_it() -> None:
    ex = Extraction("Body.", title="Headline", headline=3, byline="By Ann", standfirst="The dek.")
    assert scored_text(ex, GoldConvention(True, True, True)) == "Headline\nThe dek.\nBy Ann\nBody."
    assert scored_text(ex, GoldConvention(False, False, True)) == "The dek.\nBody."
    assert scored_text(ex, GoldConvention(True, True)) == "Headline\nBy Ann\nBody."


def test_the_shipped_default_returns_the_standfirst() -> None:
    import bodyblocks

    body = "".join(f"<p>Paragraph {i}: the council said the works on the old harbour wall would take two years and "
                   f"cost more than the first estimate, which was made before the storm of last winter.</p>"
                   for i in range(6))
    html = _page(f"<h1>Harbour works begin</h1><p class='standfirst'>{DEK}</p>", body, description=DEK)
    ex = bodyblocks.load(device="cpu").extract(html.encode())
    assert ex.title == "Harbour works begin" and ex.standfirst == DEK and DEK not in ex.text
    assert ex.text.startswith("Paragraph 0")
