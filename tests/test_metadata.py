"""A page's metadata (metadata.py): fields of the Extraction, read from the tree the segmenter parsed."""

from __future__ import annotations

import json

from bodyblocks.page.metadata import FIELDS, METADATA, Metadata, page_metadata
from bodyblocks.page.segment import parse, segment_tree
from bodyblocks.types import Extraction

BODY = "".join(f"<p>The harbour works began on Monday, paragraph {i}, and the council said the quay would reopen "
               "in spring after the old pilings are replaced.</p>" for i in range(6))
ARTICLE = f"""<!doctype html><html lang="en-GB"><head><title>Harbour works | Example News</title>
<meta name="author" content="  Ada   Lovelace ">
<meta property="og:site_name" content="Example News">
<meta property="article:published_time" content="2024-05-17T08:30:00+01:00">
<link rel="alternate" href="/feed.xml"><link rel="Canonical" href="https://example.com/news/harbour-works">
</head><body><nav><a href="/">Home</a></nav><article><h1>Harbour works begin</h1>{BODY}</article></body></html>"""
JSONLD = """<html><head><meta property="og:locale" content="de_DE"><meta property="og:url" content="/a/b">
<script type="application/ld+json">{"@context": "https://schema.org", "@graph": [
  {"@type": "WebSite", "name": "ignored"},
  {"@type": "NewsArticle", "author": [{"@type": "Person", "name": "Ann Smith"}, {"name": "Bo Li"}],
   "publisher": {"@type": "Organization", "name": "Die Zeitung"}, "datePublished": "2021-03-04"}]}</script>
<script type="application/ld+json">{ not json</script></head><body><p>Text</p></body></html>"""


def _meta(html: str, url: str | None = None) -> Metadata:
    return page_metadata(parse(html, "lxml"), url)


def test_meta_tags_give_every_field() -> None:
    m = _meta(ARTICLE)
    assert m == Metadata(author="Ada Lovelace", date="2024-05-17", site_name="Example News", language="en",
                         canonical_url="https://example.com/news/harbour-works")


def test_json_ld_gives_author_publisher_and_date_and_og_gives_locale_and_url() -> None:
    m = _meta(JSONLD, url="https://zeitung.example/x/y")
    assert m.author == "Ann Smith; Bo Li"  # the article's, not the website's, and both people
    assert m.site_name == "Die Zeitung"
    assert m.date == "2021-03-04"
    assert m.language == "de"
    assert m.canonical_url == "https://zeitung.example/a/b"  # og:url made absolute against the page's URL


def test_a_page_that_states_nothing_has_no_metadata_and_nothing_is_guessed_from_its_text() -> None:
    m = _meta("<html><body><p>By John Doe, 3 March 2020, in English.</p></body></html>")
    assert m == Metadata()
    assert _meta("<html><body><p>x</p></body></html>", url="https://example.com/2019/07/01/story").date == \
        "2019-07-01"  # the URL's own date (htmldate)


def test_bad_values_are_dropped_not_raised() -> None:
    m = _meta('<html lang="x-klingon-long"><head><meta name="author" content="https://example.com/me">'
              '<meta property="article:published_time" content="2024-13-45"></head><body><p>x</p></body></html>')
    assert m.author is None and m.date is None and m.language is None


def test_the_segmenter_keeps_the_metadata_and_extractors_copy_it_to_the_result() -> None:
    doc, _ = segment_tree(ARTICLE)
    assert doc.extra[METADATA].author == "Ada Lovelace"
    import bodyblocks

    ex = bodyblocks.get_extractor("gbt").extract(ARTICLE)
    assert (ex.author, ex.date, ex.site_name, ex.language, ex.canonical_url) == (
        "Ada Lovelace", "2024-05-17", "Example News", "en", "https://example.com/news/harbour-works")
    assert all(hasattr(Extraction(""), f) for f in FIELDS)


def test_json_and_markdown_outputs_and_columnar_rows_carry_the_metadata() -> None:
    import bodyblocks
    from bodyblocks.batch.columnar import COLUMNS
    from bodyblocks.batch.inputs import Job
    from bodyblocks.batch.outputs import page_row, render

    ex = bodyblocks.get_extractor("gbt").extract(ARTICLE)
    rec = json.loads(render(ex, "json", "a"))
    assert rec["author"] == "Ada Lovelace" and rec["date"] == "2024-05-17" and rec["language"] == "en"
    md = render(ex, "md", "a")
    front, rest = md.split("---\n", 2)[1:]
    assert md.startswith("---\n") and 'author: "Ada Lovelace"' in front and "date: 2024-05-17" in front
    assert 'site_name: "Example News"' in front and "canonical_url:" in front
    assert "harbour works began" in rest
    row = page_row(Job(key="a", source="a", position=0), ex, None)
    assert {f for f in FIELDS} <= set(COLUMNS) and row["author"] == "Ada Lovelace" and row["site_name"]


