"""Synthetic Chinese news pages with known gold text, written in the shared dataset layout.

The recipe reproduces the pages that broke classic extractors:
  1. four templates: semantic `<article>`, `class="post-content"`, five nested divs, table layout;
  2. four encodings: UTF-8 (220 of 300), GBK declared (38), GBK undeclared (28), UTF-8 with BOM (14);
  3. four malformations: unclosed `<p>`, unquoted attributes, a missing `</div>` that pulls the body into
     the `class="header"` container, intact;
  4. boilerplate on every page: 24 nav links, 18 sidebar items (one repeats a body heading), 12 comments,
     4 ad slots (one inside the article), a tag cloud, an author card, a pager, a cookie notice, hidden
     text, and a site statement inside a `<script>` JSON blob;
  5. Chinese body text with short headings ("处理流程", "背景"), inline markup, entities and `<br>`.
Gold is the text a browser displays for the body: entities decoded, one paragraph, heading or list item
per line, a `<br>` starting a new line. Each site keeps one template, so group splits by site work.
Everything is drawn from `random.Random` seeded per page: the same seed gives the same bytes.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bodyblocks.types import Page

TEMPLATES = ("article", "post-content", "nested-divs", "table")
ENCODING_COUNTS = {"utf-8": 220, "gbk-declared": 38, "gbk-undeclared": 28, "utf-8-bom": 14}
ENCODINGS = tuple(ENCODING_COUNTS)
MALFORMATIONS = ("unclosed-p", "unquoted-attrs", "missing-div", "intact")
N_NAV, N_SIDEBAR, N_COMMENTS, N_ADS, N_TAGS = 24, 18, 12, 4, 12

# ------------------------------------------------------------------------------------------------ vocabulary
# Everyday characters only: every string must encode in GB2312 (tests check it), so GBK pages are exact.
_SITE_WORDS = (
    "xinzhi 新知 kejiqianyan 科技前沿 shuzishenghuo 数字生活 chengshibao 城市报 huanqiukan 环球看 "
    "caijingzhoukan 财经周刊 jiaoyuzaixian 教育在线 jiankangshuo 健康说 qicheguancha 汽车观察 "
    "wenhuaxun 文化讯 tiyuyuan 体育苑 nongyezixun 农业资讯 hangyedongtai 行业动态 xinwenwang 新闻网 "
    "lvyouji 旅游记 fangchanbao 房产报 huanbaowang 环保网 ruanjianshe 软件社 shichangbao 市场报 "
    "dushuhui 读书会 kexuewang 科学网 minshengxian 民生线 gongyewang 工业网 haiwaibao 海外报"
).split()
SITES: tuple[tuple[str, str], ...] = tuple(zip(_SITE_WORDS[0::2], _SITE_WORDS[1::2], strict=True))

_SUBJECTS = (
    "研究团队 该公司 相关部门 工程师们 当地政府 多家企业 专家组 这家医院 学校 项目组 市场监管部门 技术人员 "
    "志愿者 合作社 开发者 运营团队 调查人员 城市管理者"
).split()
_TIMES = "近日 今年以来 上周 目前 本月初 去年年底 日前 在过去三年里 最近".split()
_VERBS = "推出了 完善了 讨论了 发布了 调整了 测试了 建立了 改进了 评估了 启动了 公布了 优化了".split()
_OBJECTS = (
    "新的数据平台 处理流程 服务标准 安全规范 调查报告 试点方案 管理制度 监测系统 培训计划 应急预案 "
    "开放接口 质量体系 补贴政策 交通方案 检测方法"
).split()
_CLAUSES = (
    "这一做法受到了广泛关注 有关人士表示将继续跟进 整体效果还需要时间检验 参与者普遍给出了积极评价 "
    "下一阶段的重点是扩大覆盖范围 部分细节仍在讨论之中 数据显示效率提高了两成 成本因此下降了不少 "
    "不少用户反映操作更加方便 预计明年将在全国推广 其中仍有一些问题有待解决 相关经验值得借鉴"
).split()
HEADINGS = (
    "处理流程 背景 概述 主要问题 实施步骤 数据来源 结论 专家观点 下一步 影响 原因分析 后续安排 "
    "相关情况 各方反应"
).split()
_NAV = (
    "首页 新闻 国内 国际 财经 科技 体育 娱乐 汽车 房产 教育 健康 旅游 文化 军事 游戏 时尚 视频 图片 "
    "评论 专题 数码 手机 读书 历史 公益 天气 彩票 家居 美食"
).split()
_COMMENT_BITS = (
    "写得真好 支持一下 说得有道理 希望能落实 这个问题确实存在 已转发 期待后续报道 不太同意这个观点 "
    "我们这里也是这样 学习了 什么时候能推广 赞一个"
).split()
_NAMES = "张伟 王芳 李娜 刘洋 陈静 杨帆 赵磊 黄敏 周涛 吴刚 徐丽 孙强".split()
_TAGS = "人工智能 大数据 民生 教育 环保 交通 医疗 创业 互联网 政策 城市 农业 能源 消费".split()
_ADS = "限时优惠 全场五折 免费试用 新品上市 立即下载 注册送好礼".split()

# Entities a browser decodes; the gold holds the decoded character.
_ENTITY_SWAPS = (("“", "&ldquo;"), ("”", "&rdquo;"), ("…", "&hellip;"), ("—", "&mdash;"), ("的", "&#30340;"))


@dataclass
class Frag:
    """A piece of the page: its HTML and the text a browser shows for it."""

    html: str
    text: str


@dataclass
class Spec:
    """What one synthetic page is made of."""

    site: str
    site_name: str
    template: str
    encoding: str
    malformation: str
    day: str = "20240101"
    extra: dict[str, Any] = field(default_factory=dict)


def _sentence(rng: random.Random) -> str:
    """One Chinese sentence, ending with a full stop."""
    s = f"{rng.choice(_SUBJECTS)}{rng.choice(_TIMES)}{rng.choice(_VERBS)}{rng.choice(_OBJECTS)}"
    return f"{s}，{rng.choice(_CLAUSES)}。"


def _inline(rng: random.Random, text: str) -> str:
    """HTML for body text with a few entities and an inline tag, decoding back to `text`."""
    html = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for char, entity in _ENTITY_SWAPS:
        if char in html and rng.random() < 0.5:
            html = html.replace(char, entity, 1)
    m = re.search(r"[\u4e00-\u9fff]{4}", html)
    if m and rng.random() < 0.4:
        tag = rng.choice(['strong', 'em', 'span class="hl"', f'a href="/tag/t{rng.randint(1, 99)}.html"'])
        name = tag.split()[0]
        html = f"{html[: m.start()]}<{tag}>{m.group()}</{name}>{html[m.end():]}"
    return html


def _paragraph(rng: random.Random, close_p: bool) -> Frag:
    """A body paragraph; about one in five has a `<br>` that starts a second displayed line."""
    lines = ["".join(_sentence(rng) for _ in range(rng.randint(2, 4)))]
    if rng.random() < 0.2:
        lines.append(_sentence(rng))
    if rng.random() < 0.15:  # entities that must be decoded in the gold
        lines[0] = "“R&D”投入占比已超过5%，温度<5℃时设备自动停机……" + lines[0]
    html = rng.choice(["<br>", "<br/>", "<br />"]).join(_inline(rng, ln) for ln in lines)
    return Frag(f"<p>{html}</p>" if close_p else f"<p>{html}", "\n".join(lines))


def _body(rng: random.Random, spec: Spec, close_p: bool) -> tuple[list[Frag], str, str]:
    """Body fragments in order, the title, and the middle heading that the sidebar repeats."""
    title = f"{rng.choice(_SUBJECTS)}{rng.choice(_VERBS)}{rng.choice(_OBJECTS)}"
    heads = rng.sample(HEADINGS, rng.randint(3, 5))
    frags: list[Frag] = [Frag(f"<h1>{title}</h1>", title)]
    lead = _paragraph(rng, close_p)
    frags.append(lead)
    for k, head in enumerate(heads):
        level = rng.choice((2, 3))
        frags.append(Frag(f"<h{level}>{head}</h{level}>", head))
        if k == 0 or rng.random() < 0.3:
            steps = [f"第{n}步，{_sentence(rng)}" for n in "一二三四"[: rng.randint(2, 4)]]
            items = "".join(f"<li>{_inline(rng, s)}</li>" for s in steps)
            # <ul>, not <ol>: whether a gold line holds the "1." marker a browser draws is a convention
            frags.append(Frag(f'<ul class="steps">{items}</ul>', "\n".join(steps)))
        frags.extend(_paragraph(rng, close_p) for _ in range(rng.randint(1, 3)))
    frags[2:2] = _structures(random.Random(title))
    return frags, title, heads[len(heads) // 2]


def _structures(srng: random.Random) -> list[Frag]:
    """Body structures that Markdown output must keep: a data table, an ordered list, a code block, each on
    some pages. Drawn from their own random source (seeded by the title), so the rest of a page's recipe
    is what it was before they were added."""
    out: list[Frag] = []
    if srng.random() < 0.3:
        head = ["项目", "数量", "单位"]
        rows = [[srng.choice(_OBJECTS), str(srng.randint(2, 900)), srng.choice(["个", "台", "吨"])]
                for _ in range(srng.randint(2, 4))]
        cells = "".join(f"<th>{c}</th>" for c in head)
        body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
        html = f'<table class="data"><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>'
        out.append(Frag(html, "\n".join("\t".join(r) for r in [head, *rows])))  # innerText: cells by tabs
    if srng.random() < 0.2:
        steps = [_sentence(srng) for _ in range(srng.randint(2, 3))]
        items = "".join(f"<li>{s}</li>" for s in steps)
        out.append(Frag(f"<ol>{items}</ol>", "\n".join(f"{n}. {s}" for n, s in enumerate(steps, 1))))
    if srng.random() < 0.15:
        code = "curl -s https://example.cn/api/v1/items \\\n    | python -m json.tool"
        out.append(Frag(f"<pre><code>{code}</code></pre>", code))
    return out


def _nav(rng: random.Random) -> str:
    items = "".join(f'<li><a href="/c/{i}.html">{w}</a></li>' for i, w in enumerate(rng.sample(_NAV, N_NAV)))
    return f'<ul class="nav">{items}</ul>'


def _sidebar(rng: random.Random, repeated: str) -> str:
    # titles carry a time word, so none can equal the page title (which has none)
    titles = [f"{rng.choice(_SUBJECTS)}{rng.choice(_TIMES)}{rng.choice(_VERBS)}{rng.choice(_OBJECTS)}"
              for _ in range(N_SIDEBAR)]
    titles[rng.randrange(N_SIDEBAR)] = repeated  # the repeated-phrase trap: same text as a body heading
    items = "".join(f'<li><a href="/a/{rng.randint(1000, 9999)}.html">{t}</a></li>' for t in titles)
    ad = f'<div class="ad-slot" id="ad-side">广告：{rng.choice(_ADS)}</div>'
    return f'<div class="sidebar"><h3>热门文章</h3><ul class="hot-list">{items}</ul>{ad}</div>'


def _comments(rng: random.Random, close_p: bool) -> str:
    out = ['<div class="comments"><h3>网友评论</h3>']
    for i in range(N_COMMENTS):
        text = "，".join(rng.sample(_COMMENT_BITS, 2)) + "。"
        p = f"<p>{text}</p>" if close_p else f"<p>{text}"
        user = f"{rng.choice(_NAMES)}{rng.randint(10, 99)}"
        out.append(f'<div class="comment" id="c{i}"><span class="user">{user}</span>'
                   f'<span class="time">{rng.randint(1, 59)}分钟前</span>{p}'
                   f'<a href="#reply">回复</a> <a href="#like">赞({rng.randint(0, 99)})</a></div>')
    return "".join(out) + "</div>"


def _extras(rng: random.Random, spec: Spec) -> dict[str, str]:
    """The remaining boilerplate pieces, by name."""
    tags = "".join(f'<a href="/tag/{i}.html">{t}</a> ' for i, t in enumerate(rng.sample(_TAGS, N_TAGS)))
    author = rng.choice(_NAMES)
    pages = "".join(f'<a href="?page={n}">{n}</a> ' for n in range(1, 6))
    return {
        "tags": f'<div class="tag-cloud"><h4>标签</h4>{tags}</div>',
        "author": f'<div class="author-card"><img src="/img/a.png" alt="{author}头像"><div class="name">'
        f"{author}</div><p>资深编辑，长期关注{rng.choice(_TAGS)}领域。</p><a href=\"/u/1.html\">关注</a></div>",
        "pager": f'<div class="pager"><a href="?page=1">上一页</a> {pages}<a href="?page=3">下一页</a></div>',
        "cookie": '<div class="cookie-notice">本站使用Cookie改善浏览体验，继续浏览即表示同意'
        '<a href="/privacy.html">隐私政策</a>。<button>同意</button></div>',
        "meta": f'<div class="meta"><span>{spec.day[:4]}-{spec.day[4:6]}-{spec.day[6:]} 10:30</span> '
        f"<span>来源：{spec.site_name}</span> <span>作者：{author}</span></div>",
        "hidden": '<div class="share-tip" style="display:none">分享到朋友圈</div>',
        "ad_top": f'<div class="ad-slot" id="ad-top">广告：{rng.choice(_ADS)}</div>',
        "ad_mid": f'<div class="ad-slot" id="ad-mid">推广：{rng.choice(_ADS)}，点击了解详情</div>',
        "ad_bottom": f'<div class="ad-slot" id="ad-bottom">广告：{rng.choice(_ADS)}</div>',
        "footer": f'<div class="footer"><p>Copyright &copy; 2024 {spec.site_name} 版权所有</p>'
        f'<p>京ICP备{rng.randint(10000000, 99999999)}号</p></div>',
    }


def _article(frags: list[Frag], ex: dict[str, str]) -> str:
    """The article's own HTML: title, byline, body with the in-article ad and hidden text, pager."""
    parts = [frags[0].html, ex["meta"], frags[1].html, ex["ad_mid"], ex["hidden"]]
    parts += [f.html for f in frags[2:]]
    return "".join(parts) + ex["pager"]


