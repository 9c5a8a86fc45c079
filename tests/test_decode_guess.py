"""Charsets no declaration settles: the detector behind the strict attempts, declarations proved wrong, UTF-16
without a byte-order mark, and the `guessed` flag on every guess."""

from __future__ import annotations

import re

import pytest

from bodyblocks.page.decode import decode_bytes
from bodyblocks.page.detect import Guess, _guess, script_of
from bodyblocks.page.sniff import sniff_utf16

# news-style sentences written for these tests, each well over 300 characters in all
RU = ("Вчера вечером в центре города прошёл большой концерт, на который пришли тысячи жителей. "
      "Организаторы рассказали, что подготовка заняла почти полгода и потребовала участия многих волонтёров. "
      "По словам мэра, такие события помогают людям лучше узнать друг друга. "
      "В следующем году фестиваль планируют провести снова, но уже на новой площадке у реки. "
      "Билеты будут продаваться заранее, а часть денег пойдёт на ремонт городской библиотеки.")
EL = ("Η κυβέρνηση ανακοίνωσε χθες νέα μέτρα για τη στήριξη των μικρών επιχειρήσεων στην περιφέρεια. "
      "Σύμφωνα με τον υπουργό, τα χρήματα θα διατεθούν μέσα στους επόμενους τρεις μήνες. "
      "Οι επαγγελματίες της πόλης δήλωσαν ικανοποιημένοι, αλλά ζήτησαν λιγότερη γραφειοκρατία. "
      "Η αγορά περιμένει ακόμη τις λεπτομέρειες του προγράμματος και τις προθεσμίες των αιτήσεων. "
      "Οι δήμαρχοι της περιοχής θα συναντηθούν την Παρασκευή για να συζητήσουν το σχέδιο.")
JA = ("昨日の午後、東京都内で大規模な展示会が開かれ、多くの人が訪れました。"
      "主催者によると、今年は昨年よりも出展する企業の数が増え、新しい技術の紹介が目立ったということです。"
      "会場では、子どもたちがロボットを操作する体験コーナーが人気を集めていました。"
      "来年は大阪でも同じような催しを開く予定で、準備がすでに始まっています。"
      "担当者は、より多くの人に科学の楽しさを知ってもらいたいと話していました。")
KO = ("어제 오후 서울 시내에서 대규모 전시회가 열려 많은 사람들이 찾아왔습니다. "
      "주최 측에 따르면 올해는 작년보다 참가 기업의 수가 늘었고 새로운 기술의 소개가 눈에 띄었다고 합니다. "
      "행사장에서는 아이들이 로봇을 직접 조작해 보는 체험 공간이 큰 인기를 끌었습니다. "
      "내년에는 부산에서도 비슷한 행사를 열 계획이며 준비가 이미 시작되었습니다. "
      "담당자는 더 많은 사람들이 과학의 즐거움을 알게 되기를 바란다고 말했습니다.")
ZH = ("昨天下午，北京市内举办了一场大型展览会，吸引了许多市民前来参观。"
      "据主办方介绍，今年参展的企业数量比去年有所增加，新技术的展示尤其引人注目。"
      "在会场里，孩子们亲手操作机器人的体验区受到了热烈欢迎。"
      "明年还计划在上海举办类似的活动，相关准备工作已经开始。"
      "负责人表示，希望让更多的人感受到科学的乐趣。"
      "不少家长说，这样的活动让孩子们对科学产生了浓厚的兴趣。")


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.。])\s*", text) if s.strip()]


def page(text: str, head: str = "") -> str:
    body = "".join(f"<p>{s}</p>" for s in sentences(text))
    return f"<html><head>{head}<title>News</title></head><body>{body}</body></html>"


def right(decoded_text: str, text: str) -> float:
    """The share of the text's sentences found intact in the decoded page."""
    found = sentences(text)
    return sum(s in decoded_text for s in found) / len(found)


UNDECLARED = [(RU, "cp1251"), (RU, "koi8-r"), (RU, "iso8859-5"), (EL, "cp1253"), (EL, "iso8859-7"),
              (JA, "euc-jp"), (JA, "shift_jis"), (KO, "euc-kr"), (ZH, "gbk")]


