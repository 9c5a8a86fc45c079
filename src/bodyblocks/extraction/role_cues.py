"""The cue data of the role steps (roles.py): the words, class names and patterns that mark a byline, a promo, a
standfirst, a caption, comments, a sidebar or a key points box, kept apart from the code that reads them, as
baselines/rules.py keeps the heuristic's. Chosen on the LOSO folds' pages before the protocol of
docs/GENERALIZATION.md; a change here changes what the shipped rule keeps (benchmarks/identical_output).
"""

from __future__ import annotations

import re

DESCRIPTION_NAMES = ("description", "og:description", "twitter:description", "dc.description")

MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"

DATE = re.compile(
    r"\d{4}\s*[-/.年]\s*\d{1,2}\s*[-/.月]\s*\d{1,2}|\b\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}\b|\b\d{1,2}:\d{2}\b"
    rf"|\b{MONTH}\s+\d{{1,2}},?\s+\d{{4}}|\b\d{{1,2}}\.?\s+{MONTH}\s+\d{{4}}",
    re.IGNORECASE)

AUTHOR = re.compile(
    r"^\s*(?:by|von|par|por|przez|от)\s+\S|来源\s*[:：]|作者\s*[:：]|编辑\s*[:：]|记者|发布时间|发表于|時間\s*[:：]|时间\s*[:：]"
    r"|\b(?:posted|published|updated|last modified|written by|autor|źródło|автор|источник|πηγή|συντάκτης)\b",
    re.IGNORECASE)

BYLINE_CLASS = re.compile(
    r"byline|author|dateline|\bdate|time|posted|pubdate|published|meta|source|credit|article-?info|post-?info",
    re.IGNORECASE)

PROMO_TEXT = re.compile(
    r"^\s*(?:推广|广告|赞助|advertisement|sponsored|promoted|anzeige|reklama|реклама|διαφήμιση)\s*[:：|\-]?",
    re.IGNORECASE)

AD_CLASS = re.compile(r"(?:^|[-_ ])(?:ad|ads|advert\w*|sponsor\w*|promo\w*)(?:$|[-_ ])", re.IGNORECASE)

# an id or class token (between "." or "#" and the next ".", "#", "/" or the end) that names a comment thread
COMMENT_NAMES = (r"comments?|comment-?(?:list|body|content|text|area|section|thread|wrapper|container|s-area"
                  r"|s-section|s-list|s-wrapper|s-container|item)|commentlist|replies|disqus[^./#]*|dsq-[^./#]+"
                  r"|respond|fb-comments|(?:user|article|post|reader)-comments?")

COMMENT_TOKEN = re.compile(rf"[.#](?:{COMMENT_NAMES})(?=[.#/]|$)", re.IGNORECASE)

# a comment container's name: those, and a blog's trackbacks and pingbacks (replies from other blogs), whose own
# names head no comments section (one "Trackback: <url>" line in a post: _own_names_comments reads COMMENT_TOKEN)
COMMENT_CONTAINER = re.compile(
    rf"[.#](?:{COMMENT_NAMES}|(?:track|ping)backs?(?:[-_]?(?:list|heading|header|title|link|area))?)(?=[.#/]|$)",
    re.IGNORECASE)

# an id or a whole class name (not a token of one: Genesis' "content-sidebar-wrap" wraps the article too) that names
# a sidebar or a widget area, where blog themes put their widgets (WordPress: div#sidebar, li.widget), or a news
# site's rail or right column (div#rightRail, div.right-rail, div#rightcol)
SIDEBAR = re.compile(r"[.#](?:sidebar|sidebar-widget|widgets?|widget-area|(?:right|left)?[-_]?rail"
                      r"|right[-_]?(?:col|column|sidebar))(?=[.#/]|$)", re.IGNORECASE)

# the words of an id or class token ("article-subhead" -> article, subhead; "introP" -> intro, p) that name a dek
DEK_WORDS = frozenset(
    "standfirst dek deck summary subtitle subhead subheading subheadline lede lead leadtext leadin intro introtext "
    "introduction excerpt sapo chapo chapeau teaser teasertext abstract strapline digest synopsis zhaiyao daoyu "
    "daodu".split())

# a dek's name inside a longer token ("articleLead" is read by words; "boxstandfirst" by this)
DEK_INSIDE = re.compile(
    r"standfirst|subtitle|subhead|summary|excerpt|teaser|abstract|strapline|synopsis|intro(?!duc)|lede|chapo|sapo"
    r"|zhaiyao|daoyu", re.IGNORECASE)

# a token naming something else: a caption, an image, a byline, a list of links ("lead-image-caption", "photo-intro"):
# these inside a token, the short words as words of it
NOT_DEK = re.compile(r"caption|photo|image|figure|credit|video|gallery|thumb|author|byline|related|promo",
                      re.IGNORECASE)

