"""Decoding: BOM, strict declared charsets, lying declarations, GBK without declaration, bad bytes."""

from __future__ import annotations

import gzip
import os

import pytest

from bodyblocks.errors import BinaryInput, CorruptCompression, EmptyInput, InputError, TooLarge
from bodyblocks.page.decode import decode_bytes, maybe_gunzip, read_bytes
from bodyblocks.page.segment import segment

ZH = "<p>国务院办公厅关于印发处理流程的通知。各省、自治区、直辖市人民政府：现将方案印发给你们，请认真贯彻执行。</p>"


def page(body: str, head: str = "") -> str:
    return f"<html><head>{head}</head><body>{body}</body></html>"


def test_gbk_with_declaration() -> None:
    d = decode_bytes(page(ZH, '<meta http-equiv="Content-Type" content="text/html; charset=gbk">').encode("gbk"))
    assert d.encoding == "gb18030" and "处理流程" in d.text and not d.replaced
    assert d.declared == ["gbk"]


def test_gbk_without_declaration() -> None:
    d = decode_bytes(page(ZH).encode("gbk"))
    assert d.encoding == "gb18030" and "直辖市人民政府" in d.text and "\ufffd" not in d.text


def test_utf8_with_lying_gb2312_declaration() -> None:
    d = decode_bytes(page(ZH, '<meta charset="gb2312">').encode("utf-8"))
    assert d.encoding == "utf-8" and "国务院办公厅" in d.text


def test_utf8_bom() -> None:
    d = decode_bytes(b"\xef\xbb\xbf" + page(ZH, '<meta charset="gbk">').encode("utf-8"))
    assert d.bom and d.encoding == "utf-8" and d.text.startswith("<html>")


def test_utf16_bom() -> None:
    d = decode_bytes(page(ZH).encode("utf-16"))
    assert d.bom and "处理流程" in d.text


def test_cp1252_without_declaration_is_not_read_as_gbk() -> None:
    d = decode_bytes(page("<p>Café résumé — naïve “quotes” déjà vu.</p>").encode("cp1252"))
    assert d.encoding == "cp1252" and "Café résumé — naïve “quotes”" in d.text


def test_declared_latin1_read_as_cp1252() -> None:
    d = decode_bytes(page("<p>Smart “quotes” cost 5€</p>", '<meta charset="iso-8859-1">').encode("cp1252"))
    assert d.encoding == "cp1252" and "“quotes” cost 5€" in d.text


def test_declared_charset_that_fails_strictly_is_skipped() -> None:
    data = page(ZH, '<meta charset="shift_jis">').encode("gbk")
    d = decode_bytes(data)
    assert d.encoding == "gb18030" and "处理流程" in d.text


def test_truncated_multibyte_tail_is_tolerated() -> None:
    data = page(ZH).encode("utf-8")[:-16] + "处".encode()[:2]
    d = decode_bytes(data)
    assert d.encoding == "utf-8" and not d.replaced


@pytest.mark.parametrize("data", [b"", b"   \n\t  "])
def test_empty_input(data: bytes) -> None:
    with pytest.raises(EmptyInput):
        decode_bytes(data)