def test_markdown_of_a_page_without_metadata_has_only_its_kind_in_front_matter() -> None:
    import bodyblocks
    from bodyblocks.batch.outputs import render

    page = f"<html><body><article>{BODY}</article></body></html>"
    ex = bodyblocks.get_extractor("gbt", page_kind=True).extract(page)
    assert ex.page_kind and render(ex, "md", "a").startswith(f'---\npage_kind: "{ex.page_kind}"\n---\n\n')
    ex = bodyblocks.get_extractor("gbt").extract(page)  # no kind asked: no front matter at all
    assert ex.page_kind is None and not render(ex, "md", "a").startswith("---")


def test_a_relative_canonical_url_is_made_absolute_against_the_page_url(tmp_path) -> None:  # noqa: ANN001
    import bodyblocks

    html = ("<html><head><title>Quay</title><link rel='canonical' href='/news/quay'></head><body><article>"
            "<h1>Quay works begin</h1><p>The council published the figures for the quay works on Monday, and the "
            "first piles go in next week, officials said.</p><p>Residents asked for the works after the storm "
            "damaged the old wall in the spring.</p></article></body></html>")
    assert bodyblocks.load().extract(html).canonical_url == "/news/quay"  # no URL given: as the page says
    got = bodyblocks.load().extract(html, "https://port.example/2026/story?id=3")
    assert got.canonical_url == "https://port.example/news/quay"


def test_a_date_with_a_time_zone_dateutil_does_not_know_is_read_without_a_warning() -> None:
    import warnings

    page = ARTICLE.replace('<meta property="article:published_time" content="2024-05-17T08:30:00+01:00">',
                           '<meta name="publish-date" content="2024-05-17 05:00:00 EST">')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = _meta(page)
    assert m.date == "2024-05-17"
    assert [str(w.message) for w in caught] == []  # nothing printed to a user's console


def test_json_ld_nested_two_thousand_deep_is_skipped_and_the_page_still_comes_out() -> None:
    deep = '{"@type": "NewsArticle", "author": {"name": "Deep"}, "x": ' + "[" * 2000 + "1" + "]" * 2000 + "}"
    fine = '{"@type": "NewsArticle", "author": {"name": "Ann Smith"}}'
    page = (f"<html><head><title>Deep</title><script type='application/ld+json'>{deep}</script>"
            f"<script type='application/ld+json'>{fine}</script></head><body><article><h1>Deep</h1>{BODY}"
            "</article></body></html>")
    assert _meta(page).author == "Ann Smith"  # the deep one left out, the next one read
    doc, _ = segment_tree(page)
    assert doc.extra[METADATA].author == "Ann Smith" and doc.blocks
    objects = '{"@graph": [' + '{"a": ' * 1500 + "1" + "}" * 1500 + "]}"  # deep objects, valid JSON
    assert _meta(page.replace(fine, objects)).author is None


def test_an_authors_label_and_a_trailing_separator_are_left_out_and_names_stay_whole() -> None:
    def author(value: str) -> str | None:
        return _meta(f"<html><head><meta name='author' content='{value}'></head><body><p>x</p></body></html>").author

    assert author("By Jamelle Bouie") == "Jamelle Bouie"
    assert author("BY JOHN DOE |") == "JOHN DOE"
    assert author("by Ann Smith and Bo Li") == "Ann Smith and Bo Li"
    assert author("Von Max Muster") == "Max Muster" and author("Par Jean Dupont") == "Jean Dupont"
    assert author("作者：张三") == "张三" and author("Autor: Jan Kowalski") == "Jan Kowalski"
    assert author("Byron Smith") == "Byron Smith" and author("Von Miller") == "Von Miller"  # names, not labels
    ld = ('<html><head><script type="application/ld+json">{"@type": "NewsArticle", "author": [{"name": "By Ann '
          'Smith"}, {"name": "Bo Li |"}]}</script></head><body><p>x</p></body></html>')
    assert _meta(ld).author == "Ann Smith; Bo Li"


def test_the_date_is_left_out_where_the_output_does_not_show_it(tmp_path) -> None:  # noqa: ANN001
    import subprocess
    import sys

    from bodyblocks.batch import BatchOptions

    assert page_metadata(parse(ARTICLE, "lxml"), date=False) == Metadata(
        author="Ada Lovelace", date=None, site_name="Example News", language="en",
        canonical_url="https://example.com/news/harbour-works")
    plans = {fmt: BatchOptions(fmt=fmt).plan for fmt in ("txt", "json", "md", "jsonl")}
    assert [fmt for fmt, plan in plans.items() if not plan.options.dates] == ["txt"]
    txt, json_ = plans["txt"].build(), plans["json"].build()
    assert txt.page_segmenter(ARTICLE).extra[METADATA].date is None
    assert json_.page_segmenter(ARTICLE).extra[METADATA].date == "2024-05-17"
    page = tmp_path / "a.html"
    page.write_text(ARTICLE, encoding="utf-8")
    code = ("import sys; from bodyblocks.cli import main; code = main(['extract', sys.argv[1]]); "
            "print('htmldate' in sys.modules, file=sys.stderr); sys.exit(code)")
    one = subprocess.run([sys.executable, "-c", code, str(page)], capture_output=True, text=True, timeout=120)
    assert one.returncode == 0 and "harbour works began on Monday" in one.stdout
    assert one.stderr.strip().splitlines()[-1] == "False"  # one page as text: htmldate is not even imported