NOT_DEK_WORDS = frozenset("img pic media date time meta nav menu".split())

SUMMARY_LABEL = re.compile(r"^\s*(?:摘要|导语|导读|本文导读|核心提示|内容提要|提要|编者按)\s*[:：]")

# a news story's first paragraph opens with its dateline; a dek does not
DATELINE = re.compile(
    r"^\s*(?:[A-ZÀ-Ý][A-ZÀ-Ý .,/'-]{2,40}(?:\([^)]{2,30}\))?\s*[-–—:]"
    r"|\S{0,20}\s*\((?:AP|AFP|Reuters|dpa|PAP|ANSA|EFE|IANS|PTI)\b[^)]*\)|本报讯|本报|新华社|记者|中新网|【)")

CREDIT = re.compile(
    r"^\s*(?:photos?|photograph|image|picture|illustration|file photo|credit)s?\s*(?:by\b|:|/|\|)"
    r"|\((?:AP|AFP|Reuters|EPA|Getty)?\s*(?:Photo|Image|Illustration)s?\s*[/:)]"
    r"|(?:getty\s*images|shutterstock|associated press photo|\bAP photo|/\s*(?:AFP|Reuters|EPA|AP)\b|photo credit"
    r"|©\s*(?:reuters|ap|afp|getty))[^.]{0,40}\)?\s*$"
    r"|^\s*(?:图片来源|图片来自|图片提供|图源|摄影|图\s*[/／]|图\s*[:：])|(?:供图|摄|资料图(?:片)?|图片来源[:：][^。]{0,20})\s*[)）]?\s*$",
    re.IGNORECASE)

# "1of4", "3 of 12", "2/5" opening a gallery's caption (not a date "12/30", nor a time after it)
GALLERY_COUNTER = re.compile(r"^\s*(\d{1,3})\s*(?:of|/|／)\s*(\d{1,3})(?![\d/.:]|\s*\d{1,2}:)", re.IGNORECASE)

CAPTION_TOKEN = re.compile(r"caption|cutline|(?:photo|image|img|pic)-?credit|^credits?$|img-?text|image-?text"
                            r"|photo-?text|pic-?info|bildtext", re.IGNORECASE)

NOT_CAPTION_TOKEN = re.compile(r"author|byline", re.IGNORECASE)  # "authorCredit" names a byline

IMAGE_TOKEN = re.compile(r"image|photo|picture|^img|^pic$|gallery|slideshow", re.IGNORECASE)

NOT_CAPTION_TAGS = frozenset({"blockquote", "pre", "code", "table", "ul", "ol", "li", "td", "th"})

# a label that is a whole line: a story's key points box ("STORY HIGHLIGHTS", "Key points", "本文要点")
KEY_POINTS = re.compile(r"(?:story\s+)?highlights|key\s+(?:points|takeaways)|(?:本文|内容|新闻)?要点", re.IGNORECASE)

# a word every CREDIT match holds (lower-cased): text with none is no credit, found without the regular expression
CREDIT_HINTS = ("photo", "image", "picture", "illustration", "credit", "getty", "shutterstock", "ap", "afp",
                 "reuters", "epa", "©", "图", "摄")

# a heading (<h1>..<h6>) that opens with a counted or quoted comments title, or a reply form's ("3 Responses to …",
# "One thought on “…”", "Comments on “…”", "Leave a Reply Cancel reply", "网友评论（12）"); not a section heading of
# the article itself ("Comments on the draft law", "Comment is free", "Responses")
COMMENT_HEADING = re.compile(
    r"(?:\d+|one)\s+(?:comments?|responses?|thoughts?)\b|(?:no|two|three)\s+(?:comments|responses|thoughts)\b"
    r"|(?:comments?|responses?|thoughts?)\s+(?:on|to)\s+[“\"'‘«„]"
    r"|(?:leave|post|add|write|submit)\s+(?:a|your)\s+(?:comment|reply|response)"
    r"|(?:网友|读者|用户|发表|我要|全部)(?:评论|留言)",
    re.IGNORECASE)

# a line that is nothing but a comments heading, whatever element holds it (a styled <div>: "Comments (12)")
COMMENT_LINE = re.compile(
    r"(?:(?:reader|user|visitor)s?'?\s+)?comments(?:\s*\(\d+\))?\s*:?|\d+\s+comments?|(?:\d+|one)\s+responses?"
    r"|leave\s+a\s+(?:comment|reply)|(?:网友|读者|用户|发表|全部)?(?:评论|留言)(?:\s*[（(]\d+[)）])?\s*[:：]?",
    re.IGNORECASE)
