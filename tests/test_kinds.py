"""Page kinds (extraction/kinds.py): a forum or Q&A thread keeps its posts in order, an article's comments stay out;
an error page comes back empty and flagged; a page whose article sits in <noscript> or a template reads it."""

from __future__ import annotations

import json

import numpy as np
from benchmarks.rule_steps import ablated

from bodyblocks.extraction import kinds
from bodyblocks.extraction.decision import DecisionRule
from bodyblocks.page.segment import segment, segment_tree
from bodyblocks.types import Extraction

RULE = DecisionRule(threshold=0.5, confident=0.5)
_LD = json.dumps({"@context": "https://schema.org", "@type": "DiscussionForumPosting", "headline": "Which bike?"})
_OP = ("<div class='post-wrap'><div class='content'>"
       + "".join(f"<p>Opening post line {i}: I am choosing my first mountain bike and would like advice on it.</p>"
                 for i in range(4)) + "</div></div>")
_REPLIES = "".join(
    f"<div class='comment' id='comment-{100 + i}'><div class='author'>user{i}</div><div class='date'>2y</div>"
    f"<div class='comment-body'><p>Reply {i}: a hardtail is a fine first bike, spend the rest on a good fork.</p>"
    f"</div><a class='reply' href='#r{i}'>Reply</a></div>" for i in range(6))


def _thread(ld: bool = True) -> str:
    head = f"<script type='application/ld+json'>{_LD}</script>" if ld else ""
    return (f"<html><head><title>Which bike?</title>{head}</head><body><h1>Which bike?</h1><main>{_OP}"
            f"<section id='comments'>{_REPLIES}</section></main><footer>Contact</footer></body></html>")


def _decide(html: str, probs_of: dict[str, float], rule: DecisionRule = RULE) -> Extraction:
    """The rule on a page segmented as the block extractors do (with the thread cue), P(body) by the first
    marker of a block's tag path found in `probs_of` (0.05 otherwise)."""
    doc, tree = segment_tree(html)
    kinds.add_kind(doc, tree)
    probs = np.array([next((p for k, p in probs_of.items() if k in b.tag_path), 0.05) for b in doc.blocks],
                     np.float32)
    return rule.decide(doc, probs, "test")


def test_the_structured_data_of_a_thread_names_it() -> None:
    doc, tree = segment_tree(_thread())
    assert kinds.thread_cue(tree) and kinds.add_kind(doc, tree).extra[kinds.KIND] == kinds.THREAD
    doc, tree = segment_tree(_thread(ld=False))
    assert not kinds.thread_cue(tree) and kinds.KIND not in kinds.add_kind(doc, tree).extra
    micro = "<html><body><div itemscope itemtype='https://schema.org/QAPage'><p>Q</p></div></body></html>"
    assert kinds.thread_cue(segment_tree(micro)[1])


def test_a_thread_keeps_its_replies_in_order_though_the_model_doubts_them() -> None:
    # the opening post is body (0.9), the replies' text only 0.2: the model learnt comments under articles
    ex = _decide(_thread(), {"post-wrap": 0.9, "comment-body": 0.2})
    lines = ex.text.splitlines()
    assert lines[0].startswith("Opening post line 0")
    replies = [line for line in lines if line.startswith("Reply ")]
    assert [r.split(":")[0] for r in replies] == [f"Reply {i}" for i in range(6)]
    assert "user0" not in lines and "Reply" not in lines and "2y" not in lines  # authors, dates, buttons stay out


def test_an_articles_comments_stay_out() -> None:
    # the same page without the thread cue reads as an article with comments under it
    ex = _decide(_thread(ld=False), {"post-wrap": 0.9, "comment-body": 0.2})
    assert ex.text.startswith("Opening post line 0") and "Reply 0" not in ex.text


def test_a_page_of_posts_in_comment_containers_keeps_the_doubted_ones_too() -> None:
    # no structured data, no article outside the containers: the kept text is the posts (a thread)
    html = (f"<html><body><h1>Which bike?</h1><main><section id='comments'>{_REPLIES}</section></main>"
            "</body></html>")
    probs = {"comment-100.comment/div.comment-body": 0.9, "comment-101.comment/div.comment-body": 0.9}
    assert "Reply 5" not in RULE.decide(segment(html), np.full(len(segment(html).blocks), 0.05), "t").text
    ex = _decide(html, probs)
    assert [line.split(":")[0] for line in ex.text.splitlines()] == [f"Reply {i}" for i in range(6)]


