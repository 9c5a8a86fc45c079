"""The parser's work bounded before libxml2 runs: a start tag's attributes (page/bounds.py)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from bodyblocks.errors import TooLarge
from bodyblocks.page.bounds import MAX_ATTRIBUTES, MAX_ELEMENTS, bound_attributes, check_elements
from bodyblocks.page.segment import segment

SRC = str(Path(__file__).resolve().parents[1] / "src")


def names(n: int) -> list[str]:
    """n distinct short attribute names (base 36)."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = []
    for i in range(n):
        s = ""
        while True:
            i, r = divmod(i, 36)
            s = digits[r] + s
            if not i:
                break
        out.append("a" + s)
    return out


def bomb(n: int, joiner: str = " ", value: str = "") -> str:
    attrs = joiner.join(f"{name}{value}" for name in names(n))
    return f"<html><body><p>Before the bomb.</p><div {attrs}>Inside the div.</div><p>After the bomb.</p></body></html>"


def test_a_million_distinct_attribute_names_in_six_megabytes_segment_in_seconds() -> None:
    # libxml2 compares each attribute with the tag's earlier ones: 1,000,000 took about 20 minutes, 100,000 12 s
    code = (f"import sys, time; sys.path[:0] = [{SRC!r}, {str(Path(__file__).parent)!r}]\n"
            "from test_parse_bounds import bomb\nfrom bodyblocks.page.segment import segment\n"
            "html = bomb(1_000_000)\nassert 5_000_000 < len(html) < 6_000_000, len(html)\n"
            "t = time.time(); doc = segment(html)\n"
            "print(round(time.time() - t, 2), [b.text for b in doc.blocks])\n")
    started = time.time()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "'Before the bomb.', 'Inside the div.', 'After the bomb.'" in done.stdout
    assert time.time() - started < 60


def test_the_bound_is_linear_in_the_page() -> None:
    def seconds(page: str) -> float:  # this process's CPU time, the least of five runs: the machine is shared
        times = []
        for _ in range(5):
            t = time.process_time()
            bound_attributes(page)
            times.append(time.process_time() - t)
        return min(times)

    # 16x the attributes: about 16x the time when linear, 256x when quadratic; 64x lies far from both
    t_small, t_large = seconds(bomb(50_000)), seconds(bomb(800_000))
    assert t_large < 5.0 and t_large < 64 * max(t_small, 1e-3)


def test_a_cut_tag_keeps_its_first_attributes_its_text_and_what_follows() -> None:
    text, cut = bound_attributes(bomb(5000))
    assert cut == 1
    div = etree.fromstring(text, etree.HTMLParser()).find(".//div")
    assert len(div.attrib) == MAX_ATTRIBUTES and div.text == "Inside the div."
    assert list(div.attrib)[:3] == ["a0", "a1", "a2"]
    assert [b.text for b in segment(bomb(5000)).blocks] == ["Before the bomb.", "Inside the div.", "After the bomb."]


def test_quotes_and_angle_brackets_inside_the_tag_do_not_hide_its_attributes() -> None:
    for page in (bomb(20_000, value='=">"'), bomb(20_000, value="='<b x=1>'"), bomb(20_000, joiner='=""'),
                 bomb(20_000).replace(" a", " a<b", 10_000), bomb(20_000).replace("<div ", "<script ")):
        text, cut = bound_attributes(page)
        assert cut == 1, page[:80]
        t = time.perf_counter()
        etree.fromstring(text, etree.HTMLParser())
        assert time.perf_counter() - t < 2.0


def test_ordinary_pages_are_left_as_they_are() -> None:
    rng = np.random.default_rng(0)
    data_uri = "data:image/png;base64," + "".join(rng.choice(list("ABCDEFabcdef0123456789+/"), 200_000))
    words = " ".join(f"w{i}" for i in range(5000))
    page = ("<html><head><title>A title with many words " + words + "</title>"
            "<script>for (var i = 0; i<n; i++) { x = \"" + words + "\"; if (a<b && c>d) { y = 1 } }</script>"
            "<style>a<b { color: red } " + words + "</style></head><body>"
            f"<!-- <div {words}> -->"
            f'<img src="{data_uri}" alt="an image" class="wide" data-a="1" data-b="2">'
            f"<textarea><div {words}></textarea>"
            f'<p title="{words}" class="c" id="p1">A paragraph of {words}.</p>'
            + "".join(f'<a href="/x/{i}" class="l" data-i="{i}">Link {i}</a>' for i in range(2000))
            + "</body></html>")
    assert bound_attributes(page) == (page, 0)


def test_a_page_of_more_elements_than_the_bound_is_refused_before_parsing() -> None:
    nested = "<html><body>" + "<i>x" * (MAX_ELEMENTS + 1000) + "</body></html>"  # past libxml2's depth: slow
    t = time.perf_counter()
    with pytest.raises(TooLarge, match="start tags"):
        segment(nested)
    assert time.perf_counter() - t < 2.0
    check_elements("<p>" + "a < b, " * (MAX_ELEMENTS + 10) + "</p>")  # "<" that opens no tag is not counted


def test_a_script_templates_markup_is_bounded_too_and_its_end_tag_kept() -> None:
    attrs = " ".join(names(20_000))
    article = "<p>" + "A long paragraph of the article that only the template holds. " * 20 + "</p>"
    page = (f'<html><body><p>Short.</p><script type="text/template"><div {attrs}>{article}</div></script>'
            "<p>After the template.</p></body></html>")
    text, cut = bound_attributes(page)
    assert cut == 1 and text.count("</script>") == 1 and "<p>After the template.</p>" in text
    t = time.perf_counter()
    blocks = [b.text for b in segment(page).blocks]  # hidden.py parses the template's markup on its own
    assert time.perf_counter() - t < 2.0
    assert blocks[-1] == "After the template."
    js = f"<html><body><script>var s = '<b {attrs}>';</script></body></html>"  # JavaScript is left alone
    assert bound_attributes(js) == (js, 0)
