"""The headline is a field, not body; bylines, promos and comments are not body either (decision.py
steps 5-7, extraction/roles.py), and evaluation scores each dataset by its own gold convention."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from benchmarks.rule_steps import ablated

from bodyblocks.evaluation.evaluate import body_only, scored_text
from bodyblocks.extraction.decision import DecisionRule
from bodyblocks.extraction.headline import site_free_title
from bodyblocks.extraction.roles import in_comments, is_byline, is_promo
from bodyblocks.page.markdown import to_markdown
from bodyblocks.page.segment import segment
from bodyblocks.training.datasets import GoldConvention, gold_convention
from bodyblocks.types import Extraction

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "samples"
RULE = DecisionRule(threshold=0.5, confident=0.5)
PARAS = "".join(f"<p>Paragraph {i} of the harbour story, with enough words to read as body text here.</p>"
                for i in range(4))
ARTICLE = (
    "<html><head><title>Harbour works begin | City Times</title></head><body>"
    "<ul class='nav'><li><a href='/'>Home</a></li><li><a href='/news'>News</a></li></ul>"
    "<main><article><div class='kicker'>Local</div><h1>Harbour works begin</h1>"
    "<div class='byline'>By Ann Lee, May 3, 2025</div>"
    f"{PARAS}<div class='ad-slot'>Advertisement: save 20%</div>"
    "<p>The last paragraph of the harbour story, also long enough to be body text.</p>"
    "<a href='/follow'>Follow</a></article>"
    "<section id='comments'><h3>Comments</h3><div class='comment'><p>Great article, thanks for writing it up.</p>"
    "</div><div class='comment'><p>I disagree with most of it, but it was an interesting read.</p></div></section>"
    "</main><div class='footer'><p>Copyright 2025</p></div></body></html>"
)


def _decide(html: str, rule: DecisionRule = RULE) -> Extraction:
    """The rule on a page whose blocks below <main> have P(body) 0.9, the others 0.1."""
    doc = segment(html)
    probs = np.array([0.9 if "/main" in b.tag_path else 0.1 for b in doc.blocks], np.float32)
    return rule.decide(doc, probs, "test")


def test_the_headline_is_the_title_and_the_body_starts_after_it() -> None:
    ex = _decide(ARTICLE)
    assert ex.title == "Harbour works begin" and ex.headline is not None
    assert ex.blocks is not None and ex.blocks[ex.headline].tag == "h1"
    lines = ex.text.splitlines()
    assert lines[0].startswith("Paragraph 0") and "Harbour works begin" not in ex.text
    assert "Local" not in lines  # the kicker above the headline goes with it


def test_bylines_promos_buttons_and_comments_are_not_body() -> None:
    ex = _decide(ARTICLE)
    assert ex.byline == "By Ann Lee, May 3, 2025" and "Ann Lee" not in ex.text
    assert "Advertisement" not in ex.text and not ex.text.endswith("Follow")
    assert "Great article" not in ex.text and "disagree" not in ex.text
    assert ex.text.splitlines()[-1].startswith("The last paragraph") and not ex.low_confidence


def test_comments_are_kept_when_asked() -> None:
    ex = _decide(ARTICLE, DecisionRule.from_meta({"threshold": 0.5}, comments=True))
    assert "Great article" in ex.text and "disagree" in ex.text and not ex.low_confidence


def test_a_forum_thread_keeps_its_posts_and_a_page_of_comments_is_unsure() -> None:
    posts = "".join(f"<div class='comment'><p>Post {i}: a reply in the thread with a few words of its own.</p></div>"
                    for i in range(8))
    html = f"<html><body><h1>Which bike?</h1><main><div id='comments'>{posts}</div></main></body></html>"
    ex = _decide(html)
    assert ex.title == "Which bike?" and "Post 0" in ex.text and "Post 7" in ex.text
    assert ex.low_confidence is True and not ex.no_body  # a Python bool: the report line is JSON


def test_a_page_of_links_is_unsure() -> None:
    items = "".join(f"<li><a href='/s/{i}'>Another story number {i} worth reading today</a></li>" for i in range(12))
    ex = _decide(f"<html><body><main><h2>More stories</h2><ul>{items}</ul></main></body></html>")
    assert ex.text and ex.low_confidence


def test_a_page_without_a_headline_block_takes_the_title_without_the_site_name() -> None:
    html = f"<html><head><title>Tram plan approved - City Times</title></head><body><main>{PARAS}</main></body></html>"
    ex = _decide(html)
    assert ex.title == "Tram plan approved" and ex.headline is None and ex.text.startswith("Paragraph 0")


@pytest.mark.parametrize(("title", "expected"), [
    ("Tram plan approved | City Times", "Tram plan approved"),
    ("开发者改进了培训计划_旅游记", "开发者改进了培训计划"),
    ("City Times - Tram plan for the old harbour approved", "Tram plan for the old harbour approved"),
    ("Jean-Luc wins again", "Jean-Luc wins again"),
    ("Plain title", "Plain title"),
])
def test_site_free_title(title: str, expected: str) -> None:
    assert site_free_title(title) == expected


def test_roles_read_text_and_class_cues() -> None:
    doc = segment("<body><div class='meta'><span>2024-09-28 10:30</span> <span>来源：旅游记</span></div>"
                  "<p>Posted by Max on October 29, 2012 at 2:54 pm</p><h2>May 2005</h2>"
                  "<div id='ad-mid' class='ad-slot'>推广：限时优惠，点击了解详情</div><p>Sponsored</p>"
                  "<div class='comments-open'><p>An article paragraph in a body class.</p></div>"
                  "<ol class='commentlist'><li>A reader's comment.</li></ol></body>")
    by = {b.text: b for b in doc.blocks}
    assert is_byline(by["2024-09-28 10:30 来源：旅游记"])
    assert is_byline(by["Posted by Max on October 29, 2012 at 2:54 pm"])
    assert not is_byline(by["May 2005"])  # a date alone is a heading, not a byline
    assert is_promo(by["推广：限时优惠，点击了解详情"]) and is_promo(by["Sponsored"])
    assert not is_promo(by["An article paragraph in a body class."])
    assert not in_comments(by["An article paragraph in a body class."])  # "comments-open" names no thread
    assert in_comments(by["1. A reader's comment."])


def test_evaluation_scores_the_title_and_byline_where_the_gold_holds_them() -> None:
    ex = Extraction("Body.", title="Headline", headline=3, byline="By Ann, May 3, 2025")
    assert scored_text(ex, GoldConvention(title=True, byline=True)) == "Headline\nBy Ann, May 3, 2025\nBody."
    assert scored_text(ex, GoldConvention(title=True)) == "Headline\nBody."
    assert scored_text(ex, GoldConvention()) == "Body." == scored_text(ex, None)
    no_block = Extraction("Body.", title="From <title>", blocks=[])  # ours, no headline block: nothing put back
    assert scored_text(no_block, GoldConvention(True, True)) == "Body."
    assert scored_text(Extraction("", title="Headline", headline=0), GoldConvention(True)) == "Headline"
    assert gold_convention("daniel") == GoldConvention(True, False, True)
    assert gold_convention(Path("/data/wcxb-dev")) == GoldConvention(False, False, True)
    assert gold_convention("my-pages") == GoldConvention() == gold_convention(None)


def test_markdown_has_one_top_level_heading() -> None:
    doc = segment("<body><h1>Second h1 in the body</h1><p>Text.</p></body>")
    md = to_markdown("Headline", doc.blocks)
    assert [ln for ln in md.splitlines() if ln.startswith("# ")] == ["# Headline"]
    assert "## Second h1 in the body" in md


@pytest.mark.parametrize("name", ["article-utf8", "news-gbk-undeclared"])
def test_the_sample_pages_come_out_without_dateline_and_promo(name: str) -> None:
    import bodyblocks
    from bodyblocks.batch.outputs import render

    ex = bodyblocks.load(device="cpu").extract((SAMPLES / f"{name}.html").read_bytes())
    gold = (SAMPLES / f"{name}.gold.txt").read_text(encoding="utf-8")
    assert ex.title == gold.splitlines()[0]  # the gold holds the headline (GOLD_CONVENTIONS["samples"])
    assert ex.text.split() == "\n".join(gold.splitlines()[1:]).split()
    assert "来源：" in ex.byline and "推广：" not in ex.text and "来源：" not in ex.text
    md = render(ex, "md", name)
    assert [ln for ln in md.splitlines() if ln.startswith("# ")] == [f"# {ex.title}"]
    assert render(ex, "txt", name) == f"{ex.title}\n\n{ex.text}\n"  # the headline, a blank line, the body


def test_the_english_sample_comes_out_as_its_gold_and_its_txt_starts_with_the_headline() -> None:
    import bodyblocks
    from bodyblocks.batch.outputs import render
    from bodyblocks.types import Extraction

    ex = bodyblocks.load(device="cpu").extract((SAMPLES / "article-en.html").read_bytes())
    gold = (SAMPLES / "article-en.gold.txt").read_text(encoding="utf-8").splitlines()
    assert ex.title == gold[0] and ex.text.splitlines() == gold[1:]  # no byline, share links, promo or comments
    assert (ex.author, ex.date, ex.language) == ("Nadia Okafor", "2025-03-14", "en")
    txt = render(ex, "txt", "article-en").splitlines()
    assert txt[:2] == [gold[0], ""] and txt[2:] == gold[1:]
    assert render(Extraction(text="", title="A headline", no_body=True), "txt", "k") == ""  # no body: empty
    assert render(Extraction(text="Body.", title=" Two\n lines "), "txt", "k") == "Two lines\n\nBody.\n"
    assert render(Extraction(text="Body."), "txt", "k") == "Body.\n"  # no title: the body alone
    assert render(Extraction(text="Quay Works\nBody.", title="Quay works"), "txt", "k") == "Quay Works\nBody.\n"


def test_the_comments_option_reaches_the_rule() -> None:
    from bodyblocks.cli import build_parser
    from bodyblocks.loading.checkpoints import load_extractor
    from bodyblocks.loading.options import ExtractOptions

    assert load_extractor("gbt", options=ExtractOptions(comments=True)).rule.comments
    assert not load_extractor("gbt").rule.comments
    assert build_parser().parse_args(["extract", "in", "--out", "o", "--comments"]).comments


def test_json_output_holds_title_text_and_byline_apart() -> None:
    import json

    from bodyblocks.batch.outputs import render

    rec = json.loads(render(_decide(ARTICLE), "json", "page"))
    assert rec["title"] == "Harbour works begin" and rec["byline"] == "By Ann Lee, May 3, 2025"
    assert rec["text"].startswith("Paragraph 0")


def test_a_headline_shown_twice_is_the_title_once_and_not_body_too() -> None:
    twice = ARTICLE.replace("<h1>Harbour works begin</h1>",
                            "<h1>Harbour works begin</h1><h2 class='title'>Harbour  works\nbegin</h2>")
    ex = _decide(twice)
    assert ex.title == "Harbour works begin" and "Harbour works begin" not in ex.text.replace("\n", " ")
    assert ex.text.splitlines()[0].startswith("Paragraph 0")
    assert ex.blocks is not None and ex.kept is not None
    assert to_markdown(ex.title, [ex.blocks[i] for i in ex.kept]).count("Harbour works begin") == 1
    header = twice.replace("<main>", "<main><div class='hd'>HARBOUR WORKS BEGIN</div>")  # a copy above it
    assert "HARBOUR" not in _decide(header).text
    untitled = (f"<html><body><main><h1>Harbour works begin</h1>{PARAS}<h3>Harbour works begin</h3></main>"
                "</body></html>")  # no title channel: the <h1> is the headline, the copy lower down goes too
    ex = _decide(untitled)
    assert ex.title == "Harbour works begin" and "Harbour works begin" not in ex.text


def _decide_page(html: str) -> Extraction:
    """The rule on a page segmented as the extractors do (segment_page), the blocks of its last table row or
    below <main> at P(body) 0.9, the others 0.1."""
    from bodyblocks.extraction.segmenting import segment_page

    doc = segment_page(html)
    probs = np.array([0.9 if "/main" in b.tag_path or "/td.content" in b.tag_path else 0.1 for b in doc.blocks],
                     np.float32)
    return RULE.decide(doc, probs, "test")


def _table_page(headline_cell: str) -> str:
    return (f"<html><body><table><tr><td><a href='/'>Home</a> | <a href='/n'>News</a></td></tr><tr>{headline_cell}"
            f"</tr><tr><td>2024-05-01 08:00</td></tr><tr><td class='content'>{PARAS}</td></tr></table></body></html>")


@pytest.mark.parametrize("cell", ["<td align='center'><b>Harbour works begin</b></td>",
                                  "<td class='title'>Harbour works begin</td>",
                                  "<td><font size='5'>Harbour works begin</font></td>",
                                  "<td style='font-size: 20px'><span>Harbour works begin</span></td>"])
def test_a_page_with_no_title_channel_takes_its_headline_from_a_prominent_cell_above_the_body(cell: str) -> None:
    ex = _decide_page(_table_page(cell))
    assert ex.title == "Harbour works begin" and ex.headline is not None
    assert ex.text.splitlines()[0].startswith("Paragraph 0")


def test_a_chinese_headline_cell_is_the_title_and_plain_or_short_cells_are_not() -> None:
    zh = _decide_page(_table_page("<td class='tit'><strong>我市召开防汛工作会议</strong></td>"))
    assert zh.title == "我市召开防汛工作会议"
    assert _decide_page(_table_page("<td>Harbour works begin</td>")).title == ""  # not shown as a headline
    assert _decide_page(_table_page("<td><b>Menu</b></td>")).title == ""  # one word
    titled = _table_page("<td><b>Harbour works begin</b></td>").replace("<body>", "<head><title>Other | Site"
                                                                            "</title></head><body>")
    assert _decide_page(titled).title == "Other"  # a title channel: as before
    section = f"<html><body><main><h2>Background of the works</h2>{PARAS}</main></body></html>"
    ex = _decide_page(section)  # a heading opening the body stays body
    assert ex.title == "" and ex.text.startswith("Background of the works")


def test_every_tool_gets_its_own_headline_and_byline_back_where_the_gold_holds_them() -> None:
    both = GoldConvention(title=True, byline=True, standfirst=True)
    peer = Extraction("First line.\nSecond.", title="Headline", author="Ann Lee")  # a title channel, no blocks
    assert scored_text(peer, both) == "Headline\nAnn Lee\nFirst line.\nSecond."
    assert scored_text(peer, GoldConvention(title=True)) == "Headline\nFirst line.\nSecond."
    assert scored_text(peer, GoldConvention(False, False, True)) == peer.text == scored_text(peer, body_only(both))
    opens = Extraction("Kicker\nHead line\nBy Ann Lee\nBody.", title="Headline", author="Ann Lee")
    assert scored_text(opens, both) == opens.text  # the body already opens with them: nothing twice
    late = Extraction("a\nb\nc\nHeadline\nBody.", title="Headline")  # past the opening lines: put back
    assert scored_text(late, both) == "Headline\n" + late.text
    assert scored_text(Extraction("", title="Headline"), both) == "Headline"
    ours = Extraction("Body.", title="Headline", headline=2, byline="By Ann", standfirst="The dek.", author="Ann")
    assert scored_text(ours, body_only(both)) == "The dek.\nBody."  # the standfirst is body to every source


def test_evaluate_scores_each_extraction_with_and_without_its_headline(tmp_path: Path) -> None:
    import gzip
    import json

    from bodyblocks.evaluation.evaluate import BODY_ONLY, EvalConfig, evaluate

    body = ["The council approved the transport plan on Tuesday after a long debate.",
            "Three tram lines will connect the northern suburbs with the old town by 2030."]
    ds = tmp_path / "dragnet"  # its gold holds the headline and the byline
    (ds / "html").mkdir(parents=True)
    (ds / "gold").mkdir()
    (ds / "html" / "a.html.gz").write_bytes(gzip.compress(b"<p>x</p>"))
    (ds / "gold" / "a.txt").write_text("Trams by 2030\nBy Ann Lee\n" + "\n".join(body), encoding="utf-8")
    (ds / "pages.jsonl").write_text(json.dumps({"id": "a", "url": None, "lang": "en", "split": "test", "html":
                                               "html/a.html.gz", "gold": "gold/a.txt"}) + "\n", encoding="utf-8")

    class Peer:
        name = "peer"

        def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
            return Extraction("\n".join(body), title="Trams by 2030", author="Ann Lee")

    rows = {}
    for mode in ("with", "without", "both"):
        report, _ = evaluate(EvalConfig([str(ds)], ["peer"], workers=0, headline=mode), lambda n, o: Peer())
        rows[mode] = {r["extractor"]: r for r in report["summary"] if r["dataset"] == "dragnet" and r["lang"] == "*"}
        assert report["selection"]["dragnet"]["headline"] == mode
    assert set(rows["both"]) == {"peer", "peer" + BODY_ONLY}
    assert rows["both"]["peer"]["token_f1"] == rows["with"]["peer"]["token_f1"] > rows["without"]["peer"]["token_f1"]
    assert rows["both"]["peer" + BODY_ONLY]["token_f1"] == rows["without"]["peer"]["token_f1"]
    assert rows["with"]["peer"]["token_recall"] > rows["without"]["peer"]["token_recall"]
    with pytest.raises(ValueError, match="headline"):
        EvalConfig([str(ds)], ["peer"], headline="sometimes")


FIGURE = ("<figure><img src='/w.jpg'><figcaption>Water covers Mill Street on Monday. (AP Photo/John Doe)"
          "</figcaption></figure>")


def test_captions_and_comments_are_fields_of_their_own() -> None:
    page = ARTICLE.replace(PARAS, PARAS[: len(PARAS) // 2] + FIGURE + PARAS[len(PARAS) // 2:])
    ex = _decide(page)
    assert ex.captions == ["Water covers Mill Street on Monday. (AP Photo/John Doe)"] and "Mill Street" not in ex.text
    assert ex.blocks is not None and [ex.blocks[i].text for i in ex.caption_blocks] == ex.captions
    assert ex.comments == ["Great article, thanks for writing it up.",
                           "I disagree with most of it, but it was an interesting read."]
    assert "Great article" not in ex.text
    kept = _decide(page, ablated(RULE, captions=False))  # the step off: body again
    assert "Mill Street" in kept.text and kept.captions == []
    asked = _decide(page, DecisionRule.from_meta({"threshold": 0.5}, comments=True))  # kept as body: no field
    assert "Great article" in asked.text and asked.comments == []


def test_a_gold_that_holds_captions_gets_them_back_where_they_stand() -> None:
    page = ARTICLE.replace(PARAS, PARAS[: len(PARAS) // 2] + FIGURE + PARAS[len(PARAS) // 2:])
    ex = _decide(page)
    lines = scored_text(ex, GoldConvention(captions=True)).splitlines()
    assert lines[2].startswith("Water covers Mill Street") and lines[1].startswith("Paragraph 1")
    assert "Mill Street" not in scored_text(ex, GoldConvention(title=True, byline=True, standfirst=True))
    assert gold_convention("l3s-gn1").captions and not gold_convention("dragnet").captions


def test_outputs_carry_captions_and_comments() -> None:
    import json

    from bodyblocks.batch.outputs import render

    ex = _decide(ARTICLE.replace(PARAS, FIGURE + PARAS))
    rec = json.loads(render(ex, "json", "page"))
    assert rec["captions"] == ex.captions != [] and rec["comments"] == ex.comments != []
    md = render(ex, "md", "page")
    front = md.split("---\n")[1]
    assert '\ncaptions:\n  - "Water covers Mill Street' in "\n" + front and "comments:\n  - \"Great article" in front
    assert "Mill Street" not in md.split("---\n", 2)[2]  # not in the body


def test_a_page_whose_captions_are_its_content_keeps_them() -> None:
    cards = "".join(f"<div class='card-caption'><p>Program {i}: a twelve-month course for leaders who want to learn"
                    f" how to run a digital business, with projects and mentors along the way.</p></div>"
                    for i in range(5))
    ex = _decide(f"<html><body><main><h1>Programs</h1>{cards}</main></body></html>")
    assert ex.captions == [] and "Program 4" in ex.text  # more than CAPTION_SHARE of the kept text: the content


def test_captions_the_model_left_out_are_the_articles_when_they_sit_with_it() -> None:
    lead = FIGURE.replace("Water covers", "Lead photo: water covers")
    aside = ("<aside><figure><img src='/o.jpg'><figcaption>Another story's photo. (AP Photo/Jane Roe)</figcaption>"
             "</figure></aside>")
    page = ARTICLE.replace("<div class='byline'>", lead + "<div class='byline'>").replace("</main>", aside + "</main>")
    page = page.replace("<div class='comment'><p>Great", "<div class='comment'><p>ann_lee</p><p>Great")
    doc = segment(page)
    probs = np.array([0.1 if "figcaption" in b.tag_path else 0.9 if "/main" in b.tag_path else 0.1
                      for b in doc.blocks], np.float32)
    ex = RULE.decide(doc, probs, "test")
    assert ex.captions == ["Lead photo: water covers Mill Street on Monday. (AP Photo/John Doe)"]  # not the aside's
    assert ex.comments[0].startswith("Great article") and "ann_lee" not in ex.comments  # a name is no comment


def test_front_matter_lists_are_quoted_yaml_strings_a_renderer_shows_as_text() -> None:
    from bodyblocks.page.markdown import front_matter

    fm = front_matter({"author": None, "captions": ["<img src=x onerror=alert(1)> [a](javascript:x)", "二"],
                       "comments": []})
    assert fm.startswith("---\ncaptions:\n  - \"") and "<" not in fm and "](" not in fm and "comments" not in fm
    assert '  - "二"' in fm


BLOG = (
    "<html><head><title>Why the web needs forms</title></head><body><div id='sidebar'><h2>Archives</h2>"
    "<ul><li><a href='/2007/03'>March 2007</a></li></ul></div><div class='content'><h3>Why the web needs forms</h3>"
    f"{PARAS}<p class='posted'>Posted by Kathy on March 20, 2007</p><h2>{{heading}}</h2>"
    "<p>Great post, I agree with every word of it and I will send it to my team.</p>"
    "<p class='by'>Posted by: atmos | Mar 20, 2007</p>"
    "<p>I do not agree: forms are the worst part of the web, and the post says too little on why.</p>"
    "</div></body></html>"
)


def _blog(heading: str, rule: DecisionRule = RULE) -> Extraction:
    """The rule on a blog whose comments are siblings of the post's paragraphs (no container names them), every
    block in the post's element at P(body) 0.9."""
    doc = segment(BLOG.replace("{heading}", heading))
    probs = np.array([0.9 if "div.content" in b.tag_path else 0.1 for b in doc.blocks], np.float32)
    return rule.decide(doc, probs, "test")