def _forum(posts: int = 6, first: str = "") -> str:
    """A thread whose software names no comment container: each post an <article> with its author and its text in
    article.message-body/div.bbWrapper (the first one apart, in the thread's header)."""
    def post(i: int) -> str:
        return (f"<article class='message'><div class='user'>user{i}</div><div class='meta'>#{i + 2} · Aug {i + 5}"
                f"</div><article class='message-body'><div class='bbWrapper'>Post {i}: a hardtail is a fine first "
                f"bike, spend the rest of the money on a good fork and decent brakes.</div></article></article>")
    op = ("<div class='thread-head'><article class='message-body'><div class='bbWrapper'>" + (first or
          "Opening post: I am choosing my first mountain bike and would like your advice on frames and forks.")
          + "</div></article></div>")
    return (f"<html><head><title>Which bike?</title></head><body><h1>Which bike?</h1><main>{op}"
            f"<div class='thread-posts'>{''.join(post(i) for i in range(posts))}</div></main>"
            "<footer>Contact</footer></body></html>")


def test_a_thread_of_repeated_posts_outside_comment_containers_keeps_them_in_order() -> None:
    # the model keeps the opening post only; the replies sit in no comment container (the forum names none)
    ex = _decide(_forum(), {"thread-head": 0.9, "message/article": 0.2})
    lines = ex.text.splitlines()
    assert lines[0].startswith("Opening post") and [x.split(":")[0] for x in lines[1:]] == [f"Post {i}"
                                                                                           for i in range(6)]
    assert "user0" not in ex.text and "Aug 5" not in ex.text  # authors and dates stay out
    # one reply is no thread (posts in at least kinds.MIN_POSTS elements), nor a page that keeps an article
    assert kinds.MIN_POSTS == 3
    one = _decide(_forum(posts=1), {"thread-head": 0.9, "message/article": 0.2}).text
    assert one.startswith("Opening post") and "Post 0" not in one
    long = " ".join(["An article of its own, long enough to be one."] * 60)  # over kinds.REPEAT_KEPT
    assert "Post 0" not in _decide(_forum(first=long), {"thread-head": 0.9, "message/article": 0.2}).text


def test_a_thread_of_repeated_posts_keeps_a_comment_container_out() -> None:
    # a comment box beside the posts (the model kept it): the posts are the body, the box's text a comment (the
    # opening post holds over kinds.MIN_ARTICLE characters, so the comment box alone does not make the thread)
    first = "Opening post: I am choosing my first mountain bike and would like your advice on frames and forks. " * 3
    box = "<div id='comments'><p>A reader's comment on the forum's new layout, kept by the model though it is no post."
    html = _forum(first=first).replace("</main>", box + "</p></div></main>")
    ex = _decide(html, {"thread-head": 0.9, "message/article": 0.2, "comments": 0.9})
    assert "Post 5" in ex.text and "reader's comment" not in ex.text
    assert ex.comments == ["A reader's comment on the forum's new layout, kept by the model though it is no post."]


def test_an_articles_paragraphs_under_one_element_are_no_repeated_posts() -> None:
    paras = "".join(f"<p>Paragraph {i}: the council met on Tuesday to discuss the new bus routes in town.</p>"
                    for i in range(8))
    html = (f"<html><body><h1>Buses</h1><main><div class='story'>{paras}</div>"
            "<aside><p>Related: the old routes, in a box of its own beside the story.</p></aside></main></body></html>")
    doc = segment(html)
    probs = np.array([0.9 if "div.story" in b.tag_path and b.text.startswith("Paragraph 0") else 0.3
                      for b in doc.blocks], np.float32)
    keep = probs >= 0.5
    kept = sum(b.text_len for b, k in zip(doc.blocks, keep, strict=True) if k)
    assert kinds.repeated_posts(doc.blocks, probs, keep, np.zeros(len(doc.blocks), bool), kept) is None



_MENU = "<div class='menu'>" + "".join(f"<div class='m'><p>Section {i}: the news and views of the day</p></div>"
                                       for i in range(5)) + "</div>"
_STORY = ("<div class='story'><p>Millions of children across the region already lack clean water, and a changing "
          "climate will make it worse, the report says.</p></div>")
_RESCUE = DecisionRule(threshold=0.5, confident=0.5, rescue=0.15)


