"""Markdown output rendered by a CommonMark renderer (markdown-it-py, raw HTML on, its own link check off) shows
the page's text as it is: no raw HTML, no link whose scheme is not http, https or mailto, and the text a reader
sees is the page's, for hostile text (HTML, Markdown syntax, entities, backslashes) in every place it can land."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from benchmarks.attacks.markdown import HOSTILE_TEXT, SAFE_HREFS, SCRIPT_HREFS, links, problems, renderer, visible

from bodyblocks.batch import BatchOptions, run_batch
from bodyblocks.page.markdown import front_matter, text_markdown, to_markdown
from bodyblocks.page.markdown_escape import destination, fence
from bodyblocks.page.segment import segment
from bodyblocks.types import Block

pytest.importorskip("markdown_it")
MD = renderer()


def flat(text: str) -> str:
    return " ".join(text.split())


def block(text: str, kind: str = "p", marks: tuple[tuple[str, str, str | None], ...] = ()) -> Block:
    tag, path, flags = {
        "p": ("p", "html/body/p", {}), "h": ("h2", "html/body/h2", {"heading_level": 2}),
        "li": ("li", "html/body/ul/li", {"is_list_item": True}),
        "ol": ("li", "html/body/ol/li", {"is_list_item": True}),
        "quote": ("p", "html/body/blockquote/p", {}), "code": ("pre", "html/body/pre", {}),
        "tr": ("tr", "html/body/table/tr", {"is_table_cell": True}),
    }[kind]
    return Block(index=0, text=text, tag=tag, tag_path=path, xpath="/html[1]/body[1]/table[1]/tr[1]", depth=2,
                 marks=marks, **flags)


def reads_as(md_text: str, want: str) -> None:
    assert problems(md_text, MD) == [], md_text
    assert visible(md_text, MD) == flat(want), md_text


def placements(frag: str) -> list[tuple[str, str]]:
    """(Markdown, the text a reader must see) for the fragment in each place page text can land."""
    prose = f"Prose {frag} prose"
    return [
        (to_markdown("", [block(frag)]), frag), (to_markdown("", [block(prose)]), prose),
        (to_markdown("", [block(frag, "h")]), frag), (to_markdown("", [block(frag, "li")]), frag),
        (to_markdown("", [block("3. " + frag, "ol")]), frag), (to_markdown("", [block(frag, "quote")]), frag),
        (to_markdown("", [block(frag, "code")]), frag), (to_markdown(frag, []), frag),
        (to_markdown("", [], standfirst=frag), frag), (text_markdown("Title", frag), "Title " + frag),
        (to_markdown("", [block(f"see {frag} end", marks=(("link", frag, "/x"),))]), f"see {frag} end"),
        (to_markdown("", [block(f"see {frag} end", marks=(("strong", frag, None),))]), f"see {frag} end"),
        (to_markdown("", [block(frag + "x", marks=(("em", frag, None),))]), frag + "x"),
        (to_markdown("", [block(f"{frag}\tb", "tr"), block(f"a|{frag}\tc", "tr")]), f"{frag} b a|{frag} c"),
    ]


@pytest.mark.parametrize("frag", HOSTILE_TEXT)
def test_hostile_text_reads_back_as_text_wherever_it_lands(frag: str) -> None:
    for md_text, want in placements(frag):
        reads_as(md_text, want)


@pytest.mark.parametrize("seed", range(6))
def test_random_mixes_of_hostile_text_with_marks_read_back_as_text(seed: int) -> None:
    """Property-style: fragments glued together (with nothing, a space or a line break between them), in each
    kind of block, with links and emphasis over random parts of them."""
    rng = random.Random(seed)
    atoms = [*HOSTILE_TEXT, "word", "a", "1", " ", "(", ")", ".", '"', "*", "_", "`", "<", "&", "\\", "[", "]", "!"]
    for _ in range(150):
        text = "".join(rng.choice(atoms) + rng.choice(["", "", " ", "\n"]) for _ in range(rng.randint(1, 5)))
        if not text.strip():
            continue
        kind = rng.choice(["p", "h", "li", "quote"])
        marks: list[tuple[str, str, str | None]] = []
        pos = 0
        while kind != "h" and pos < len(text) and rng.random() < 0.6:
            a = rng.randint(pos, len(text) - 1)
            b = rng.randint(a + 1, len(text))
            kind_of = "link" if rng.random() < 0.5 and not (marks and marks[-1][0] == "link") else "strong"
            marks.append((kind_of, text[a:b], "/u" if kind_of == "link" else None))
            pos = b + 1  # links never touch (two that do get a space between them)
        reads_as(to_markdown("", [block(text, kind, tuple(marks))]), text)


@pytest.mark.parametrize("href", SCRIPT_HREFS)
def test_script_addresses_never_become_links_however_hidden(href: str) -> None:
    assert destination(href, "https://a.example/page") is None
    md_text = to_markdown("", [block("see here now", marks=(("link", "here", href),))], "https://a.example/page")
    reads_as(md_text, "see here now")
    assert links(md_text, MD) == []


@pytest.mark.parametrize("href", SCRIPT_HREFS)
def test_script_addresses_in_a_page_never_become_links(href: str) -> None:
    attr = href.replace("&", "&amp;").replace('"', "&quot;")
    page = f'<html><body><p>Do not <a href="{attr}">click here</a> at all.</p></body></html>'
    md_text = to_markdown("", segment(page, marks=True).blocks, "https://a.example/page")
    reads_as(md_text, "Do not click here at all.")
    assert links(md_text, MD) == []


@pytest.mark.parametrize(("href", "want"), SAFE_HREFS)
def test_allowed_addresses_stay_links_written_safely(href: str, want: str) -> None:
    md_text = to_markdown("", [block("see here now", marks=(("link", "here", href),))])
    reads_as(md_text, "see here now")
    assert links(md_text, MD) == [want]


def test_a_script_page_url_resolves_no_link_into_a_script() -> None:
    md_text = to_markdown("", [block("see here now", marks=(("link", "here", "x"),))], "javascript:alert(1)//")
    assert problems(md_text, MD) == []


@pytest.mark.parametrize("frag", HOSTILE_TEXT)
def test_front_matter_is_yaml_that_no_renderer_reads_as_html(frag: str) -> None:
    fm = front_matter({"author": frag, "site_name": f"x {frag} y", "canonical_url": frag})
    assert yaml.safe_load(fm.split("---\n")[1]) == {"author": frag, "site_name": f"x {frag} y", "canonical_url": frag}
    assert problems(fm, MD) == []


def test_front_matter_holds_characters_yaml_may_not_hold_raw() -> None:
    value = "a\x7fb\x85c\u2028d\ufeffe\x00f\"g\\h\ti"
    assert yaml.safe_load(front_matter({"author": value}).split("---\n")[1]) == {"author": value}


def test_code_fences_are_longer_than_any_backtick_run() -> None:
    code = "x = '```'\n````\ny = 1"
    assert fence(code) == "`````" and fence("plain") == "```"
    md_text = to_markdown("", [block(code, "code")])
    assert md_text == f"`````\n{code}\n`````\n"
    assert [t.content for t in MD.parse(md_text) if t.type == "fence"] == [code + "\n"]


@pytest.mark.parametrize("text", [
    "It costs $5 (about 4 EUR) - a 50% cut; 3 * 4 = 12, e.g. snake_case & C# #1 [citation needed] a < b, x > y.",
    "Q&A: what's new in 2.0? Use the --fast flag, or see https://example.com/a_b_c (it's free!).",
    "Das Wasser kostet 3,50 € – laut § 24 Absatz 3 – und „das ist gut“.",
    "日本語の文章、句読点。", "5 - 3 = 2", "1.5 million", "#hashtag and @user", "a_b_c and x_y",
])
def test_ordinary_prose_gets_no_backslash(text: str) -> None:
    assert to_markdown("", [block(text)]) == text + "\n"


def test_markup_a_page_shows_as_text_is_escaped_where_markdown_would_read_it() -> None:
    md_text = to_markdown("", [block("a<b>c *not emphasis* `code` &amp; [x](y) 2*3\n1. not a list\n# not a heading")])
    assert md_text == ("a\\<b>c \\*not emphasis\\* \\`code\\` \\&amp; [x\\](y) 2\\*3  \n1\\. not a list  \n"
                       "\\# not a heading\n")


def test_an_emphasis_commonmark_would_not_read_stays_plain() -> None:
    marked = block("to personal banking. Done", marks=(("strong", ".", None),))
    assert to_markdown("", [marked]) == "to personal banking. Done\n"
    touching = block("abcd", marks=(("strong", "ab", None), ("strong", "cd", None)))
    reads_as(to_markdown("", [touching]), "abcd")


@pytest.mark.parametrize("extractor", ["heuristic", "ensemble"])
def test_a_hostile_page_through_the_md_writer_renders_no_html_and_no_script_link(
        tmp_path: Path, extractor: str) -> None:
    page = tmp_path / "in" / "page.html"
    page.parent.mkdir()
    page.write_text(
        "<html><head><title>Notes &lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;</title>"
        "<meta name='author' content='&lt;img src=x onerror=alert(1)&gt;'></head><body><article>"
        "<h1>Escaping notes for the tag parser</h1><p>The parser reads &lt;img src=x onerror=alert(2)&gt; and "
        "a&lt;b&gt;c as text, and <a href='&amp;#106;avascript:alert(3)'>this link</a> and "
        "<a href='javascript\\:alert(4)'>that one</a> go nowhere, the council said on Monday.</p>"
        "<p>1. not a list, *not emphasis*, [x](javascript:alert(5)) and `code` stay as written in the notes of "
        "the meeting, which ran for three hours.</p></article></body></html>", encoding="utf-8")
    run_batch([page.parent], tmp_path / "out", BatchOptions(extractor=extractor, fmt="md", progress=False))
    md_text = (tmp_path / "out" / "page.md").read_text(encoding="utf-8")
    assert problems(md_text, MD) == [] and links(md_text, MD) == []
    seen: Any = visible(md_text, MD)
    assert "reads <img src=x onerror=alert(2)> and a<b>c as text" in seen
    assert "1. not a list, *not emphasis*, [x](javascript:alert(5)) and `code` stay" in seen