def _layout(spec: Spec, art: str, side: str, ex: dict[str, str], comments: str) -> str:
    """Wrap article and sidebar in the site's template."""
    t = spec.template
    if t == "article":
        main = f"<main><article>{art}{ex['author']}</article>{comments}</main><aside>{side}</aside>"
    elif t == "post-content":
        main = (f'<div class="container"><div class="post"><div class="post-content">{art}</div>'
                f"{ex['author']}</div>{comments}{side}</div>")
    elif t == "nested-divs":
        main = (f'{side}<div id="page"><div class="wrap"><div class="main"><div class="left-col">'
                f'<div class="box">{art}</div></div></div></div></div>{ex["author"]}{comments}')
    else:
        main = (f'<table class="layout" width="100%" cellpadding="0"><tr><td class="left" width="200">{side}'
                f'</td><td class="content">{art}{ex["author"]}</td></tr></table>{comments}')
    return main + ex["tags"]


def _head(rng: random.Random, spec: Spec, title: str, statement: str) -> str:
    """<head> with the charset declaration the spec calls for and a JSON-LD blob."""
    enc = spec.encoding
    if enc == "gbk-declared":
        label = spec.extra.setdefault("declared", rng.choice(["gbk", "gb2312", "GBK"]))
        meta = rng.choice([f'<meta charset="{label}">',
                           f'<meta http-equiv="Content-Type" content="text/html; charset={label}">'])
    elif enc == "utf-8-bom":  # a third of BOM pages also carry a lying gb2312 label: the BOM must win
        meta = rng.choice(["", '<meta charset="utf-8">', '<meta charset="gb2312">'])
    elif enc == "utf-8":
        meta = rng.choice(['<meta charset="utf-8">', '<meta charset="UTF-8">', "",
                           '<meta http-equiv="Content-Type" content="text/html; charset=utf-8">'])
    else:
        meta = ""
    ld = json.dumps({"@type": "NewsArticle", "headline": title, "publisher": spec.site_name}, ensure_ascii=False)
    return (f"<head>{meta}<title>{title}_{spec.site_name}</title><style>.ad-slot{{color:#999}}</style>"
            f'<script type="application/ld+json">{ld}</script>'
            f'<script>window.__SITE__ = {json.dumps({"statement": statement}, ensure_ascii=False)};</script>'
            "</head>")