@pytest.mark.parametrize("heading", ["Comments", "3 Responses to “Why the web needs forms”", "Leave a Reply",
                                     "Reader comments", "网友评论", "One thought on “Why the web needs forms”"])
def test_a_comments_heading_takes_what_follows_it_out_of_the_body(heading: str) -> None:
    ex = _blog(heading)
    assert ex.text.splitlines()[0].startswith("Paragraph 0") and heading not in ex.text
    assert "Great post" not in ex.text and "I do not agree" not in ex.text
    assert ex.comments == ["Great post, I agree with every word of it and I will send it to my team.",
                           "Posted by: atmos | Mar 20, 2007",
                           "I do not agree: forms are the worst part of the web, and the post says too little on why."]
    off = _blog(heading, ablated(RULE, comment_headings=False))  # the step off
    assert "Great post" in off.text and off.comments == []


@pytest.mark.parametrize("heading", ["Discussion", "Results", "Responses", "76 Replies", "Comments on the draft law",
                                     "Comment is free", "Comments on the council's"
                                     " harbour plan came from residents, traders and the port authority"])
def test_other_headings_start_no_comments(heading: str) -> None:
    # a paper's "Discussion", a forum's "76 Replies" (a thread's replies are its body), a section of the article
    # about comments (no count, no quoted title), a long heading
    assert "Great post" in _blog(heading).text


