"""The benchmark's report: Markdown (every page listed) and JSON beside it; the worst pages'
hand-checked notes."""

from __future__ import annotations

import datetime as dt
import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.dom.causes import MAX_CLASSIFIED, SELECT
from benchmarks.dom.lines import THRESHOLD
from benchmarks.dom.render import PARTS
from bodyblocks.runtime.files import write_atomic

# The worst pages, inspected by hand (the HTML around a missing line): dataset/id -> what happened.
NOTES: dict[str, str] = {
    "l3s-gn1/l3s-f3d9f7be-b690-455e-a6c6-77c0644f68b0": (
        "parser divergence: an unknown <mbox> element after the <meta>s in <head>; HTML5 closes the head there and "
        "starts the body, libxml2 keeps <mbox> and the whole page inside <head>, which our walk skips (0 blocks); "
        "html5lib and Lexbor give 1.000"),
    "trafilatura-eval/traf-40f4743c7e899828": (
        "FAZ's no-JavaScript view: a <noscript><style>div:not(.faz-no-js){display:none!important}</style> hides "
        "the article, Chromium shows only the 'enable JavaScript' notice; we keep the article and drop the notice "
        "(the right answer for extraction)"),
    "daniel/20120117_www.aif.ua_ba56626e454701098f0c2d7c287ba60b5e027dcff50189015b444379": (
        "parser divergence: a stray <tr> after </table> inside the comment form of a display:none tab; HTML5 "
        "ignores it, libxml2 opens a <tr> that the following </form> and </div>s cannot close, so the rest of the "
        "page (the 'Читайте в разделе' box, the sidebar) sits inside <div id=tabs-block style='display: none'>; "
        "html5lib and Lexbor 0.852 (the rest is <select> options)"),
    "wcxb-dev/wcxb-4557": (
        "a <button>Toggle sub-navigation</button> after each menu link, on the link's line, and Search/Menu buttons: "
        "we hide small buttons by design"),
    "cleaneval-en/cleaneval-en-final-356": (
        "the site's navigation (tables of links) is the <noscript> fallback of menu.js: displayed without "
        "JavaScript; we show <noscript> only on app shells"),
    "dragnet/dragnet-366": (
        "CBS's list of network sites (BNET, CBS College Sports, ...) is a <noscript> fallback of a script-built "
        "menu"),
    "dragnet/dragnet-86": "the same CBS <noscript> list of network sites as dragnet-366",
    "dragnet/dragnet-44": "the same CBS <noscript> list of network sites as dragnet-366",
    "wcxb-dev/wcxb-2982": (
        "iFixit's header and menus: <button> labels, several of them screen-reader-only spans ('Select store') "
        "that the page's own stylesheet (not loaded here) hides"),
    "wcxb-dev/wcxb-0588": (
        "a mega-menu of <button>s, each an image, a category and a description ('Cases' + 'iPhone 17 & More'), "
        "under the 64-element mark, so hidden as buttons ('Â®' is double-encoded in the page's own bytes)"),
    "trafilatura-eval/traf-a93bcf12ee6b9a91": "search and menu <button>s ('Suchen', 'Aktionen ›') on many lines",
    "wcxb-dev/wcxb-2878": "the docs' search <button> ('Search ⌘/ctrl K') and sidebar toggle buttons",
    "wcxb-dev/wcxb-0003": "LinkedIn's cookie banner ('Accept Reject') and sign-in modal <button>s",
    "wcxb-dev/wcxb-0563": "Reddit's header <button>s ('Get App', screen-reader text 'Expand user menu')",
    "wcxb-dev/wcxb-4379": "accessibility-widget and cart <button>s ('Enable Accessibility', 'Close')",
    "cleaneval-en/cleaneval-en-final-131": (
        "two <noscript>s: a site banner as the page's very first tag (HTML5 closes that noscript at its <p>, in head "
        "a noscript holds only link/meta/style, so the banner is body text; libxml2 keeps it inside the noscript: a "
        "one-line parser divergence) and a 'best viewed with JavaScript' notice"),
    "cleaneval-en/cleaneval-en-final-678": (
        "checked: a <select> of 230 song titles (innerText lists every option; the closed control shows one)"),
    "dragnet/dragnet-R50": "checked: an archive <select> of weeks",
    "daniel/20120112_news.chinatimes.com_ed7743675e4bd1dc79f05b251c3a15f87958d281604c63cc9d5": (
        "checked: a section <select> ('分類瀏覽', '今日焦點', ...)"),
}
HAND_CHECKED = 15



def fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    scored = [r for r in rows if r.get("line_share") is not None]
    shares = [r["line_share"] for r in scored]
    chars = sum(r["chars"] for r in scored)
    return {
        "pages": len(rows),
        "rendered": sum(1 for r in rows if r.get("status") == "ok"),
        "scored": len(scored),
        "empty_render": sum(1 for r in rows if r.get("status") == "ok" and not r.get("lines")),
        "mean_line_share": statistics.fmean(shares) if shares else None,
        "median_line_share": statistics.median(shares) if shares else None,
        "mean_char_share": statistics.fmean(r["char_share"] for r in scored) if scored else None,
        "pooled_char_share": sum(r["found_chars"] for r in scored) / chars if chars else None,
        "mean_share_no_select": statistics.fmean(r["share_no_select"] for r in scored) if scored else None,
        "under": sum(1 for s in shares if s < THRESHOLD),
        "under_no_select": sum(1 for r in scored if (r.get("share_no_select") or 0) < THRESHOLD),
        "missing_lines": sum(r["lines"] - r["found"] for r in scored),
        **{f"missing_in_{p}": sum(r["missing_in"][p] for r in scored) for p in PARTS},
        "zero_blocks": sum(1 for r in scored if r["blocks"] == 0),
    }


def _cause_label(r: dict[str, Any], field: str = "main_cause") -> str:
    return "; ".join([*r.get("flags", []), r.get(field, "")]).strip("; ")


def _cause_tables(pages: list[dict[str, Any]], field: str, title: str) -> list[str]:
    """Three tables over a list of pages: pages by main cause, by page flag, missing lines by line cause."""
    flag_pages: Counter[str] = Counter()
    main_pages: Counter[str] = Counter()
    line_totals: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    for r in pages:
        key = f"{r['dataset']}/{r['id']}"
        for f in r.get("flags", []):
            flag_pages[f] += 1
            examples.setdefault(f, []).append(key)
        main_pages[r[field]] += 1
        examples.setdefault(r[field], []).append(key)
        line_totals.update({c: n for c, n in r.get("line_causes", {}).items() if field == "main_cause" or c != SELECT})
    md = [f"### {title[0].upper()}{title[1:]}", "", "| main cause of the page | pages | examples |", "|---|---|---|"]
    md += [f"| {c} | {n} | {', '.join(examples[c][:3])} |" for c, n in main_pages.most_common()]
    if flag_pages:
        md += ["", "| page flag | pages | examples |", "|---|---|---|"]
        md += [f"| {c} | {n} | {', '.join(examples[c][:3])} |" for c, n in flag_pages.most_common()]
    md += ["", "| line cause | missing lines on these pages |", "|---|---|"]
    md += [f"| {c} | {n} |" for c, n in line_totals.most_common()]
    return [*md, ""]


def _page_row(r: dict[str, Any], share: float, field: str) -> str:
    key = f"{r['dataset']}/{r['id']}"
    cause = _cause_label(r, field) + (f" — **{NOTES[key]}**" if key in NOTES else "")
    miss = " / ".join(m.replace("|", "\\|") for m in r.get("missing_examples", []))
    return (f"| {key} | {fmt(share)} | {fmt(r['line_share'])} | {r['found']} / {r['lines']} | {r['blocks']} "
            f"| {cause} | {fmt(r.get('html5lib_share'))} | {fmt(r.get('lexbor_share'))} | {miss} |")


