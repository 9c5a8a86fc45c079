"""The segmenter: blocks, tag paths, features, invisibles, malformed and hostile input."""

from __future__ import annotations

import gzip
import io
import json
import time

import pytest

from bodyblocks.cli import main
from bodyblocks.errors import InputError
from bodyblocks.page.segment import segment

PAGE = """<!DOCTYPE html><html><head><title>站点 - 标题</title>
<meta property="og:title" content="会议召开">
<style>p { color: red }</style><script>var site = "not text";</script></head>
<body><div class="header"><a href="/">首页</a> <a href="/news">新闻</a></div>
<div id="main" class="article-body">
  <h2>处理流程</h2>
  <p>第一段<b>加粗</b>文字，<a href="/x">链接</a>。<br>第二行&amp;实体&nbsp;文字</p>
  <p>Second   paragraph
     spans lines.</p>
  <!-- a comment that is not text -->
  <noscript>enable js</noscript><template><p>template text</p></template>
  <div style="display: none">hidden div</div><span hidden>hidden span</span>
  <ul><li>item one</li><li>item two</li></ul>
  <table><tr><td>cell A</td><td>cell B</td></tr></table>
</div></body></html>"""


@pytest.fixture(params=["bs4", "lxml"])
def parser(request: pytest.FixtureRequest) -> str:
    return request.param


def texts(html: str | bytes, parser: str = "bs4") -> list[str]:
    return [b.text for b in segment(html, parser=parser).blocks]


def test_blocks_in_order_with_invisibles_removed(parser: str) -> None:
    assert texts(PAGE, parser) == [
        "首页 新闻", "处理流程", "第一段加粗文字，链接。\n第二行&实体 文字", "Second paragraph spans lines.",
        "item one", "item two", "cell A\tcell B",
    ]


def test_tag_paths_xpaths_and_features(parser: str) -> None:
    doc = segment(PAGE, parser=parser)
    nav, heading, para = doc.blocks[0], doc.blocks[1], doc.blocks[2]
    assert nav.tag_path == "html/body/div.header" and nav.link_density == 1.0 and nav.in_link_only
    assert heading.tag_path == "html/body/div#main.article-body/h2" and heading.heading_level == 2
    assert heading.is_heading and heading.text_len == 4
    assert para.xpath == "/html[1]/body[1]/div[2]/p[1]" and para.sibling_paragraphs == 2
    assert para.link_len == 2 and 0 < para.link_density < 0.2 and para.punct_count == 2
    assert doc.blocks[4].is_list_item and doc.blocks[6].is_table_cell and doc.blocks[6].tag == "tr"
    assert [b.index for b in doc.blocks] == list(range(len(doc.blocks)))
    assert doc.title == "会议召开"


def test_aria_hidden_and_react_segments_are_displayed(parser: str) -> None:
    # aria-hidden hides from screen readers only; React's <div hidden id="S:0"> is revealed by its script
    html = ("<body><p aria-hidden='true'>shown to the eye</p><div hidden id='B:0'>placeholder</div>"
            "<div hidden id='S:0'><p>streamed article text</p></div><div hidden id='S:x'>still hidden</div></body>")
    assert texts(html, parser) == ["shown to the eye", "streamed article text"]


def test_app_shell_falls_back_to_noscript_content(parser: str) -> None:
    body = "".join(f"<p>Post number {i} of the discussion, with a sentence of text.</p>" for i in range(20))
    shell = f"<body><div id='app'>Loading…</div><noscript><div class='crawler'>{body}</div></noscript></body>"
    got = texts(shell, parser)
    assert got[0] == "Loading…" and len(got) == 21
    assert got[1] == "Post number 0 of the discussion, with a sentence of text."
    # a page with real visible text keeps ignoring its noscript
    page = f"<body>{body}<noscript><p>Please enable JavaScript to comment.</p></noscript></body>"
    assert "Please enable JavaScript to comment." not in texts(page, parser)
    # a small noscript next to a near-empty page is not an app's no-JS view
    assert texts("<body><p>Hi</p><noscript>Enable JS</noscript></body>", parser) == ["Hi"]


