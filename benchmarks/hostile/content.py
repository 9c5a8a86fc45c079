"""What the hostile corpus's pages say: a news article with a numbered sentence, its Chinese
counterpart, and the text helpers every part of the corpus uses. Imports no other benchmark module."""

from __future__ import annotations

CANARY = "CANARY-7f3a91 must never be read"


def sentence(tag: str) -> str:
    return (f"Relief convoys reached the valley on Tuesday, dispatch {tag} said, after three days of rain had "
            "closed the mountain roads.")


PARAGRAPHS = [
    "Residents had waited on the ridge for supplies since the old stone bridge collapsed last week, and the first "
    "trucks carried drinking water, rice, blankets and medicine for the clinic in the lower village.",
    "Engineers from the provincial roads office said a temporary crossing would be built upstream within a month, "
    "provided the river kept falling at its present rate and the weather stayed dry through the weekend.",
    "Teachers reopened the primary school in the church hall on Wednesday morning, and the market square, where "
    "farmers had sold what little survived the flood, was cleared of mud by volunteers from the nearby towns.",
    "Officials warned that landslides remained a danger on the northern slopes, where the soil was still soaked, "
    "and asked drivers to keep to the marked route and to travel only in daylight until further notice.",
]
CHINESE = [
    "救援车队周二抵达山谷，此前连续三天的降雨冲毁了山路，官员表示道路已经重新开放。",
    "自从上周大桥倒塌以来，居民们一直在山脊上等待物资，第一批卡车运来了饮用水、大米、毛毯和药品。",
    "工程师说，如果河水继续下降，天气保持干燥，一个月内将在上游修建一座临时桥梁，帮助村民出行。",
    "当地政府表示，未来一周还将有更多车队进入灾区，帮助恢复电力和通信，学校也将在下周重新开课。",
]


def article(tag: str, head: str = "", charset: str | None = "utf-8", extra: str = "", first: str | None = None,
            body_only: bool = False) -> str:
    """A real-looking news page: navigation, the article (its first paragraph `first`, by default the numbered
    sentence), a sidebar and a footer."""
    meta = f'<meta charset="{charset}">' if charset else ""
    paras = "".join(f"<p>{p}</p>" for p in PARAGRAPHS)
    story = (f"<article><h1>Relief convoys reach the flooded valley</h1><p class='byline'>By Maria Ortega, "
             f"valley correspondent</p><p>{first or sentence(tag)}</p>{paras}{extra}</article>")
    nav = ("<header><nav><a href='/'>Home</a> <a href='/world'>World</a> <a href='/region'>Region</a> "
           "<a href='/sport'>Sport</a> <a href='/weather'>Weather</a></nav></header>")
    aside = ("<aside><h3>Most read</h3><ul><li><a href='/a'>Council approves the new budget</a></li>"
             "<li><a href='/b'>Late goal sinks the visitors</a></li><li><a href='/c'>Five recipes for "
             "autumn</a></li></ul></aside>")
    foot = ("<footer><p>&copy; 2024 The Valley Courier. All rights reserved.</p><a href='/privacy'>Privacy</a> "
            "<a href='/terms'>Terms</a></footer>")
    body = f"<body>{nav}<main>{story}{aside}</main>{foot}</body>"
    if body_only:
        return body
    return (f"<!DOCTYPE html>\n<html lang='en'><head>{meta}<title>Relief convoys reach the valley | The Valley "
            f"Courier</title>{head}</head>{body}</html>\n")


def chinese_article(charset: str | None) -> str:
    meta = f'<meta http-equiv="Content-Type" content="text/html; charset={charset}">' if charset else ""
    paras = "".join(f"<p>{p}</p>" for p in CHINESE)
    return (f"<!DOCTYPE html><html><head>{meta}<title>救援车队抵达山谷</title></head><body><div class='nav'>"
            "<a href='/'>首页</a> <a href='/news'>新闻</a> <a href='/sport'>体育</a></div><div class='content'>"
            f"<h1>救援车队抵达山谷</h1>{paras}</div><div class='foot'>版权所有 山谷日报</div></body></html>")


# ------------------------------------------------------------------------------------------ checks
def norm(text: str) -> str:
    return " ".join(text.split())



def printable(path: str) -> str:
    """A path as the report prints it: undecodable bytes of a file name become U+FFFD."""
    try:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        return path.encode("utf-8", "replace").decode("utf-8")



def clip(text: str, width: int) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"