def test_menu_lines_the_model_half_leans_to_are_no_thread_on_a_page_that_keeps_only_its_headline() -> None:
    # the headline is the one confident block; the article's paragraph sits under the threshold; the menu's
    # repeated lines lean to body (P 0.12 >= kinds.POST_PROB) but hold none of the kept text: no thread of them
    html = (f"<html><head><title>Children and the climate</title></head><body>{_MENU}<main><h1>Children and the "
            f"climate</h1>{_STORY}</main></body></html>")
    probs = {"main/h1": 0.9, "div.m/p": 0.12, "div.story": 0.4}
    doc = segment(html)
    p = np.array([next((v for k, v in probs.items() if k in b.tag_path), 0.05) for b in doc.blocks], np.float32)
    keep = p >= 0.5
    kept = sum(b.text_len for b, k in zip(doc.blocks, keep, strict=True) if k)
    assert kinds.repeated_posts(doc.blocks, p, keep, np.zeros(len(doc.blocks), bool), kept) is None
    ex = _decide(html, probs, _RESCUE)
    assert ex.title == "Children and the climate" and ex.text.startswith("Millions of children")
    assert "Section" not in ex.text and ex.low_confidence  # the rescue after the roles (decision.py, step 11)
    assert _decide(html, probs, ablated(_RESCUE, role_rescue=False)).no_body

def _page(title: str, body: str) -> str:
    return (f"<html><head><title>{title}</title></head><body><ul class='nav'><li><a href='/'>Home</a></li>"
            f"<li><a href='/news'>News</a></li></ul><main>{body}</main><footer>Copyright 2025</footer></body></html>")


def test_a_not_found_page_is_flagged_with_an_empty_body() -> None:
    for title, body in (
            ("404 Not Found", "<h1>Not Found</h1><p>The requested URL was not found on this server.</p>"),
            ("Page not found | City Times", "<h1>Page not found</h1><p>Sorry, try the search box or go home.</p>"),
            ("Error 500", "<h1>Internal Server Error</h1><p>Something went wrong on our end, please retry.</p>"),
            ("Access denied", "<h1>Access denied</h1><p>You do not have permission to view this resource.</p>"),
            ("页面不存在 - 新闻网", "<h1>页面不存在</h1><p>抱歉，您访问的页面不存在或已被删除，请返回首页。</p>"),
            ("City Times", "<p>Sorry, the page you are looking for could not be found. It may have moved.</p>")):
        ex = _decide(_page(title, body), {"/main": 0.9})
        assert ex.error_page and ex.no_body and ex.text == "" and ex.kept == [], title



def test_an_error_pages_message_is_a_field_and_scored_back_where_the_gold_holds_it() -> None:
    from bodyblocks.batch.outputs import render
    from bodyblocks.evaluation.evaluate import scored_text
    from bodyblocks.training.datasets import GoldConvention, gold_convention

    ex = _decide(_page("Page not found | City Times", "<h1>Page not found</h1><p>Sorry, the page you asked for is "
                                                      "gone; try the search box.</p>"), {"/main": 0.9})
    message = "Sorry, the page you asked for is gone; try the search box."
    assert ex.error_page and ex.text == "" and ex.error_text == message
    assert json.loads(render(ex, "json", "p"))["error_text"] == ex.error_text
    assert scored_text(ex, GoldConvention(errors=True)) == ex.error_text  # cleaneval-en's gold holds the message
    assert scored_text(ex, GoldConvention(title=True, errors=True)) == f"{ex.title}\n{ex.error_text}"
    assert scored_text(ex, GoldConvention()) == ""  # elsewhere the page has no body
    peer = Extraction("Page not found. Try the search box.", title="Page not found")  # a peer keeps it as text
    assert scored_text(peer, GoldConvention(errors=True)) == peer.text
    assert gold_convention("cleaneval-en").errors and not gold_convention("wcxb-dev").errors
    article = _decide(_page("City Times", "<p>" + "A long article paragraph. " * 20 + "</p>"), {"/main": 0.9})
    assert article.text and article.error_text == ""