def test_button_that_swallowed_the_page_is_walked(parser: str) -> None:
    # a missing </button> in the header puts the article inside the button; a browser displays it all
    paras = "".join(f"<p>Paragraph {i} of the article body.</p><span>x</span>" for i in range(40))
    html = f"<body><header><button class='menu'><span>Menu</span><main>{paras}</main></header></body>"
    got = texts(html, parser)
    assert "Paragraph 39 of the article body." in got and len(got) > 40
    assert texts("<body><p>Text <button><span>Copy</span> link</button></p></body>", parser) == ["Text"]


def test_title_falls_back_to_title_tag_then_h1() -> None:
    assert segment("<title> A  page </title><p>x</p>").title == "A page"
    assert segment("<body><h1>Only heading</h1><p>x</p></body>").title == "Only heading"


def test_two_character_heading_survives() -> None:
    assert texts("<h3>简介</h3><p>正文内容。</p>") == ["简介", "正文内容。"]


def test_text_between_blocks_keeps_order() -> None:
    assert texts("<div>intro <p>para</p> outro <b>bold</b></div>") == ["intro", "para", "outro bold"]


def test_ordered_list_markers_as_displayed() -> None:
    html = "<ol start=3><li>three</li><li>four</li></ol><ol><li>one</li></ol>"
    assert texts(html) == ["3. three", "4. four", "1. one"]


def test_layout_cells_stay_separate_blocks(parser: str) -> None:
    html = "<table><tr><td><a href=/>Home</a> <a href=/n>News</a></td><td>Body line one<br>two</td></tr></table>"
    assert texts(html, parser) == ["Home News", "Body line one\ntwo"]


def test_pre_keeps_line_breaks() -> None:
    assert texts("<pre>a  b\n  c</pre>") == ["a  b\n  c"]


def test_unclosed_p_and_stray_div(parser: str) -> None:
    html = "<body><div class=header><p>one<p>two</div></div></div><p>three<div id=x>four</body>"
    assert texts(html, parser) == ["one", "two", "three", "four"]


def test_unquoted_attributes(parser: str) -> None:
    doc = segment("<div class=post-content id=body><p class=lead>text</p></div>", parser=parser)
    assert doc.blocks[0].tag_path.endswith("div#body.post-content/p.lead")


def test_missing_close_div_puts_body_under_header() -> None:
    html = "<body><div class=header><a href=/>Home</a><div class=content><p>Body one.</p><p>Body two.</p></body>"
    doc = segment(html)
    assert [b.text for b in doc.blocks] == ["Home", "Body one.", "Body two."]
    assert doc.blocks[1].tag_path == "html/body/div.header/div.content/p"


def test_gbk_bytes_and_gzip() -> None:
    raw = "<html><body><p>国务院办公厅关于印发处理流程的通知。</p></body></html>".encode("gbk")
    doc = segment(gzip.compress(raw))
    assert doc.encoding == "gb18030" and doc.blocks[0].text == "国务院办公厅关于印发处理流程的通知。"


def test_deep_nesting_does_not_overflow() -> None:
    html = "<html><body>" + "<div>" * 10_000 + "deep text" + "</div>" * 10_000 + "<p>after</p></body></html>"
    doc = segment(html)
    assert [b.text for b in doc.blocks] == ["deep text", "after"]
    assert doc.blocks[0].tag_path.startswith(".../") and doc.blocks[0].tag_path.count("/") <= 25


def test_huge_page_is_capped_not_hung() -> None:
    html = "<html><body>" + "<p>Paragraph text with words.</p>" * 100_000 + "</body></html>"
    start = time.perf_counter()
    doc = segment(html, max_chars=500_000)
    assert doc.truncated and 10_000 < len(doc.blocks) < 20_000
    assert time.perf_counter() - start < 60


@pytest.mark.parametrize("bad", [b"", b"  \n ", b"%PDF-1.4 binary", b"\x89PNG\r\n\x1a\nxxxx", bytes(range(256)) * 40])
def test_bad_input_raises_typed_error(bad: bytes) -> None:
    with pytest.raises(InputError):
        segment(bad)


def test_whitespace_only_markup_gives_no_blocks() -> None:
    assert segment("<html><body>  <div> </div> </body></html>").blocks == []


def test_truncated_gzip_is_typed_error() -> None:
    data = gzip.compress(b"<p>hello</p>" * 100)
    with pytest.raises(InputError):
        segment(data[:20])