_QUOTED = re.compile(r'\b([a-z-]+)="([^"\s<>`\'=]*[^"\s<>`\'=/])"')  # values safe to leave unquoted


def _encode(spec: Spec, html: str) -> bytes:
    """Bytes for the spec's encoding; GBK text that GB2312 cannot hold is labelled gbk instead."""
    if spec.encoding == "utf-8":
        return html.encode("utf-8")
    if spec.encoding == "utf-8-bom":
        return b"\xef\xbb\xbf" + html.encode("utf-8")
    if spec.extra.get("declared", "").lower() == "gb2312":
        try:
            return html.encode("gb2312")
        except UnicodeEncodeError:
            html = re.sub("gb2312", "gbk", html, count=1)
    return html.encode("gbk")


def synth_page(
    rng: random.Random,
    template: str | None = None,
    encoding: str | None = None,
    malformation: str | None = None,
    site: int | None = None,
) -> tuple[bytes, str, dict[str, Any]]:
    """One synthetic page.

    Args:
        rng: the random source (a page is a pure function of its state and the arguments).
        template, encoding, malformation: one of TEMPLATES / ENCODINGS / MALFORMATIONS, or None to draw.
        site: index into SITES, or None to draw.
    Returns:
        (page bytes, gold text, meta) where meta names the recipe and the traps: "body_lines",
        "repeated" (the body heading the sidebar repeats), "statement", "nav", "hidden", ...
    """
    slug, name = SITES[site if site is not None else rng.randrange(len(SITES))]
    spec = Spec(slug, name, template or rng.choice(TEMPLATES), encoding or rng.choice(ENCODINGS),
                malformation or rng.choice(MALFORMATIONS), day=f"2024{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}")
    close_p = spec.malformation != "unclosed-p"
    frags, title, repeated = _body(rng, spec, close_p)
    statement = f"本站声明：{name}所载文章仅代表作者观点，转载请注明出处。"
    ex = _extras(rng, spec)
    art = _article(frags, ex)
    header_end = "" if spec.malformation == "missing-div" else "</div>"
    header = f'<div class="header"><div class="logo"><a href="/index.html">{name}</a></div>{_nav(rng)}{header_end}'
    body = (f"{header}{ex['cookie']}{ex['ad_top']}"
            f"{_layout(spec, art, _sidebar(rng, repeated), ex, _comments(rng, close_p))}"
            f"{ex['ad_bottom']}{ex['footer']}")
    html = f'<!DOCTYPE html>\n<html lang="zh-CN">{_head(rng, spec, title, statement)}<body>{body}</body></html>\n'
    if spec.malformation == "unquoted-attrs":
        html = _QUOTED.sub(r"\1=\2", html)
    gold_lines = [ln for f in frags for ln in f.text.split("\n")]
    meta = {
        "site": slug, "site_name": name, "template": spec.template, "encoding": spec.encoding,
        "malformation": spec.malformation, "title": title, "body_lines": gold_lines, "repeated": repeated,
        "statement": statement, "hidden": "分享到朋友圈", "day": spec.day, **spec.extra,
    }
    return _encode(spec, html), "\n".join(gold_lines) + "\n", meta