@pytest.mark.parametrize("data", [b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"])
def test_pdf_and_image_rejected(data: bytes) -> None:
    with pytest.raises(BinaryInput):
        decode_bytes(data)


def test_binary_garbage_rejected() -> None:
    with pytest.raises(InputError):
        decode_bytes(os.urandom(4096))


def test_gzip_transparent_and_truncated(tmp_path) -> None:  # noqa: ANN001
    raw = page(ZH).encode("utf-8")
    gz = gzip.compress(raw)
    assert maybe_gunzip(gz) == raw
    f = tmp_path / "p.html.gz"
    f.write_bytes(gz)
    assert read_bytes(f) == raw
    f.write_bytes(gz[: len(gz) // 2])
    with pytest.raises(CorruptCompression):
        read_bytes(f)


def test_gzip_with_bytes_after_its_stream_reads_as_gzip_d_does(tmp_path) -> None:  # noqa: ANN001
    raw = page(ZH).encode("utf-8")
    gz = gzip.compress(raw)
    f = tmp_path / "p.html.gz"
    for tail in (b"\0" * 4096, b"<!-- log noise -->\n", b"\x1f\x8b\x08 cut short", gz[:20]):
        f.write_bytes(gz + tail)  # padding, garbage, a broken or cut second member: the page is the first's
        assert read_bytes(f) == raw and maybe_gunzip(gz + tail) == raw
    f.write_bytes(gz + gzip.compress(b"<p>more</p>"))  # two whole members: both, as gzip -d gives them
    assert read_bytes(f) == raw + b"<p>more</p>"
    f.write_bytes(gz[:-4] + b"\0" * 64)  # its own stream cut: still corrupt
    with pytest.raises(CorruptCompression):
        read_bytes(f)
    with pytest.raises(TooLarge):  # the bound counts every member
        maybe_gunzip(gz + gz, max_bytes=len(raw) + 10)


def test_gzip_bomb_is_bounded(tmp_path) -> None:  # noqa: ANN001
    f = tmp_path / "bomb.html.gz"
    f.write_bytes(gzip.compress(b"<p>" + b"a" * 5_000_000))
    with pytest.raises(TooLarge):
        read_bytes(f, max_bytes=1_000_000)


def test_utf8_mojibake_of_gbk_is_undone() -> None:
    gbk = page(ZH, '<meta charset="gb2312">').encode("gbk")
    misread = "".join(bytes([b]).decode("cp1252", errors="strict") if b not in (0x81, 0x8D, 0x8F, 0x90, 0x9D)
                      else chr(b) for b in gbk)
    d = decode_bytes(misread.encode("utf-8"))
    assert d.encoding.endswith("gb18030") and "国务院办公厅" in d.text


def test_latin_utf8_page_declaring_gbk_is_left_alone() -> None:
    d = decode_bytes(page("<p>Café résumé naïve</p>", '<meta charset="gbk">').encode("utf-8"))
    assert d.encoding == "utf-8" and "Café résumé" in d.text


def test_a_utf8_page_with_a_few_bad_bytes_stays_utf8() -> None:
    page = ("<html><body><p>洪水救援：车队在三天的降雨之后抵达山谷，道路重新开放。"
            "居民们在山脊上等待物资。</p></body></html>")
    data = page.encode("utf-8")
    at = data.index("车队".encode())
    broken = data[:at] + b"\xff" + data[at:]  # one stray byte, as a truncated upload or a pasted Latin-1 character
    d = decode_bytes(broken)
    assert d.encoding == "utf-8" and d.replaced and d.text.count("\ufffd") == 1
    assert d.text.replace("\ufffd", "") == page  # not cp1252 mojibake of the whole page
    latin = "<p>Café, naïve, déjà vu: a page in Latin-1 with its accents.</p>".encode("latin-1")
    assert decode_bytes(latin).encoding == "cp1252"  # a single-byte page is not taken for broken UTF-8


@pytest.mark.parametrize("label", ["punycode", "undefined", "utf-7", "base64", "zlib", "rot13", "idna"])
def test_a_declared_codec_no_page_is_written_in_is_ignored(label: str) -> None:
    data = f'<html><head><meta charset="{label}"></head><body><p>Café au lait, déjà vu.</p></body></html>'
    d = decode_bytes(data.encode("latin-1"))
    assert d.encoding == "cp1252" and "Café au lait, déjà vu." in d.text and d.declared == [label]


def test_a_short_utf8_page_with_one_bad_byte_is_not_taken_for_another_codec() -> None:
    page = '<html><head><meta charset="utf-8"></head><body><p>Zürich, Köln, São Paulo, Málaga, Ærø.</p></body></html>'
    data = page.encode("utf-8").replace(b"Paulo", b"Paulo\xff")
    d = decode_bytes(data)
    assert d.encoding == "utf-8" and d.replaced and "Zürich, Köln, São Paulo\ufffd, Málaga" in d.text


# Chinese news text written for these tests: dialogue (quotes, dashes, ellipses) and Traditional script
ZH_DIALOGUE = ("<p>“我们一定要把这件事做好。”他说——这是第一步。</p><p>“明天还来吗？”“来！”……</p>"
               "<p>“谢谢大家。”她笑着说。</p>")
ZH_HANT = ("<p>臺灣經濟部週三公佈統計數據顯示，上個月出口訂單較去年同期增長百分之十二，優於市場預期。</p>"
           "<p>經濟學家認為，電子產品需求回溫是主要原因。</p>")


def test_gbk_without_declaration_reads_as_chinese_with_its_quotes_and_dashes() -> None:
    d = decode_bytes(page(ZH_DIALOGUE).encode("gbk"))  # was cp1252 mojibake: the quotes were not "Chinese"
    assert d.encoding == "gb18030" and "“明天还来吗？”" in d.text and d.guessed  # no declaration: a guess


def test_traditional_chinese_in_gbk_without_declaration_reads_as_gbk() -> None:
    data = page(ZH_HANT, "<title>新聞</title>").encode("gbk")
    d = decode_bytes(data)  # was cp1252 mojibake: fewer of GB2312's characters than Simplified text
    assert d.encoding == "gb18030" and "電子產品需求回溫" in d.text and d.guessed
    more = data.replace("上個月".encode("gbk"), "颱風過境後上個月".encode("gbk"))  # a byte cp1252 lacks: the detector
    assert b"\x81" in more or b"\x8d" in more or b"\x8f" in more or b"\x90" in more or b"\x9d" in more
    assert decode_bytes(more).encoding == "gb18030"


def test_latin_pages_without_declaration_stay_cp1252() -> None:
    text = "<p>Über die Brücke gingen wir, während es regnete. Déjà vu: Ærø, Øresund, Šibenik, façade.</p>" * 3
    assert decode_bytes(page(text).encode("cp1252")).encoding == "cp1252"


def test_a_detectors_guess_of_a_single_byte_charset_is_flagged() -> None:
    serbian = ("<h1>Вести из Београда</h1><p>Ђорђе Ђурђевић је рекао да ће се састанак одржати у понедељак. "
               "Према његовим речима, влада ће размотрити предлог закона о буџету.</p>")
    d = decode_bytes(page(serbian).encode("cp1251"))  # "ђ" is a byte cp1252 lacks: no codec fits strictly
    assert d.guessed and d.encoding not in ("utf-8", "gb18030")
    assert segment(page(serbian).encode("cp1251")).guessed  # the segmented page carries it to the Extraction
    assert not decode_bytes(page(ZH, '<meta charset="gbk">').encode("gbk")).guessed  # a declaration that held
    assert not decode_bytes(page(ZH).encode("utf-8")).guessed and not decode_bytes(b"<p>plain ASCII</p>").guessed


@pytest.mark.parametrize("parser", ["lxml", "bs4"])
def test_a_str_page_with_a_lone_surrogate_keeps_all_its_text(parser: str) -> None:
    # bytes decoded with "surrogateescape" leave \udcff for a byte no UTF-8 reads; libxml2 stopped at it (lxml: the
    # text after it lost, bs4: an exception)
    paras = "".join(f"<p>Paragraph {i}: the council opened a tool library in the old post office on Friday.</p>"
                    for i in range(30))
    raw = page(f"<p>Caf\xe9 \xff menu</p>{paras}", "<title>Tools</title>").encode("latin-1")
    html = raw.decode("utf-8", "surrogateescape")
    doc = segment(html, parser=parser)
    texts = [b.text for b in doc.blocks]
    assert texts[0] == "Caf\ufffd \ufffd menu" and len(texts) == 31 and texts[-1].startswith("Paragraph 29")
    assert doc.replaced
    pair = segment(page("<p>Smile \ud83d\ude00 please</p>"), parser=parser)  # a surrogate pair is its character
    assert [b.text for b in pair.blocks] == ["Smile \U0001f600 please"] and not pair.replaced


def test_the_api_keeps_the_text_after_a_lone_surrogate() -> None:
    import bodyblocks

    paras = "".join(f"<p>Paragraph {i}: the council opened a tool library in the old post office on Friday, and "
                    "residents can now borrow drills, ladders and sewing machines for a week at a time.</p>"
                    for i in range(20))
    html = page(f"<h1>Tool library opens</h1><p>A note \udcff on prices.</p><article>{paras}</article>",
                "<title>Tool library opens</title>")
    ex = bodyblocks.get_extractor("gbt").extract(html)
    assert "Paragraph 19" in ex.text and not ex.no_body and ex.replaced