def test_a_comments_heading_by_its_id_and_no_comments_link() -> None:
    by_id = _blog("Thoughts from readers").text  # a heading the text list lacks, but its element's id names it
    assert "Great post" in by_id
    doc = segment(BLOG.replace("<h2>{heading}</h2>", "<h2 id='comments'>Thoughts from readers</h2>"))
    probs = np.array([0.9 if "div.content" in b.tag_path else 0.1 for b in doc.blocks], np.float32)
    assert "Great post" not in RULE.decide(doc, probs, "test").text
    # "12 Comments" as a link in the post's meta line is no heading: the post after it stays
    link = BLOG.replace("<h2>{heading}</h2>", "").replace(
        "<h3>Why the web needs forms</h3>", "<h3>Why the web needs forms</h3><p class='comments'>"
        "<a href='#c'>12 Comments</a></p>")
    doc = segment(link)
    probs = np.array([0.9 if "div.content" in b.tag_path else 0.1 for b in doc.blocks], np.float32)
    assert RULE.decide(doc, probs, "test").text.splitlines()[0].startswith("Paragraph 0")


def test_a_gold_that_holds_comments_gets_every_tools_comments_back_after_the_body() -> None:
    ours = _decide(ARTICLE)
    assert scored_text(ours, GoldConvention(comments=True)).splitlines()[-2:] == [
        "Great article, thanks for writing it up.", "I disagree with most of it, but it was an interesting read."]
    assert "Great article" not in scored_text(ours, GoldConvention(title=True))
    peer = Extraction("Body.\nA reader: nice.", title="T", comments=["A reader: nice.", "Another reader: no."])
    assert scored_text(peer, GoldConvention(comments=True)) == "Body.\nA reader: nice.\nAnother reader: no."
    assert scored_text(peer, GoldConvention()) == "Body.\nA reader: nice."  # a gold without comments: none back
    said = Extraction("Body says thanks!", title="T", comments=["thanks!"])  # a line of its own, not a substring
    assert scored_text(said, GoldConvention(comments=True)) == "Body says thanks!\nthanks!"
    assert gold_convention("cleaneval-en").comments and not gold_convention("dragnet").comments