def quota(counts: dict[str, int], n: int) -> list[str]:
    """Scale a {name: count} recipe to n items (largest remainder), as a list of names in recipe order."""
    total = sum(counts.values())
    exact = {k: v * n / total for k, v in counts.items()}
    got = {k: int(x) for k, x in exact.items()}
    for k in sorted(exact, key=lambda k: exact[k] - got[k], reverse=True)[: n - sum(got.values())]:
        got[k] += 1
    return [k for k in counts for _ in range(got[k])]


_README = """# synthetic ({pages} pages, seed {seed})

Generated by `bodyblocks data synth --out DIR --pages {pages} --seed {seed}` (bodyblocks.training.synth). Chinese
news-like pages with known gold text. Recipe: templates {templates}; encodings {encodings};
malformations {malformations}. Every page has 24 nav links, 18 sidebar items (one repeats a body heading),
12 comments, 4 ad slots (one inside the article), a tag cloud, an author card, a pager, a cookie notice,
hidden text and a site statement inside a script JSON blob. Gold: the body as a browser shows it (title,
headings, paragraphs, list items; a <br> starts a new line; entities decoded). `note` holds the recipe
and the site (for grouped splits). Licence: generated data, no restrictions.

## Counts
pages: {pages}; with full gold text: {pages}; languages: {{"zh": {pages}}}
"""


