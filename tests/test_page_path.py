"""One page's path: read once, decoded once, segmented and annotated in one order (extraction/segmenting.py),
the same steps whoever extracts it."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

import bodyblocks
from bodyblocks.baselines.heuristic import heuristic_text
from bodyblocks.extraction import extractor, segmenting
from bodyblocks.extraction.vote import VOTE, add_vote, heuristic_vote
from bodyblocks.page import decode
from bodyblocks.page.segment import segment_parsed, segment_tree

ARTICLE = ("<html><head><title>Harbour works</title><meta name='description' content='The quay reopens in spring, "
           "the council says.'></head><body><nav><a href='/'>Home</a></nav><article><h1>Harbour works</h1>"
           + "".join(f"<p>The harbour works began on Monday, paragraph {i}, and the council said the quay would "
                     "reopen in spring after the old pilings are replaced.</p>" for i in range(5))
           + "</article><footer>Copyright 2026</footer></body></html>")
# nested past libxml2's limit: BeautifulSoup parses it, so the vote has no tree to prune
DEEP = ("<html><body>" + "<div>" * 3000 + "<p>Deep paragraph of body text, long enough.</p>" + "</div>" * 3000
        + "</body></html>")
# a control character in text the heuristic moves: lxml will not prune the segmenter's tree
CONTROL = ("<html><body><div><nav>Home</nav>\x0b Body text of the article, long enough to keep.<p>More body "
           "text in a paragraph of its own here.</p></div></body></html>")


def _count_decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = decode.decode_bytes
    monkeypatch.setattr(decode, "decode_bytes", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


@pytest.mark.parametrize("page", [ARTICLE, DEEP, CONTROL])
def test_a_page_is_decoded_once_on_its_path_the_votes_reparse_included(page: str, monkeypatch: pytest.MonkeyPatch
                                                                       ) -> None:
    """The vote's heuristic parses the decoded text again where it cannot prune the segmenter's tree, and gives
    the answer of the heuristic on the page as given; the bytes are decoded once."""
    data = gzip.compress(page.encode("utf-8"))
    calls = _count_decodes(monkeypatch)
    doc = segmenting.segment_page(data, voting=True)
    assert len(calls) == 1
    assert doc.extra[VOTE].tolist() == heuristic_vote(doc.blocks, heuristic_text(page)).tolist()
    assert doc.extra[VOTE].any()


def test_the_path_keeps_the_decoded_text_and_the_tree() -> None:
    doc, tree, text = segment_parsed(ARTICLE.encode("utf-8"))
    assert text == ARTICLE and tree is not None and [b.text for b in doc.blocks] == [
        b.text for b in segment_tree(ARTICLE)[0].blocks]
    assert segment_parsed(DEEP)[1] is None


def test_the_steps_apart_give_the_page_path_s_document() -> None:
    """BlockExtractor.extract's overlap runs the path's parts (segment_annotated, then the vote): the same page."""
    whole = segmenting.segment_page(ARTICLE, voting=True)
    page = segmenting.segment_annotated(ARTICLE)
    assert VOTE not in page.doc.extra
    apart = extractor.vote_on_tree(page.doc, page.tree, page.text)
    assert set(whole.extra) == set(apart.extra) and "descriptions" in whole.extra
    assert np.array_equal(whole.extra[VOTE], apart.extra[VOTE])
    assert [b.text for b in whole.blocks] == [b.text for b in apart.blocks]
    again = add_vote(segmenting.segment_annotated(ARTICLE).doc, ARTICLE.encode("utf-8"))  # from the HTML as given
    assert np.array_equal(again.extra[VOTE], whole.extra[VOTE])


def test_vote_on_blocks_is_the_page_path_s_vote() -> None:
    doc = segmenting.segment_page(ARTICLE, voting=True)
    vote = segmenting.vote_on_blocks("x/1", [b.text for b in doc.blocks], ARTICLE)
    assert np.array_equal(vote, doc.extra[VOTE])
    with pytest.raises(ValueError, match="x/1: the cache's blocks are not the segmenter's"):
        segmenting.vote_on_blocks("x/1", ["another block"], ARTICLE)


def test_the_api_reads_a_page_once(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # noqa: ANN001
    """bodyblocks.extract reads its page (page_source) before it builds the default extractor, and the extractor
    does not read it again."""
    calls: list[object] = []
    real = decode.page_source

    def page_source(page: object) -> object:
        calls.append(page)
        return real(page)  # type: ignore[arg-type]

    monkeypatch.setattr(decode, "page_source", page_source)
    monkeypatch.setattr(extractor, "page_source", page_source)
    monkeypatch.setattr(bodyblocks, "_DEFAULT", bodyblocks.get_extractor("gbt"))
    path = tmp_path / "page.html"
    path.write_text(ARTICLE)
    got = bodyblocks.extract(path)
    assert len(calls) == 1 and "harbour works began" in got.text
    calls.clear()
    assert bodyblocks.get_extractor("gbt").extract(path).text == got.text and len(calls) == 1