def test_a_comment_kicker_above_the_article_heads_no_comments() -> None:
    # an opinion piece's kicker "Comment" in the article's own element, before its first kept block
    html = BLOG.replace("<h3>Why the web needs forms</h3>", "<h2>Comment</h2><h3>Why the web needs forms</h3>")
    doc = segment(html.replace("{heading}", "Comments"))
    probs = np.array([0.9 if "div.content" in b.tag_path and b.text != "Comment" else 0.1 for b in doc.blocks],
                     np.float32)
    ex = RULE.decide(doc, probs, "test")
    assert "Paragraph 0" in ex.text and "Great post" not in ex.text  # the comments after the post still go


@pytest.mark.parametrize("line", ["Comments", "Comments (12)", "12 comments", "Leave a comment", "网友评论"])
def test_a_line_that_is_only_a_comments_heading_heads_comments_whatever_its_element(line: str) -> None:
    # a styled <div> heading (no <h2>, no id or class naming comments) over readers' comments in the post's element
    doc = segment(BLOG.replace("<h2>{heading}</h2>", f"<div class='yvhd'>{line}</div>"))
    probs = np.array([0.9 if "div.content" in b.tag_path else 0.1 for b in doc.blocks], np.float32)
    ex = RULE.decide(doc, probs, "test")
    assert "Paragraph 0" in ex.text and "Great post" not in ex.text and ex.comments[0].startswith("Great post")
    # a line that says more than that is text ("Comments are closed on this story, as on every story" stays)
    doc = segment(BLOG.replace("<h2>{heading}</h2>", f"<div class='yvhd'>{line} were many, and all of them kind</div>"))
    assert "Great post" in RULE.decide(doc, probs[: len(doc.blocks)], "test").text