def test_an_article_about_errors_is_no_error_page() -> None:
    paras = "".join(f"<p>Paragraph {i}: a 404 page tells a visitor that the address they followed leads nowhere, "
                    "and a good one offers a way back to the site.</p>" for i in range(12))
    for title in ("404 errors: how to fix them", "The Forbidden City reopens", "Missing hiker not found after storm"):
        ex = _decide(_page(title, f"<h1>{title}</h1>{paras}"), {"/main": 0.9})
        assert not ex.error_page and ex.text.startswith("Paragraph 0"), title
    short = _decide(_page("Missing hiker not found after storm", "<p>Rescuers searched the ridge all night.</p>"),
                    {"/main": 0.9})
    assert not short.error_page and short.text


def test_the_error_page_flag_reaches_the_outputs() -> None:
    from bodyblocks.batch.inputs import Job
    from bodyblocks.batch.outputs import outcome, page_row, render

    ex = _decide(_page("404 Not Found", "<h1>Not Found</h1><p>The requested URL was not found.</p>"), {"/main": 0.9})
    assert json.loads(render(ex, "json", "p"))["error_page"] is True and render(ex, "txt", "p") == ""
    assert outcome(ex)["error_page"] is True and "error_page" in page_row(Job("p"), ex, None)["flags"]


_SIDEBAR = ("<aside class='sidebar'><h3>Archive</h3><ul>"
            + "".join(f"<li><a href='/{i}'>Post number {i} from the archive of this blog</a> (12 comments)</li>"
                      for i in range(20)) + "</ul></aside>")
_POST = "".join(f"<p>Line {i} of the post: we walked the coast path from the harbour to the lighthouse and back.</p>"
                for i in range(8))


def _blog(hidden: str, visible: str = "") -> str:
    return (f"<html><head><title>Coast walk</title></head><body><header><a href='/'>My blog</a></header>"
            f"<main>{visible}{hidden}</main>{_SIDEBAR}<footer>Powered by a blog engine</footer></body></html>")


def test_an_article_in_noscript_or_a_template_beside_a_full_sidebar_is_read() -> None:
    for hidden in (f"<noscript><article>{_POST}</article></noscript>", f"<template id='post'>{_POST}</template>",
                   f"<script type='text/template' id='tpl'><article>{_POST}</article></script>"):
        texts = [b.text for b in segment(_blog(hidden)).blocks]
        lines = [t for t in texts if t.startswith("Line ")]
        assert [t.split(" of")[0] for t in lines] == [f"Line {i}" for i in range(8)], hidden[:30]
        assert any(t.startswith("Post number 0") for t in texts)  # the visible page is still there
        assert texts == [b.text for b in segment(_blog(hidden), parser="lxml").blocks]


def test_a_hidden_copy_of_a_visible_article_or_a_short_one_stays_hidden() -> None:
    copy = segment(_blog(f"<noscript>{_POST}</noscript>", visible=f"<article>{_POST}</article>")).blocks
    assert sum(b.text.startswith("Line 0") for b in copy) == 1  # never counted twice
    short = segment(_blog("<noscript><p>Please enable JavaScript to read the comments of this post.</p></noscript>"))
    assert not any("enable JavaScript" in b.text for b in short.blocks)
    lazy = segment(_blog("<noscript><img src='a.jpg'></noscript>", visible=f"<article>{_POST}</article>"))
    assert sum(b.text.startswith("Line ") for b in lazy.blocks) == 8