def test_cli_segment_jsonl(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: ANN001
    page = tmp_path / "page.html.gz"
    page.write_bytes(gzip.compress(PAGE.encode("utf-8")))
    assert main(["segment", str(page)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows[1]["text"] == "处理流程" and rows[1]["tag_path"].endswith("/h2")
    assert main(["segment", str(page), "--format", "table"]) == 0
    assert "处理流程" in capsys.readouterr().out


def test_cli_segment_table_has_a_header_row_and_the_default_extractors_p_body(
        tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: ANN001
    from bodyblocks.loading import checkpoints

    monkeypatch.delenv(checkpoints.ENV_MODEL, raising=False)
    if checkpoints.shipped("ensemble") is None:
        pytest.skip("checkpoints/ensemble is not shipped in this checkout")
    monkeypatch.setattr(checkpoints, "default_checkpoint",  # the CPU's default
                        lambda device="auto", kind="ensemble": None)
    page = tmp_path / "page.html"
    page.write_text("<html><head><title>Quay | Port News</title></head><body><nav><a href='/'>Home</a> <a href='/n'>"
                    "News</a></nav><article><h1>Quay reopens</h1>" + "".join(
                        f"<p>The quay reopened on Monday after repairs, paragraph {i}, and ferries will run again from "
                        "the old harbour twice an hour.</p>" for i in range(5)) + "</article></body></html>")
    assert main(["segment", str(page), "--format", "table"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("# title: Quay | Port News") and "P(body): ensemble" in lines[0]
    assert lines[1].split()[:4] == ["#", "link", "P(body)", "kept"] and lines[1].endswith("text")
    rows = {line.split("  ")[-1]: line for line in lines[2:]}
    body = rows[next(t for t in rows if t.startswith("The quay reopened"))].split()
    assert float(body[2]) > 0.5 and body[3] == "body"
    assert rows["Quay reopens"].split()[3] == "title" and float(rows["Home News"].split()[2]) < 0.5
    assert main(["segment", str(page), "--format", "table", "--no-model"]) == 0
    unjudged = capsys.readouterr().out.splitlines()
    assert "not judged" in unjudged[0] and unjudged[2].split()[2:4] == ["-", "-"]


def test_cli_segment_bad_file(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: ANN001
    page = tmp_path / "junk.html"
    page.write_bytes(b"%PDF-1.4 \x00\x01")
    assert main(["segment", str(page)]) == 2
    assert "binary" in capsys.readouterr().err


def test_segment_reads_stream_safely() -> None:
    buf = io.BytesIO(b"<p>a</p>")
    assert texts(buf.getvalue()) == ["a"]


@pytest.mark.datasets
def test_bs4_and_lxml_give_the_same_blocks_on_dataset_pages(shared_datasets) -> None:  # noqa: ANN001
    """The fast parser is only allowed because it cuts real pages exactly like BeautifulSoup."""
    from bodyblocks.page.decode import read_bytes

    checked = 0
    for ds in sorted(p for p in shared_datasets.iterdir() if (p / "pages.jsonl").exists()):
        lines = (ds / "pages.jsonl").read_text(encoding="utf-8").splitlines()
        for line in lines[:: max(1, len(lines) // 12)]:
            data = read_bytes(ds / json.loads(line)["html"])
            a, b = segment(data, parser="bs4"), segment(data, parser="lxml")
            assert [(x.text, x.tag_path, x.xpath, x.sibling_paragraphs) for x in a.blocks] == [
                (x.text, x.tag_path, x.xpath, x.sibling_paragraphs) for x in b.blocks
            ], ds.name + "/" + json.loads(line)["id"]
            assert a.title == b.title
            checked += 1
    assert checked >= 80


def test_unclosed_title_does_not_swallow_the_page(parser: str) -> None:
    doc = segment("<html><head><title>Headline<body><p>Body text.</p></body></html>", parser=parser)
    assert doc.title == "Headline" and texts("<title>T<p>Body text.</p>", parser) == ["Body text."]


def test_object_fallback_content_is_visible(parser: str) -> None:
    html = '<object data="x.swf"><param name="a" value="b"><p>Fallback caption.</p></object>'
    assert texts(html, parser) == ["Fallback caption."]


@pytest.mark.parametrize("parser", ["lxml", "bs4"])
def test_content_that_libxml2_left_in_head_is_in_the_body(parser: str) -> None:
    """An element that is no head content ends the head in a browser; libxml2 kept it, and the whole page
    with it, inside <head> (a real page of l3s-gn1 came back with 0 blocks)."""
    page = ("<!DOCTYPE HTML PUBLIC '-//W3C//DTD HTML 4.01 Transitional//EN'><html><head><title>T</title>"
            "<meta name='robots' content='all'><mbox><div><p>Relief convoys reached the valley.</p>"
            "<p>The roads reopened on Tuesday.</p></div></mbox></head></html>")
    doc = segment(page, parser=parser)
    assert [b.text for b in doc.blocks] == ["Relief convoys reached the valley.", "The roads reopened on Tuesday."]
    assert doc.title == "T" and all(b.tag_path.startswith("html/body/mbox") for b in doc.blocks)
    typo = ("<html><head><title>T</title><scriptt>shown, as Chromium shows it</scriptt> and after"
            "<meta name='a'><style>p {}</style></head><body><p>The body.</p></body></html>")
    texts = [b.text for b in segment(typo, parser=parser).blocks]
    assert texts == ["shown, as Chromium shows it and after", "The body."]  # in the browser's order
    plain = "<html><head><title>T</title><meta name='a'><script>x()</script></head><body><p>Body.</p></body></html>"
    assert [b.text for b in segment(plain, parser=parser).blocks] == ["Body."]  # head content stays unseen


def test_bs4_descendant_tags_in_document_order_read_lazily() -> None:
    """_bs4_tags_below gives what bs4's descendants gives, without walking a deep subtree it is not asked for."""
    from itertools import islice

    from bs4 import BeautifulSoup, Tag

    from bodyblocks.page.walk import _bs4_tags_below

    soup = BeautifulSoup("<div><p>a<b>b<i>c</i></b></p>text<ul><li>x</li><li><a>y</a></li></ul><span></span></div>",
                         "lxml")
    div = soup.find("div")
    assert list(_bs4_tags_below(div)) == [d.name for d in div.descendants if isinstance(d, Tag)]
    deep = BeautifulSoup("<td>" + "<table><tr><td>" * 5000 + "x" + "</td></tr></table>" * 5000 + "</td>", "lxml")
    cell = deep.find("td")
    assert list(islice(_bs4_tags_below(cell), 3)) == ["table", "tr", "td"]


def _builder_only_walk(root, builder, noscript: bool = False) -> None:  # noqa: ANN001
    """The lxml walk with every element and text through _Builder.start, end, text and br: none of the cases
    that walk._walk_lxml handles itself."""
    from lxml import etree

    from bodyblocks.page.walk import _boundary, _lxml_tags_below, _skip

    walk = etree.iterwalk(root, events=("start", "end", "comment", "pi"))
    skipped = None
    for event, el in walk:
        if event == "start":
            if not isinstance(el.tag, str) or _skip(el.tag.lower(), el, noscript,
                                                    _lxml_tags_below(el) if el.tag.lower() == "button" else None):
                walk.skip_subtree()
                skipped = el
                continue
            name = el.tag.lower()
            if name == "br":
                builder.br()
                walk.skip_subtree()
                skipped = el
                continue
            builder.start(name, el, el, _boundary(name, _lxml_tags_below(el)))
            if el.text:
                builder.text(el.text)
        else:
            if event == "end":
                if el is skipped:
                    skipped = None
                else:
                    builder.end()
            if el.tail:
                builder.text(el.tail)


TRICKY = [
    PAGE,
    "<p>a <a href='x'>link <b>bold <i>it</i></b> <span>s</span></a> tail <a><div>block in link</div>after</a></p>",
    "<div><span>one</span><span><p>two</p></span><span>three<div>four</div></span><em><em><p>five</p></em></em></div>",
    "<div><span hidden>h</span><span style='display:none'>n</span><span style='color:red'>shown</span>"
    "<b style=''>empty style</b><div hidden id='S:1'><p>react</p></div><span>x</span><span><p>y</p></span></div>",
    "<p>a&nbsp;b\u00a0\u00a0c\u3000d\u200be\ufeff f\u2060g \x1c h\t\ti\r\nj\x0bk\x0cl \u2028 m</p>"
    "<p>\u200b</p><p>\x1c</p>",
    "<pre>  keep\n   <b>these</b>\n\tspaces <a>in  link</a></pre><listing> listing  <i>x</i> </listing>",
    "<ol start='3'><li>c</li><li><span>d</span></li><li><ol><li>inner</li></ol></li></ol>"
    "<ul><li><a>only link</a></li></ul>",
    "<table><tr><td>a <b>b</b></td><td><a>c</a></td><th><p>d</p></th><td>e<br>f</td></tr></table>",
    "<h2><span>head</span> <a>ing</a></h2><h3><h4>nested</h4></h3><dl><dt><b>t</b></dt><dd><i>d</i></dd></dl>",
    "<div>x<!-- c -->y<?pi z?>w<script>no</script>v<svg><text>no</text></svg>u<button>label</button>t</div>",
    "<DIV><SPAN>Upper</SPAN><FOO><BAR>unknown tags</BAR></FOO><P>p</P></DIV>",
    "<div>" + "<span><div>" * 30 + "deep" + "</div></span>" * 30 + "</div>",
    "<p><a><a><a>nested links</a></a></a></p><p><a href='1'>x</a> y <a>z</a></p>",
    "<body>text before any block<span> and a span</span><p>then a block</p>trailing</body>",
]


@pytest.mark.parametrize("noscript", [False, True])
def test_lxml_walk_inlined_cases_match_the_builder(noscript: bool) -> None:
    """The inline elements and white space that _walk_lxml handles itself give what the builder's own
    start, end and text give: every field of every block, and the same owning elements."""
    from dataclasses import astuple

    from bodyblocks.page.builder import _Builder
    from bodyblocks.page.segment import _prepare, parse
    from bodyblocks.page.walk import _lxml_p_children, walk_blocks

    for html in TRICKY + [f"<noscript><p>{t}</p></noscript>{t}" for t in TRICKY[1:4]]:
        tree = parse(_prepare(html, 10**6)[0], "lxml")
        owners: list = []
        fast = walk_blocks(tree, "lxml", noscript=noscript, owners=owners)
        builder = _Builder(_lxml_p_children, owners=[])
        _builder_only_walk(tree, builder, noscript)
        assert [astuple(b) for b in fast] == [astuple(b) for b in builder.finish()], html
        assert owners == builder.owners, html


def test_white_space_runs_collapse_as_ws() -> None:
    """_WS_RUN.sub(" ", text), which leaves a lone space alone, is WS.sub(" ", text)."""
    import random

    from bodyblocks.page.builder import _WS_RUN, WS

    rng = random.Random(7)
    alphabet = " \t\r\n\f\v\u00a0\u1680\u2000\u2005\u200a\u2028\u2029\u202f\u205f\u3000\u200b\x1c\x85ab中"
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert _WS_RUN.sub(" ", text) == WS.sub(" ", text), repr(text)


def test_page_builder_shortcodes_are_dropped_and_bracketed_prose_stays(parser: str) -> None:
    html = ('<div>[vc_row full_width="stretch_row"][vc_column width="1/2"][vc_column_text]The mill reopened '
            "[citation needed] in 1998 [1].[/vc_column_text][/vc_column][/vc_row]</div><p>[vc_empty_space]</p>"
            '<p>[et_pb_section fb_built="1"][et_pb_text]Visitors [sic] come daily.[/et_pb_text][/et_pb_section]</p>'
            "<pre>[vc_row] in code stays</pre><table><tr><td>A</td><td>[vc_column]B</td></tr></table>")
    assert texts(html, parser) == ["The mill reopened [citation needed] in 1998 [1].", "Visitors [sic] come daily.",
                                   "[vc_row] in code stays", "A\tB"]
    assert segment(html, parser=parser).blocks[0].text_len == len("Themillreopened[citationneeded]in1998[1].")


def test_the_markup_checks_find_tag_and_attribute_names_in_any_case() -> None:
    from bodyblocks.page.segment import _contains

    assert _contains("<p>a</p><TaBlE>", "<table") and _contains("<p>a</p><table>", "<table")
    assert _contains('<div DATA-Props="{}">', "<noscript", "data-props")
    assert not _contains("<p>table, figure</p>", "<table", "<figure")
    assert not _contains("<tᴀble>", "<table")  # ASCII letters only, as a browser reads tag names
    assert not _contains("", "<noscript")