def _flat(html: str, low: tuple[str, ...] = ()) -> Extraction:
    """The rule on a page whose blocks have P(body) 0.9, those whose text starts with one of `low` 0.1."""
    doc = segment(html)
    probs = np.array([0.1 if b.text.startswith(low) else 0.9 for b in doc.blocks], np.float32) if low else np.full(
        len(doc.blocks), 0.9, np.float32)
    return RULE.decide(doc, probs, "test")


def test_a_comments_heading_needs_the_article_before_it_and_ends_at_the_next_heading() -> None:
    paras = "".join(f"<p>Paragraph {i} of the harbour story, with enough words to read as body text here.</p>"
                    for i in range(4))
    kicker = (f"<html><body><div class='article'><h1>港口工程开工</h1><div class='column'>评论</div>{paras}</div>"
              "</body></html>")
    assert "Paragraph 3" in _flat(kicker).text  # a column's kicker under the headline: no article before it
    meta = kicker.replace("<div class='column'>评论</div>", "<p>2 comments</p>")
    assert "Paragraph 3" in _flat(meta).text
    tutorial = (f"<html><body><main><h1>Python syntax</h1><h2>Indentation</h2>{paras}<h2>Comments</h2>"
                "<p>A comment starts with a hash sign and runs to the end of the line in Python.</p>"
                "<h2>Variables</h2><p>A variable is created the moment you first assign a value to it in Python.</p>"
                "</main></body></html>")
    assert "A variable is created" in _flat(tutorial).text  # the section ends at the next heading of its level
    ministry = kicker.replace("<div class='column'>评论</div>", "").replace(
        "</div></body>", "<h2>No comment from the ministry</h2><p>The ministry did not answer our questions.</p>"
        "</div></body>")
    assert "did not answer" in _flat(ministry).text