@pytest.mark.parametrize(("text", "charset"), UNDECLARED)
def test_a_page_without_a_declaration_reads_right_and_is_flagged_a_guess(text: str, charset: str) -> None:
    data = page(text).encode(charset)
    assert len(text.encode(charset)) >= 300
    d = decode_bytes(data)
    assert right(d.text, text) >= 0.9, (charset, d.encoding, d.text[:120])
    assert d.guessed and not d.replaced


@pytest.mark.parametrize(("text", "charset", "label"), [
    (RU, "cp1251", "windows-1252"), (RU, "koi8-r", "windows-1251"), (EL, "cp1253", "iso-8859-1"),
    (KO, "euc-kr", "gb2312"), (JA, "euc-jp", "windows-1252"), (ZH, "gbk", "iso-8859-1"),
])
def test_a_declaration_that_decodes_but_is_wrong_is_overruled_and_flagged(text: str, charset: str,
                                                                          label: str) -> None:
    d = decode_bytes(page(text, f'<meta charset="{label}">').encode(charset))
    assert right(d.text, text) >= 0.9, (charset, label, d.encoding, d.text[:120])
    assert d.guessed and d.declared == [label]


@pytest.mark.parametrize(("text", "charset", "label"), [
    (RU, "cp1251", "windows-1251"), (RU, "koi8-r", "koi8-r"), (EL, "iso8859-7", "iso-8859-7"),
    (KO, "euc-kr", "euc-kr"), (ZH, "gbk", "gbk"),
])
def test_a_declaration_that_holds_is_no_guess(text: str, charset: str, label: str) -> None:
    d = decode_bytes(page(text, f'<meta charset="{label}">').encode(charset))
    assert right(d.text, text) == 1.0 and not d.guessed


def test_utf8_bytes_under_another_declaration_read_as_utf8_and_are_flagged() -> None:
    d = decode_bytes(page(RU, '<meta charset="windows-1251">').encode("utf-8"))
    assert d.encoding == "utf-8" and right(d.text, RU) == 1.0 and d.guessed
    both = decode_bytes(page(RU, '<meta charset="windows-1251">').encode("utf-8"), ["utf-8"])
    assert not both.guessed  # one of its declarations held


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
@pytest.mark.parametrize("text", [RU, ZH, "Plain English news about the council's budget vote. " * 8])
def test_utf16_without_a_bom_decodes(codec: str, text: str) -> None:
    data = page(text).encode(codec)
    assert not data.startswith((b"\xff\xfe", b"\xfe\xff"))
    d = decode_bytes(data)
    assert d.encoding == codec and right(d.text, text) == 1.0 and d.guessed


def test_utf16_sniffing_leaves_other_bytes_alone() -> None:
    assert sniff_utf16(page(RU).encode("cp1251")) is None
    assert sniff_utf16(page(ZH).encode("utf-8")) is None
    assert sniff_utf16(bytes(range(256)) * 8) is None  # NULs at both parities: binary, not text


def test_gbk_without_declaration_is_never_a_single_byte_guess_of_its_bytes() -> None:
    data = page(ZH).encode("gbk")
    # the detector's guess of a Cyrillic code page, as it makes for some Chinese pages, loses to the CJK reading
    d = _guess(data, [], [Guess("iso8859-5", 0.0, 0.5)])
    assert d.encoding == "gb18030" and right(d.text, ZH) == 1.0 and d.guessed
    russian = page(RU).encode("iso8859-5")  # a real Cyrillic page keeps the guess
    assert _guess(russian, [], [Guess("iso8859-5", 0.0, 0.5)]).encoding == "iso8859-5"


def test_latin_pages_without_a_declaration_stay_cp1252() -> None:
    french = ("Le conseil municipal a voté hier soir le budget de l'année prochaine, après un débat animé. "
              "Les élus de l'opposition ont critiqué la hausse des impôts locaux prévue pour financer les écoles. "
              "Le maire a répondu que ces dépenses étaient nécessaires et qu'aucune autre solution n'était réaliste. ")
    d = decode_bytes(page(french).encode("cp1252"))
    assert d.encoding == "cp1252" and right(d.text, french) == 1.0 and d.guessed
    assert script_of(d.text * 3) == "latin" and script_of(page(RU)) == "cyrillic" and script_of(page(JA)) == "kana"