def write_report(rows: list[dict[str, Any]], out: Path, command: str, seconds: float, note: str) -> dict[str, Any]:
    datasets = sorted({r["dataset"] for r in rows})
    summary = {d: summarize([r for r in rows if r["dataset"] == d]) for d in datasets}
    summary["Chinese pages (all datasets)"] = summarize([r for r in rows if r.get("lang") == "zh"])
    summary["non-Chinese pages"] = summarize([r for r in rows if r.get("lang") != "zh"])
    summary["all"] = summarize(rows)
    under = sorted((r for r in rows if r.get("line_share") is not None and r["line_share"] < THRESHOLD),
                   key=lambda r: (r["line_share"], -r["lines"]))
    under_ns = sorted((r for r in rows if r.get("share_no_select") is not None and r["share_no_select"] < THRESHOLD),
                      key=lambda r: (r["share_no_select"], -r["lines"]))
    failures = Counter(r["status"] for r in rows if r.get("status") != "ok")
    empty = [r for r in rows if r.get("status") == "ok" and not r.get("lines")]
    rendered = [r for r in rows if r.get("render_s") is not None]
    md = [
        "# DOM fidelity: do our blocks hold what Chromium displays?",
        "",
        f"`{command}`",
        "",
        f"Run on {dt.date.today().isoformat()}: {len(rows)} pages ({summary['Chinese pages (all datasets)']['pages']} "
        f"Chinese, {summary['non-Chinese pages']['pages']} others), {seconds / 60:.1f} minutes "
        f"(renders read from the cache where the decoded text was already rendered). {note}".rstrip(),
        "",
        "What is compared: the page's bytes decoded once, as the extractor decodes them",
        "(`bodyblocks.page.decode.to_text`);",
        "Chromium gets that same text as UTF-8 behind a byte-order mark, so charset detection is not measured (a BOM",
        "rather than a leading `<meta charset>`, which would put a tag before `<!doctype>` and switch Chromium to",
        "quirks mode). Headless Chromium, JavaScript off (so `<noscript>` is displayed), images off, every request",
        "refused (the page's external stylesheets never load; inline `<style>` applies), `<meta http-equiv=refresh>`",
        "renamed. A rendered line is a non-empty line of `document.body.innerText` with a letter, digit or CJK",
        "character; it is *found* when its white-space-free, case-folded form is in our blocks",
        "(`bodyblocks.page.segment.segment`) joined. Only rendered lines missing from our blocks count, never text",
        "we keep",
        "that Chromium hides. *char share* weights lines by length (mean over pages; *pooled*: over all characters).",
        "Without the page's stylesheets, text they would hide (screen-reader-only labels, collapsed menus) is",
        "displayed and counted; `<select>` elements count every option (innerText lists them all), hence the",
        "columns without them.",
        "",
        "| dataset | pages | rendered | empty render | mean line share | median | char share | pooled chars "
        f"| pages < {THRESHOLD} | 0 blocks, text shown | without `<select>` options: mean share "
        f"| pages < {THRESHOLD} |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in summary.items():
        label = f"**{name}**" if name == "all" else name
        md.append(
            f"| {label} | {s['pages']} | {s['rendered']} | {s['empty_render']} | {fmt(s['mean_line_share'])} "
            f"| {fmt(s['median_line_share'])} | {fmt(s['mean_char_share'])} | {fmt(s['pooled_char_share'])} "
            f"| {s['under']} | {s['zero_blocks']} | {fmt(s['mean_share_no_select'])} | {s['under_no_select']} |"
        )
    a = summary["all"]
    md += ["", f"Rendered lines missing from our blocks, all pages: {a['missing_lines']}, of which inside a `<select>` "
           f"(innerText lists every option; the closed control shows one) {a['missing_in_select']}, inside a "
           f"`<button>` {a['missing_in_button']}, inside a `<noscript>` {a['missing_in_noscript']} (from Chromium's "
           "own innerText of those elements)."]
    md += ["", "Pages not rendered or not scored, by reason: " +
           (", ".join(f"{k}: {v}" for k, v in failures.most_common()) or "none") + "."]
    if rendered:
        secs = [r["render_s"] for r in rendered]
        fresh = sum(1 for r in rows if r.get("cached") is False)
        cached = sum(1 for r in rows if r.get("cached") is True)
        md.append(f"Renders made in this run: {fresh}; read from the cache: {cached}. "
                  f"Chromium's time per page ({len(secs)} renders, from their cache records): mean "
                  f"{statistics.fmean(secs):.2f} s, median {statistics.median(secs):.2f} s, max {max(secs):.1f} s, "
                  f"{sum(secs) / 60:.1f} minutes in all.")
    if empty:
        md += ["", "Pages Chromium shows no text on (not scored: only rendered lines missing from ours count): "
               + ", ".join(f"{r['dataset']}/{r['id']} ({r['blocks']} blocks; {r['empty_reason']})" for r in empty)
               + "."]
    md += [
        "",
        "## Causes",
        "",
        "A missing line that Chromium shows inside a `<noscript>`, `<select>` or `<button>` (the innerText of those",
        "elements, read in the same render, holds it or a part of it) is put down to that element. Each other",
        f"missing line (the first {MAX_CLASSIFIED} of a page) is located in an HTML5 tree (html5lib, scripting off,",
        "as Chromium parses with JavaScript off) and in libxml2's tree, the one our walk reads: *libxml2 lost the",
        "text*, *libxml2 put it inside <X>* (X hidden to our walk and not an ancestor in the HTML5 tree) and",
        "*libxml2 nests it in a hidden element that the HTML5 tree closes before it* are parser divergences. A",
        "page's cause is its page flags plus the line cause holding most of its missing characters. The *html5lib*",
        "and *lexbor* columns give the line share our walk reaches on html5lib's tree and on Lexbor's (selectolax)",
        "tree serialized and segmented again: a parser divergence shows as a higher share there.",
        "",
    ]
    for parser in ("html5lib", "lexbor"):
        both = [r for r in under_ns if r.get(f"{parser}_share") is not None]
        up = [r for r in both if r[f"{parser}_share"] > r["line_share"] + 0.01]
        down = sum(1 for r in both if r[f"{parser}_share"] < r["line_share"] - 0.01)
        md.append(f"Our walk on {parser}'s tree, on the {len(both)} pages under {THRESHOLD} without `<select>` "
                  f"options: a higher line share on {len(up)} ("
                  + (", ".join(f"{r['dataset']}/{r['id']} {r['line_share']:.3f} -> {r[f'{parser}_share']:.3f}"
                               for r in up) or "none")
                  + f"), a lower one on {down}, within 0.01 on the others.")
    md.append("")
    md += _cause_tables(under, "main_cause", f"the {len(under)} pages under {THRESHOLD}")
    md += _cause_tables(under_ns, "main_cause_no_select",
                        f"the {len(under_ns)} pages under {THRESHOLD} once `<select>` options are left out")
    lists = ((f"Pages under {THRESHOLD} once `<select>` options are left out (the worst {HAND_CHECKED} checked "
              "by hand)", under_ns, "main_cause_no_select"), (f"Every page under {THRESHOLD}", under, "main_cause"))
    for title, rows, cause in lists:
        md += ["", f"## {title}", "",
               "| page | share w/o select | share | found / rendered lines | blocks | cause | html5lib | lexbor "
               "| missing (first lines) |",
               "|---|---|---|---|---|---|---|---|---|"]
        md += [_page_row(r, r["share_no_select"], cause) for r in rows]
    write_atomic(out, "\n".join(md) + "\n")
    columns = ("dataset", "id", "lang", "status", "blocks", "lines", "found", "line_share", "char_share",
               "share_no_select", "missing_in_select", "missing_in_button", "missing_in_noscript")
    detail = ("flags", "main_cause", "main_cause_no_select", "line_causes", "html5lib_share", "lexbor_share",
              "missing_lines", "missing_examples", "empty_reason")

    def value(r: dict[str, Any], k: str) -> Any:
        v = r["missing_in"].get(k[11:]) if k.startswith("missing_in_") and "missing_in" in r else r.get(k)
        return round(v, 4) if isinstance(v, float) else v

    listed = [r for r in rows if any(k in r for k in detail)]
    rounded = {n: {k: round(v, 4) if isinstance(v, float) else v for k, v in x.items()} for n, x in summary.items()}
    payload = {"command": command, "date": dt.date.today().isoformat(), "seconds": round(seconds),
               "threshold": THRESHOLD, "summary": rounded, "failures": dict(failures), "columns": columns,
               "pages": [[value(r, k) for k in columns] for r in rows],
               "details": [{"page": f"{r['dataset']}/{r['id']}", **{k: value(r, k) for k in detail if k in r}}
                           for r in listed]}
    text = json.dumps({k: v for k, v in payload.items() if k not in ("pages", "details")}, indent=1,
                      ensure_ascii=False)[:-2]  # the small parts indented, one line per page below
    for name in ("pages", "details"):
        lines = ",\n  ".join(json.dumps(x, ensure_ascii=False, separators=(",", ":")) for x in payload[name])
        text += f',\n "{name}": [\n  {lines}\n ]'
    write_atomic(out.with_suffix(".json"), text + "\n}\n")
    return summary