def test_a_footer_under_a_comments_heading_is_no_comment() -> None:
    html = (f"<html><body><h1>Harbour works begin</h1>{PARAS}<h2>Comments</h2>"
            "<p>Great post, I agree with every word of it and I will send it to my team.</p>"
            "<p>Copyright 2025 City Times. All rights reserved.</p></body></html>")
    ex = _flat(html, low=("Copyright",))
    assert ex.comments == ["Great post, I agree with every word of it and I will send it to my team."]


def test_a_sidebars_widgets_are_not_body() -> None:
    from bodyblocks.extraction.roles import in_sidebar

    widgets = "".join(f"<li class='widget widget_text' id='text-{i}'><h2 class='widgettitle'>Friends {i}</h2><div "
                      f"class='textwidget'><p>Blurb {i}: this site is supported by a friend who writes about the "
                      "harbour too.</p></div></li>" for i in range(3))
    side = f"<div id='sidebar'><ul>{widgets}</ul></div>"
    html = ARTICLE.replace("</main>", side + "</main>")  # the model half believes the blurbs: they sit in <main>
    ex = _decide(html)
    assert ex.text.splitlines()[0].startswith("Paragraph 0") and "Blurb" not in ex.text and "Friends" not in ex.text
    assert "Blurb 0" in _decide(html, ablated(RULE, sidebars=False)).text  # the step off: kept
    # a whole class name, not a token of one: a theme's "content-sidebar-wrap" wraps the article too
    wrapped = ARTICLE.replace("<main>", "<main><div class='content-sidebar-wrap'>").replace("</main>", "</div></main>")
    assert "Paragraph 3" in _decide(wrapped).text
    by_path = {b.text: b for b in segment(html).blocks}
    assert in_sidebar(by_path["Friends 0"]) and not in_sidebar(by_path["Paragraph 0 of the harbour story, with "
                                                                         "enough words to read as body text here."])
    from bodyblocks.extraction.roles import _in_sidebar

    assert _in_sidebar("html/body/div#sidebar/ul/li.widget/p") and _in_sidebar("html/body/aside.widget-area/p")
    assert not _in_sidebar("html/body.sidebar.home/main/p") and not _in_sidebar("html/body/div.widgettitle/p")
    # a news site's rail or right column
    assert _in_sidebar("html/body/div#rightRail.rightRail/ul/li/p") and _in_sidebar("html/body/div.right-rail/p")
    assert _in_sidebar("html/body/div#rightcol/div/p") and not _in_sidebar("html/body/div.guardrail/p")
    # widgets holding more than half of the kept text are the page's content: kept
    few = ("<html><head><title>Links</title></head><body><main><p>Our friends.</p>"
           f"{side}</main></body></html>")
    assert "Blurb 2" in _decide(few).text