def generate_corpus(out_dir: str | Path, pages: int = 300, seed: int = 0) -> list[Page]:
    """Write a synthetic corpus in the shared dataset layout and return its pages.

    Args:
        out_dir: folder to create (pages.jsonl, html/<id>.html.gz, gold/<id>.txt, README.md).
        pages: number of pages; encodings and malformations keep the recipe's proportions.
        seed: the corpus is a pure function of (pages, seed).
    Returns:
        The pages, with `meta` holding each page's recipe.
    """
    out = Path(out_dir)
    (out / "html").mkdir(parents=True, exist_ok=True)
    (out / "gold").mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    encodings = quota(ENCODING_COUNTS, pages)
    malformations = quota(dict.fromkeys(MALFORMATIONS, 1), pages)
    rng.shuffle(encodings)
    rng.shuffle(malformations)
    result: list[Page] = []
    with open(out / "pages.jsonl", "w", encoding="utf-8") as fh:
        for i in range(pages):
            site = rng.randrange(len(SITES))
            page_rng = random.Random(f"{seed}-{i}")
            data, gold, meta = synth_page(page_rng, TEMPLATES[site % 4], encodings[i], malformations[i], site)
            page = _write_page(out, f"synth-{seed}-{i:04d}", data, gold, meta)
            fh.write(json.dumps(_record(page), ensure_ascii=False) + "\n")
            result.append(page)
    counts = {k: encodings.count(k) for k in ENCODINGS}
    (out / "README.md").write_text(_README.format(
        pages=pages, seed=seed, templates=", ".join(TEMPLATES), encodings=json.dumps(counts),
        malformations=", ".join(MALFORMATIONS)), encoding="utf-8")
    return result


def _write_page(out: Path, page_id: str, data: bytes, gold: str, meta: dict[str, Any]) -> Page:
    """Write one page's html and gold files."""
    (out / "html" / f"{page_id}.html.gz").write_bytes(gzip.compress(data, mtime=0))
    (out / "gold" / f"{page_id}.txt").write_text(gold, encoding="utf-8")
    url = f"https://www.{meta['site']}.cn/{meta['day']}/{page_id}.html"
    return Page(page_id, data, url=url, lang="zh", gold=gold, dataset=out.name, meta=meta)


def _record(page: Page) -> dict[str, Any]:
    """The pages.jsonl record of a synthetic page."""
    m = page.meta
    note = {k: m[k] for k in ("site", "template", "encoding", "malformation", "repeated")}
    return {
        "id": page.id, "url": page.url, "lang": "zh", "split": None,
        "html": f"html/{page.id}.html.gz", "gold": f"gold/{page.id}.txt",
        "snippets": {"with": m["body_lines"][1:3], "without": [m["statement"], m["hidden"], "网友评论"]},
        "page_type": "article", "labels": None, "note": json.dumps(note, ensure_ascii=False),
    }
