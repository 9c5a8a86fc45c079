"""Hidden text (page/hidden.py, segment.py): <template>, script templates and <noscript> are read only where the
visible page has no article, never joined to a visible one, bounded in size, and flagged hidden_source."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bodyblocks.extraction.decision import DecisionRule
from bodyblocks.page import hidden
from bodyblocks.page.segment import segment

ARTICLE = "".join(f"<p>Paragraph {i} of the story: the council opened a tool library in the old post office, and "
                  "residents can borrow a drill for a week.</p>" for i in range(22))  # about 2,300 characters
DIV_ARTICLE = ARTICLE.replace("<p>", "<div class='para'>").replace("</p>", "</div>")
BRIEF = ("<p>The council opened a tool library in the old post office on Friday, with drills, ladders and sewing "
         "machines to borrow.</p><p>It opens on weekdays from nine to five; a card costs nothing for residents.</p>")
NAV = "<ul class='nav'>" + "".join(f"<li><a href='/s{i}'>Section {i}</a></li>" for i in range(8)) + "</ul>"
SPAM = "".join(f"<p>Cheap pills number {i}: order now from our online shop with free delivery today, and a second "
               "sentence of the same sort to make it long.</p>" for i in range(30))
COOKIES = ("<p>We use cookies to give you the best experience on our website. Some are essential to make the site "
           "work, others help us understand how you use it, remember your settings and show you relevant offers. "
           "</p><p>By continuing to browse without changing your settings you agree to our use of cookies. You can "
           "change your cookie settings at any time in your browser, and read our full cookie policy and privacy "
           "notice, which explain what we collect, why we collect it, how long we keep it and how to ask us to "
           "delete it. Enable JavaScript to choose which cookies you accept.</p>")  # about 600 characters


def _page(body: str, title: str = "Tool library") -> str:
    return f"<html><head><title>{title}</title></head><body>{NAV}<main>{body}</main></body></html>"


def _texts(html: str) -> list[str]:
    return [b.text for b in segment(html).blocks]


@pytest.mark.parametrize("parser", ["lxml", "bs4"])
def test_hidden_text_is_never_joined_to_a_visible_article(parser: str) -> None:
    cases = {
        "spam template in the footer": f"<h1>Tool library</h1>{ARTICLE}<footer><template>{SPAM}</template></footer>",
        "spam script template": f"{ARTICLE}<script type='text/template'><div>{SPAM}</div></script>",
        "cookie wall beside an article in divs": f"{DIV_ARTICLE}<noscript>{COOKIES}</noscript>",
        "cookie wall under a two-paragraph brief": f"<h1>Tool library</h1>{BRIEF}<noscript>{COOKIES}</noscript>",
    }
    for name, body in cases.items():
        doc = segment(_page(body), parser=parser)
        texts = [b.text for b in doc.blocks]
        assert not any("Cheap pills" in t or "cookies" in t for t in texts), name
        assert not doc.hidden_source, name


def test_a_noscript_copy_with_a_word_added_does_not_double_the_article() -> None:
    copy = ARTICLE.replace("story:", "story, updated:")
    texts = _texts(_page(f"{ARTICLE}<noscript>{copy}</noscript>"))
    assert sum(t.startswith("Paragraph 0 ") for t in texts) == 1 and not any("updated" in t for t in texts)


def test_hidden_text_is_read_where_the_visible_page_has_no_article_and_flagged() -> None:
    doc = segment(_page(f"<noscript><article>{ARTICLE}</article></noscript>"))
    assert sum(b.text.startswith("Paragraph ") for b in doc.blocks) == 22 and doc.hidden_source
    shell = segment("<html><body><div id='app'>Loading…</div><noscript><div class='post'>"
                    + "".join(f"<div>Post line {i}: a reply in the thread, long enough to read.</div>"
                              for i in range(20))
                    + "</div></noscript></body></html>")
    assert any(b.text.startswith("Post line 19") for b in shell.blocks) and shell.hidden_source  # the app shell
    plain = segment(_page(ARTICLE))
    assert not plain.hidden_source


def test_the_flag_reaches_the_extraction_and_the_outputs() -> None:
    from bodyblocks.batch.inputs import Job
    from bodyblocks.batch.outputs import outcome, page_row, render

    doc = segment(_page(f"<noscript><article>{ARTICLE}</article></noscript>"))
    probs = np.array([0.9 if b.text.startswith("Paragraph") else 0.05 for b in doc.blocks], np.float32)
    ex = DecisionRule(threshold=0.5, confident=0.5).decide(doc, probs, "test")
    assert ex.hidden_source and ex.text.startswith("Paragraph 0")
    assert json.loads(render(ex, "json", "p"))["hidden_source"] is True
    assert outcome(ex)["hidden_source"] is True and "hidden_source" in page_row(Job("p"), ex, None)["flags"]
    plain = segment(_page(ARTICLE))
    visible = DecisionRule(threshold=0.5, confident=0.5).decide(plain, np.full(len(plain.blocks), 0.9), "test")
    assert visible.hidden_source is False and "hidden_source" not in page_row(Job("p"), visible, None)["flags"]


@pytest.mark.parametrize("wrap", ["<template>{}</template>", "<script type='text/template'>{}</script>",
                                  "<noscript>{}</noscript>"])
def test_a_huge_hidden_container_is_read_up_to_the_bound(wrap: str) -> None:
    paras = "".join(f"<p>Hidden paragraph {i}: words of a long post that a script would show.</p>"
                    for i in range(60_000))  # 4.3 MB
    doc = segment(_page(wrap.format(paras)))
    texts = [b.text for b in doc.blocks if b.text.startswith("Hidden paragraph")]
    assert doc.hidden_source and texts[0].startswith("Hidden paragraph 0:")
    assert sum(len(t) for t in texts) <= hidden.MAX_HIDDEN_TEXT and len(texts) < 5_000
    assert [t.split(":")[0] for t in texts] == [f"Hidden paragraph {i}" for i in range(len(texts))]  # in order


def test_many_hidden_paragraphs_beside_an_article_are_not_read() -> None:
    paras = "".join(f"<p>Hidden paragraph {i}: more words than the article has.</p>" for i in range(20_000))
    doc = segment(_page(f"{ARTICLE}<template>{paras}</template>"))
    assert len(doc.blocks) == 8 + 22 and not doc.hidden_source


def test_limit_hidden_cuts_after_the_budget_and_empties_the_rest() -> None:
    from lxml import etree

    root = etree.fromstring("<div><template><p>abcde<b>fg</b>hi</p><p>jklmn</p></template>"
                            "<template><p>later</p></template></div>", etree.HTMLParser())
    first, second = root.iter("template")
    assert hidden.limit_hidden([first, second], 8) == 0
    assert etree.tostring(first, encoding=str) == "<template><p>abcde<b>fg</b>h</p></template>"
    assert etree.tostring(second, encoding=str) == "<template/>"
    root = etree.fromstring("<div><noscript><p>abc</p>defgh<p>later</p></noscript></div>", etree.HTMLParser())
    assert hidden.limit_hidden(root.iter("noscript"), 5) == 0
    assert etree.tostring(next(root.iter("noscript")), encoding=str) == "<noscript><p>abc</p>de</noscript>"
    assert hidden.limit_hidden(root.iter("noscript"), 100) == 95  # within the budget: nothing cut


def test_the_visible_article_test_counts_written_blocks_only() -> None:
    menu = segment(_page("".join(f"<p><a href='/{i}'>A long link to another story on this site, number {i}.</a></p>"
                                 for i in range(20))))
    assert not hidden.visible_article(menu.blocks)  # link text
    headings = segment(_page("".join(f"<h2>A heading that is long enough, number {i}, with a comma.</h2>"
                                     for i in range(20))))
    assert not hidden.visible_article(headings.blocks)
    assert hidden.visible_article(segment(_page(BRIEF)).blocks)


def _preloaded(paragraphs: str) -> str:
    """Discourse's preloaded data: JSON whose values are JSON strings holding the posts' markup."""
    import html as html_mod

    posts = json.dumps({"post_stream": {"posts": [{"id": 1, "cooked": paragraphs}]}})
    value = html_mod.escape(json.dumps({"topic_7": posts, "site": json.dumps({"title": "Forum"})}))
    return f"<div class='hidden' id='data-preloaded' data-preloaded=\"{value}\"></div>"


def test_content_held_in_a_json_attribute_is_read_where_the_visible_page_has_no_article() -> None:
    doc = segment(_page(_preloaded(ARTICLE)))
    assert sum(b.text.startswith("Paragraph ") for b in doc.blocks) == 22 and doc.hidden_source
    props = segment(_page("<div id='app' data-props='" + json.dumps({"body": ARTICLE}).replace("'", "&#39;")
                          + "'></div>"))
    assert props.blocks[-1].text.startswith("Paragraph 21") and props.hidden_source  # after its element, in order
    beside = segment(_page(f"<h1>Tool library</h1>{BRIEF}{_preloaded(SPAM)}"))
    assert not any("Cheap pills" in b.text for b in beside.blocks) and not beside.hidden_source
    assert not segment(_page("<div data-page='3'>Page 3</div>")).hidden_source  # a data-page that holds no JSON


def test_a_huge_json_attribute_is_read_up_to_the_bound() -> None:
    paras = "".join(f"<p>Hidden paragraph {i}: words of a long post that a script would show.</p>"
                    for i in range(30_000))  # 2.2 MB of markup
    doc = segment(_page(_preloaded(paras)))
    texts = [b.text for b in doc.blocks if b.text.startswith("Hidden paragraph")]
    assert doc.hidden_source and texts[0].startswith("Hidden paragraph 0:")
    assert sum(len(t) for t in texts) <= hidden.MAX_HIDDEN_TEXT
    assert hidden._json_markup("{" * 10 + "]", 100) == [] and hidden._json_markup("x" * 10, 100) == []