def test_a_storys_key_points_box_is_not_body() -> None:
    from bodyblocks.extraction.roles import key_points

    box = ("<div class='highlights'><div>STORY HIGHLIGHTS</div><ul><li>NEW: the harbour works start on Monday</li>"
           "<li>The old bridge closes for a year</li></ul></div>")
    html = ARTICLE.replace("<div class='byline'>By Ann Lee, May 3, 2025</div>",
                           "<div class='byline'>By Ann Lee, May 3, 2025</div>" + box)
    ex = _decide(html)
    assert "HIGHLIGHTS" not in ex.text and "bridge closes" not in ex.text and "Paragraph 0" in ex.text
    assert "bridge closes" in _decide(html, ablated(RULE, key_points=False)).text  # the step off: kept
    # a heading "Key points" over the article's own paragraphs heads no box: it stays, and so do they
    section = ARTICLE.replace(PARAS, "<h2>Key points</h2>" + PARAS)
    assert "Key points" in _decide(section).text
    blocks = segment(html).blocks
    marked = [b.text for b, m in zip(blocks, key_points(blocks), strict=True) if m]
    assert marked == ["STORY HIGHLIGHTS", "NEW: the harbour works start on Monday", "The old bridge closes for a year"]
    # a list with an item longer than a key point is the article's own: none of it is marked
    long = ("<h3>Key points</h3><ul><li>Short point one.</li><li>" + "A long point of the article itself. " * 12
            + "</li><li>Short point three.</li></ul>")
    own = ARTICLE.replace(PARAS, PARAS + long)
    assert "Short point one" in _decide(own).text and "Short point three" in _decide(own).text
    assert not key_points(segment(own).blocks).any()
    # a page that is its key points (more than half of what is kept): kept
    alone = ("<html><head><title>Briefing</title></head><body><main><p>Today.</p>" + box + "</main></body></html>")
    assert "bridge closes" in _decide(alone).text


