"""Training roles and the convention's body target (training/targets.py) on small synthetic pages, and the cache and
config that carry them (data.targets)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bodyblocks.config import ConfigError, DataConfig
from bodyblocks.page.segment import segment
from bodyblocks.training import cache as cache_mod
from bodyblocks.training.targets import (
    ROLES,
    block_roles,
    convention_targets,
    is_caption,
    is_prompt,
    is_related,
    is_share,
)
from bodyblocks.types import Block, Page

PARAS = [
    "The river rose by two metres overnight and the town's lower streets were under water by dawn.",
    "Volunteers filled sandbags at the school while the council opened the sports hall to families.",
    "Forecasters expect the water to fall slowly over the weekend as the rain moves east.",
]
ARTICLE = f"""<html><head><title>Floods close the old bridge | Daily Example</title></head><body>
<div class="article">
<h1>Floods close the old bridge</h1>
<p class="byline">By Jane Roe, May 3, 2020</p>
<p>{PARAS[0]}</p>
<figure><img src="a.jpg"><figcaption>Water covers Mill Street on Sunday. (AP Photo/John Doe)</figcaption></figure>
<p>{PARAS[1]}</p>
<p>{PARAS[2]}</p>
<ul class="related-links"><li><a href="/a">Storm warnings for the coast</a></li>
<li><a href="/b">How to prepare for a flood</a></li></ul>
</div></body></html>"""
# the gold of a source that holds everything the article's container shows
GOLD = "\n".join(["Floods close the old bridge", "By Jane Roe, May 3, 2020", PARAS[0],
                  "Water covers Mill Street on Sunday. (AP Photo/John Doe)", PARAS[1], PARAS[2],
                  "Storm warnings for the coast", "How to prepare for a flood"])


def _block(text: str, path: str = "html/body/div/p", links: float = 0.0) -> Block:
    n = len("".join(text.split()))
    return Block(0, text, path.rsplit("/", 1)[-1].split(".")[0], path, "/html[1]/body[1]/div[1]/p[1]", 3,
                 text_len=n, link_len=int(links * n), link_density=links)


def _roles_of(page: Page, targets: str = "convention") -> dict[str, tuple[str | None, int]]:
    cp = cache_mod.process_page(page, targets)
    roles = cp.roles or [None] * len(cp.blocks)
    return {b.text: (r, y) for b, r, y in zip(cp.blocks, roles, cp.labels, strict=True)}


def test_a_caption_in_the_gold_is_not_body_under_the_convention() -> None:
    page = Page(id="p", html=ARTICLE, gold=GOLD, dataset="anything")
    gold = _roles_of(page, "gold")
    assert all(y == 1 for _, y in gold.values())  # the gold holds every block, the caption and the list too
    conv = _roles_of(page)
    caption = "Water covers Mill Street on Sunday. (AP Photo/John Doe)"
    assert conv[caption] == ("caption", 0)
    assert conv["Floods close the old bridge"] == ("headline", 0)
    assert conv["By Jane Roe, May 3, 2020"] == ("byline", 0)
    assert conv["Storm warnings for the coast"] == ("related", 0)
    assert all(conv[p] == ("body", 1) for p in PARAS)


def test_the_gold_targets_and_their_cache_key_are_unchanged(tmp_path: Path) -> None:
    page = Page(id="p", html=ARTICLE, gold=GOLD, dataset="anything")
    cp = cache_mod.process_page(page)
    assert cp.roles is None and "roles" not in cache_mod.to_json(cp)
    folder = tmp_path / "ds"
    (folder / "html").mkdir(parents=True)
    (folder / "gold").mkdir()
    (folder / "html" / "p.html").write_text(ARTICLE, encoding="utf-8")
    (folder / "gold" / "p.txt").write_text(GOLD, encoding="utf-8")
    rec = {"id": "p", "url": None, "lang": "en", "split": None, "html": "html/p.html", "gold": "gold/p.txt",
           "snippets": None, "page_type": None, "labels": None, "note": None}
    (folder / "pages.jsonl").write_text(json.dumps(rec) + "\n", encoding="utf-8")
    cdir = tmp_path / "cache"
    gold_path = cache_mod.build_cache(folder, cdir, workers=1)
    assert gold_path.name.startswith("ds-") and "convention" not in gold_path.name
    conv = cache_mod.load_cached(folder, cdir, workers=1, targets="convention")
    assert gold_path.is_file()  # building one target kind leaves the other's file alone
    assert cache_mod.cache_path(folder, cdir, "convention").name.startswith("ds-convention-")
    assert conv[0].roles is not None and sum(conv[0].labels) == 3
    assert sum(cache_mod.load_cached(folder, cdir, build=False)[0].labels) == 8
    with pytest.raises(ValueError, match="targets"):
        cache_mod.cache_path(folder, cdir, "silver")


def test_l3s_block_classes_name_the_roles() -> None:
    html = ("<html><body><h1>Bridge closed</h1><p>" + PARAS[0] + "</p><p>Copyright 2008 Example News</p>"
            "<ul><li><a href='/x'>Other story about rivers</a></li></ul>"
            "<div id='comments'><p>Great article, thanks for writing it.</p></div></body></html>")
    labels = ("<html><body><span class='x-nc-sel1'><h1>Bridge closed</h1></span><span class='x-nc-sel2'><p>"
              + PARAS[0] + "</p></span><span class='x-nc-sel3'><p>Copyright 2008 Example News</p></span>"
              "<span class='x-nc-sel4'><ul><li><a href='/x'>Other story about rivers</a></li></ul></span>"
              "<span class='x-nc-sel5'><div id='comments'><p>Great article, thanks for writing it.</p></div></span>"
              "</body></html>")
    page = Page(id="l", html=html, labels_html=labels.encode(), dataset="l3s-gn1")
    gold = _roles_of(page, "gold")
    assert gold["Bridge closed"][1] == 1 and gold["Copyright 2008 Example News"][1] == 1  # classes 1 and 3: gold
    conv = _roles_of(page)
    assert conv["Bridge closed"] == ("headline", 0)
    assert conv[PARAS[0]] == ("body", 1)
    assert conv["Copyright 2008 Example News"] == ("other", 0)  # supplemental that no cue names
    assert conv["Other story about rivers"] == ("related", 0)
    assert conv["Great article, thanks for writing it."] == ("comment", 0)


def test_a_threads_posts_stay_body() -> None:
    post = "I had the same problem with the driver after the update, rolling back to the old one fixed it."
    blocks = [_block(post, "html/body/div#comments/div.comment/p"),
              _block(post + " Thanks!", "html/body/div#comments/div.comment/p")]
    assert block_roles(blocks, [1, 1]) == ["body", "body"]  # too little article outside the comment container
    assert convention_targets(block_roles(blocks, [1, 1]), [1, 1]) == [1, 1]
    question = _block("How do I roll back a driver? " * 12, "html/body/main/div.question/p")  # 300+ characters
    asked = [question, *blocks]
    assert block_roles(asked, [1, 1, 1]) == ["body", "comment", "comment"]  # reads as an article with comments
    # a Q&A page by its structured data (kinds.thread_cue), as the decision rule reads it: the answers are body
    assert block_roles(asked, [1, 1, 1], thread_cue=True) == ["body", "body", "body"]


@pytest.mark.parametrize("text", ["(AP Photo/Evan Vucci)", "A crowd gathers outside. Photo: Getty Images",
                                  "图片来源：新华社", "图：工人在现场施工", "1of4 A woman walks past the closed shop.",
                                  "Photo by Mark Jones/AP"])
def test_photo_credits_and_gallery_captions_are_captions(text: str) -> None:
    assert is_caption(_block(text))


@pytest.mark.parametrize("text", ["12/30 10:34:59 ET", PARAS[0], "Graphics: Nvidia GeForce GTX 770 2GB"])
def test_dates_and_paragraphs_are_no_captions(text: str) -> None:
    assert not is_caption(_block(text))


def test_caption_paths_and_what_they_do_not_cover() -> None:
    assert is_caption(_block("A long caption " * 40, "html/body/div/div.wp-caption/p.wp-caption-text"))
    assert not is_caption(_block("A long paragraph " * 40, "html/body/div.has-captions/div/p"))
    assert not is_caption(_block("The child tax credit (CTC)", "html/body/div/h3#the-child-tax-credit-(ctc)"))
    assert not is_caption(_block("Andrew Hendry, Computerworld", "html/body/div/p.authorCredit"))
    assert not is_caption(_block("quote " * 5, "html/body/figure/blockquote"))


def test_a_run_of_paragraphs_in_a_caption_box_is_no_caption() -> None:
    description = ("Hand-thrown stoneware mug with a speckled glaze, made to hold twelve ounces of coffee. Each one "
                   "is shaped on the wheel in our studio, so sizes vary a little from the photos.")
    for path in ("html/body/main/div.product/div.caption/p", "html/body/main/div.product-caption/div/div/p"):
        run = _block(description, path)  # own parent named, and a caption element further up
        run.sibling_paragraphs = 4
        assert not is_caption(run), path
        one = _block("The potter at her wheel in the studio.", path)
        one.sibling_paragraphs = 1
        assert is_caption(one), path


def test_share_related_and_prompt_lines() -> None:
    assert is_share(_block("Share this:")) and is_share(_block("Tags: floods, weather"))
    assert is_share(_block("分享到")) and not is_share(_block("Like many towns, it floods."))
    assert is_related(_block("Related articles")) and is_related(_block("相关阅读"))
    assert is_related(_block("Storm warnings", "html/body/div.recommended/ul/li", links=1.0))
    assert not is_related(_block("Storm warnings", "html/body/div.recommended/ul/li", links=0.0))
    assert is_prompt(_block("Sign up for our newsletter")) and is_prompt(_block("扫码关注我们的微信公众号"))
    assert not is_prompt(_block("Readers who would like to know more may subscribe to the list we keep."))


def test_a_listing_pages_list_is_its_body() -> None:
    item = _block("Storm warnings for the coast", "html/body/div.popular-posts/ul/li", links=1.0)
    assert block_roles([item], [1]) == ["related"]
    assert block_roles([item], [1], listing=True) == ["body"]


def _item(text: str, path: str, xpath: str, index: int) -> Block:
    n = len("".join(text.split()))
    return Block(index, text, path.rsplit("/", 1)[-1].split(".")[0], path, xpath, 3, text_len=n,
                 is_list_item=path.rsplit("/", 1)[-1].startswith("li"))


def test_a_sidebars_widgets_and_a_key_points_box_are_no_body() -> None:
    story = [_item(PARAS[i], "html/body/div.main/div.story/p", f"/html[1]/body[1]/div[1]/div[1]/p[{i + 1}]", i)
             for i in range(3)]
    about = _item("We are two friends who cook every weekend and write it all down.",
                  "html/body/div#sidebar/div.widget/p", "/html[1]/body[1]/div[2]/div[1]/p[1]", 3)
    label = _item("STORY HIGHLIGHTS", "html/body/div.main/div.highlights/h2", "/html[1]/body[1]/div[1]/div[2]/h2[1]", 4)
    points = [_item(f"Point {k}: the water rose overnight", "html/body/div.main/div.highlights/ul/li",
                    f"/html[1]/body[1]/div[1]/div[2]/ul[1]/li[{k}]", 5 + k) for k in (1, 2)]
    blocks = [label, *points, *story, about]
    roles = block_roles(blocks, [1] * len(blocks))
    assert roles == ["key_points", "key_points", "key_points", "body", "body", "body", "sidebar"]
    assert convention_targets(roles, [1] * len(blocks)) == [0, 0, 0, 1, 1, 1, 0]
    # a page whose gold body is its sidebar's text (a page of widgets): the widgets are its body, as at extraction
    assert block_roles([story[0], about, about], [0, 1, 1]) == ["other", "body", "body"]


def test_the_sidebar_and_key_points_guard_reads_what_the_earlier_roles_left() -> None:
    story = [_item(PARAS[i], "html/body/div.main/div.story/p", f"/html[1]/body[1]/div[1]/div[1]/p[{i + 1}]", i)
             for i in range(2)]
    widgets = [_item(f"Widget {k}: " + "we cook every weekend and write it all down for our readers here. " * 2,
                     "html/body/div#sidebar/div.widget/p", f"/html[1]/body[1]/div[2]/div[{k}]/p[1]", 2 + k)
               for k in range(3)]
    said = [_item(f"Comment {k}: thanks for the story, the bridge was closed all week. " * 3,
                  "html/body/div#comments/div.comment/p", f"/html[1]/body[1]/div[3]/div[{k + 1}]/p[1]", 5 + k)
            for k in range(8)]
    blocks = [*story, *widgets, *said]
    roles = block_roles(blocks, [1] * len(blocks))
    # the comments leave first; of what is left, the widgets are most: the page's content (kept at extraction too)
    assert roles[:5] == ["body"] * 5 and set(roles[5:]) == {"comment"}
    label = _item("Key points", "html/body/div.main/div.points/h2", "/html[1]/body[1]/div[1]/div[2]/h2[1]", 0)
    items = [_item(f"Point {k}: the river rose by two metres overnight and the streets flooded by dawn",
                   "html/body/div.main/div.points/ul/li", f"/html[1]/body[1]/div[1]/div[2]/ul[1]/li[{k}]", k)
             for k in (1, 2, 3, 4)]
    page = [label, *items, *story, *widgets]
    roles = block_roles(page, [1] * len(page))
    # the key points go first; of what is left, the widgets are most: they stay, as at extraction
    assert roles[:5] == ["key_points"] * 5 and roles[5:] == ["body"] * 5


def test_every_role_is_named_and_the_config_key_is_checked() -> None:
    assert len(set(ROLES)) == 13 and ROLES[0] == "body"
    assert DataConfig().targets == "gold" and DataConfig(targets="convention").targets == "convention"
    with pytest.raises(ConfigError, match="data.targets"):
        DataConfig(targets="silver")


def test_segmented_chinese_page_roles() -> None:
    body = "今天上午，市政府召开新闻发布会，介绍了全市防汛工作的最新进展和下一步安排。"
    html = (f"<html><head><title>全市防汛工作取得进展</title></head><body><div class='content'>"
            f"<h1>全市防汛工作取得进展</h1><p>{body}</p><p>{body}各部门要加强值守。</p><p>图片来源：新华社</p><p>分享到</p></div></body></html>")
    doc = segment(html)
    gold = [1] * len(doc.blocks)
    roles = dict(zip((b.text for b in doc.blocks), block_roles(doc.blocks, gold, doc.title), strict=True))
    assert roles == {"全市防汛工作取得进展": "headline", body: "body", body + "各部门要加强值守。": "body",
                     "图片来源：新华社": "caption", "分享到": "share"}