# short real articles whose title names an error: each two to four paragraphs of its own prose
_SHORT_ARTICLES = {
    "Access denied: how a council locked residents out of the tip": [
        "Residents of Eastfield found the recycling centre gates shut on Saturday after the council moved to a "
        "booking system without telling anyone.",
        "Queues of cars with garden waste stretched back to the ring road, and several drivers left bags by the fence.",
        "The council said the change would cut waiting times once people got used to it."],
    "Error 404: the band that vanished and came back": [
        "Five years after their last show, the Leeds quartet played a surprise set at a pub in Hunslet on Friday.",
        "They opened with two new songs, slower and stranger than anything on their first record, and closed with "
        "the single that made their name."],
    "Gone | Film review": [
        "The director's third feature follows a fisherman who rows out one morning and never returns, told through "
        "the neighbours who keep his boat ready for him.",
        "It is patient, beautifully shot on the Norfolk coast, and a little too fond of its long silences."],
    "Forbidden – the garden nobody may enter": [
        "Behind a brick wall in the middle of the old town lies a walled garden that has been closed to the public "
        "since 1962.",
        "Its owner, a trust set up by the last resident, opens it for one afternoon a year, and the waiting list for "
        "that afternoon now runs to three thousand names."],
    "Oops! - the week in bloopers": [
        "A weather presenter pointed at the wrong county for a full minute on Tuesday, and the clip has since been "
        "watched two million times.",
        "Elsewhere, a mayor cut a ribbon that turned out to belong to the shop next door, which was not opening at "
        "all."],
    "Not Found: the missing Vermeer that turned up in a loft": [
        "A painting listed as lost since 1944 was identified last month in the roof space of a farmhouse near Utrecht.",
        "Experts spent six weeks on the pigments and the canvas before the museum announced the find on Monday."],
    "找不到 - 电影评论": [
        "这部电影讲述了一位母亲在南方小城寻找失踪女儿的故事，导演用大量长镜头记录了她穿过街巷、车站和码头的每一天。",
        "影片节奏缓慢，但演员的表演极其克制，许多观众在映后座谈中表示被最后一场雨中的戏深深打动。",
        "这部作品将于下月在全国艺术院线上映。"],
    "Bad Request | The agony aunt column": [
        "My neighbour has asked to borrow my car every weekend since March, and I have run out of polite ways to say "
        "no.",
        "Our columnist says a clear answer given once is kinder than a dozen vague ones, and suggests offering a lift "
        "to the station instead."],
    "Error 500 - a play about a data centre": [
        "The new play at the Crucible is set entirely in a server room on the night of a power cut, with four "
        "engineers and one failing generator.",
        "It is funnier than it sounds, and the second act, in near darkness, is the best thing on a Sheffield stage "
        "this year."],
    "Gone: the last tram to Bury": [
        "The final tram of the old line ran at eleven on Sunday night, packed with enthusiasts and a brass band.",
        "Services resume in the spring on the new track, which adds two stops and a park-and-ride at Heaton Park."],
    "Service Unavailable – a review of the new rail timetable": [
        "The new timetable promised more trains between Leeds and York, yet on its first day eleven services were "
        "cancelled before nine o'clock.",
        "The operator blamed a shortage of drivers trained on the new route and said the gaps would close by June."],
    "Page not found: a novel about a forgotten archive": [
        "Her second novel follows a librarian who discovers that a whole floor of the city archive has been left out "
        "of every catalogue since the war.",
        "What she finds there is less a mystery than a family history, told with a light hand and a sharp ear for "
        "small-town talk."],
}


def test_short_articles_titled_with_an_error_are_not_emptied() -> None:
    assert len(_SHORT_ARTICLES) == 12
    for title, paras in _SHORT_ARTICLES.items():
        body = f"<h1>{title.split(' | ')[0]}</h1>" + "".join(f"<p>{p}</p>" for p in paras)
        ex = _decide(_page(title, body), {"/main": 0.9})
        assert not ex.error_page and ex.text.splitlines() == paras and not ex.no_body, title


def test_a_short_explainer_quoting_a_not_found_message_is_no_error_page() -> None:
    explainer = ("<p>When a browser shows “the page you requested could not be found”, the server has answered with "
                 "status 404: it was reached, but it holds nothing at that address.</p><p>Most of the time the cause "
                 "is an old bookmark or a typing slip, and a look at the address bar settles it in a second.</p>")
    ex = _decide(_page("What a 404 means | Tech Help", f"<h1>What a 404 means</h1>{explainer}"), {"/main": 0.9})
    assert not ex.error_page and ex.text.startswith("When a browser shows")


def test_real_error_pages_with_some_help_text_are_still_flagged() -> None:
    for title, body in (
            ("404 Not Found", "<p>404 Not Found. The page you requested could not be found. Go home</p>"),
            ("Page not found", "<p>The page you are looking for is no longer at this address. We have updated and "
                               "reorganised our website. You should be able to find the same content by navigating "
                               "from our home page.</p><p>If you still can't find what you're looking for, please "
                               "e-mail us.</p>"),
            ("Site", "<h1>Page Not Found</h1><p>We're sorry - the page or function you tried to access could not be "
                     "found on our web site. Would you take a moment to email us? Please include details of how you "
                     "arrived at this page so that we can correct the problem.</p><p>Thank you for your help,</p>"),
            ("新闻网", "<p>抱歉，您访问的页面不存在或已被删除。</p><p>请返回首页继续浏览。</p>")):
        ex = _decide(_page(title, body), {"/main": 0.9})
        assert ex.error_page and ex.text == "" and ex.error_text, title