def test_a_blogs_trackbacks_are_comments() -> None:
    from bodyblocks.extraction.roles import in_comments

    track = ("<div class='trackbacks'><h3 class='trackbacks-header'>TrackBack</h3><div class='trackbacks-info'><p>"
             "TrackBack URL for this entry: http://www.example.com/services/trackback/6a00d8341c</p></div></div>")
    html = ARTICLE.replace("<a href='/follow'>Follow</a>", track)
    ex = _decide(html)
    assert "TrackBack" not in ex.text and "Paragraph 3" in ex.text
    by_text = {b.text: b for b in segment(html).blocks}
    assert in_comments(by_text["TrackBack"])
    from bodyblocks.extraction.roles import _in_comments

    assert _in_comments("html/body/div#content/ol.trackback_list/li") and _in_comments("html/body/ul/li.pingback/p")
    assert not _in_comments("html/body/div.trackbackable/p")
    # one trackback line inside the post heads no comments section: the paragraphs after it stay
    line = "<p class='trackback'>Trackback: http://blog.example.com/tb/123</p>"
    inside = ARTICLE.replace(PARAS, PARAS + line + PARAS.replace("Paragraph", "Later paragraph"))
    ex = _decide(inside)
    assert "Later paragraph 3" in ex.text and not any("Later paragraph" in c for c in ex.comments)
