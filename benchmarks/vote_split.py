"""The heuristic's vote weighed by page kind, vetoed by the learned parts, or kept off link text: the
leave-one-source-out folds' parts under variants of the blend that loso_blend's grid cannot express (tried, not kept).

    python -m benchmarks.vote_split --blend runs/loso-blend                       # every variant, a table
    python -m benchmarks.vote_split --blend runs/loso-blend --write docs/BLENDS.md#vote-split

The vote's weight is where the folds pull apart (docs/GENERALIZATION.md): wcxb-dev's best settings give it 0.3, the
news sources' 0.1. Three ways to have both, each scored as loso_blend scores the grid (the same parts, decision rule,
gold conventions and nested choice: every fold's setting is the one with the best OBJECTIVE over the other folds,
each without its test pages from the left-out source's sites):

  kinds    a vote weight per page kind, from the page's structured data: `article` (og:type article, or a JSON-LD
           @type or microdata itemtype naming an Article, NewsArticle, BlogPosting, ...), `other` (an og:type,
           @type or itemtype, none an article: a product, a website) and `none` (no structured data; the older
           sources' pages). Variant `article`: one weight for article pages, one for the rest; `kinds`: one for each
           of the three. A setting is the grid's (model weight, threshold, outer threshold, core) with a vote weight
           per group, every combination of GRID's vote values.
  veto     where the learned parts' own blend, (w * model + (1 - w - h) * trees) / (1 - h), is under VETO, P(body)
           is the lower of it and the blend (the vote lifts what the model and trees doubt, not what they reject);
           every setting of the grid.
  links    the vote counts only for a block under LINKS link text (a list of headlines inside the heuristic's
           container is not lifted); every setting of the grid.

`same` (one weight, the grid as it is) reproduces loso_blend's nested figure. Each page's score under every setting
is computed once per variant of the probabilities (OUT/pages-<name>.json.gz, under loso_blend's rule_key, the grid
and the parts files of --blend); the
combinations are sums over pages. Also shown: the best over all folds, and each fold's own best setting (an oracle:
what the parts could give with the blend chosen on the fold itself).
"""

from __future__ import annotations

import itertools
import multiprocessing
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.cache_files import SUFFIX, read_cached, write_cached
from benchmarks.common import arguments, write_report
from benchmarks.loso_blend import (
    GRID,
    SOURCES,
    ZH,
    blind_pages,
    fold_tops,
    load_parts,
    log,
    objective,
    rule_key,
    rule_of,
    settings,
    without,
)
from bodyblocks.classify.blend import Blend
from bodyblocks.evaluation.evaluate import iter_selected, scored_text, select
from bodyblocks.metrics import accuracy, score_page
from bodyblocks.training.datasets import gold_convention

VETO = 0.1  # the learned parts' blend under which the vote lifts nothing
LINKS = 0.5  # link text share from which the vote lifts nothing (variant links)
KINDS = ("article", "other", "none")
GROUPS = {"same": (KINDS,), "article": (("article",), ("other", "none")),
          "kinds": (("article",), ("other",), ("none",))}
ARTICLE_TYPES = frozenset({"Article", "NewsArticle", "BlogPosting", "ReportageNews", "AnalysisNewsArticle",
                           "OpinionNewsArticle", "Report", "ScholarlyArticle", "TechArticle", "SocialMediaPosting",
                           "LiveBlogPosting"})
_OG = re.compile(r"<meta[^>]+(?:property|name)\s*=\s*[\"']og:type[\"'][^>]*>", re.IGNORECASE)
_CONTENT = re.compile(r"content\s*=\s*[\"']([^\"']*)", re.IGNORECASE)
_LD_TYPE = re.compile(r'"@type"\s*:\s*(\[[^\]]*\]|"[^"]*")')
_ITEMTYPE = re.compile(r"itemtype\s*=\s*[\"']([^\"']*)", re.IGNORECASE)
Row = dict[str, tuple[float, float] | None]
Scores = dict[tuple[float, ...], dict[str, tuple[np.ndarray, np.ndarray]]]  # setting -> fold -> (token F1, ratio)
Probs = Callable[[dict[str, Any], Blend], np.ndarray]  # a fold part's page and a setting's blend -> P(body)
_WORK: dict[str, Any] = {}  # the parts and the probabilities' variant, for the worker processes (fork)


def page_kind(html: str | bytes) -> str:
    """`article`, `other` or `none`, from a page's og:type, JSON-LD @type and microdata itemtype (module docstring)."""
    text = html.decode("utf-8", "replace") if isinstance(html, bytes) else html
    og = None
    if (tag := _OG.search(text)) is not None:
        og = (m.group(1).lower() if (m := _CONTENT.search(tag.group(0))) else "")
    types = [t for x in _LD_TYPE.findall(text) for t in re.findall(r'"([^"]+)"', x)]
    types += [t.rsplit("/", 1)[-1] for t in _ITEMTYPE.findall(text)]
    if (og and "article" in og) or any(t in ARTICLE_TYPES for t in types):
        return "article"
    return "other" if og or types else "none"


def fold_kinds(source: str) -> list[str]:
    """page_kind of each of the source's test pages, in fold_parts's order."""
    positions, _ = select(source, "test", None)
    return [page_kind(page.html or "") for page in iter_selected(source, positions)]


def blended(page: dict[str, Any], blend: Blend) -> np.ndarray:
    """P(body) of a page's parts under the blend, as loso_blend.page_decision has it."""
    return blend([page["model"]], [page["gbt"]], [page["vote"]])[0]


def vetoed(veto: float) -> Probs:
    """P(body) of a page's parts where the learned parts' own blend under `veto` is lower than the blend."""
    def probs(page: dict[str, Any], blend: Blend) -> np.ndarray:
        p = blended(page, blend)
        if not blend.vote:
            return p
        m, g = np.asarray(page["model"], np.float32), np.asarray(page["gbt"], np.float32)
        learned = (blend.model * m + blend.gbt * g) / (1 - blend.vote)
        return np.where(learned < veto, np.minimum(p, learned), p)
    return probs


def unlinked(limit: float) -> Probs:
    """P(body) of a page's parts where the vote counts only for blocks under `limit` link text."""
    def probs(page: dict[str, Any], blend: Blend) -> np.ndarray:
        links = np.fromiter((b.link_density for b in page["doc"].blocks), np.float32, len(page["vote"]))
        return blend([page["model"]], [page["gbt"]], [np.asarray(page["vote"], np.float32) * (links < limit)])[0]
    return probs


def page_scores(parts: dict[str, list[dict[str, Any]]], probs: Probs, chosen: list[tuple[float, ...]]) -> Scores:
    """Each page's token F1 and Levenshtein ratio (NaN: no gold) under each setting of `chosen`, its P(body) from
    `probs` (`blended`: the grid's own)."""
    out: Scores = {}
    memo: dict[tuple[str, int, str], tuple[float, float]] = {}
    for k, setting in enumerate(chosen):
        blend, rule = rule_of(setting)
        row = {}
        for source, pages in parts.items():
            convention = gold_convention(source)
            f1, ratio = np.full(len(pages), np.nan), np.full(len(pages), np.nan)
            for i, page in enumerate(pages):
                doc = page["doc"]
                if doc is None or not doc.blocks:
                    text = ""
                else:
                    p = probs(page, blend).astype(np.float32)
                    text = scored_text(rule.decide(doc, p, "ensemble"), convention)
                if (source, i, text) not in memo:
                    s = score_page(page["gold"], text)
                    memo[source, i, text] = ((s.token_f1, s.ratio if s.ratio is not None else np.nan) if s.has_gold
                                             else (np.nan, np.nan))
                f1[i], ratio[i] = memo[source, i, text]
            row[source] = (f1, ratio)
        out[setting] = row
        if k % 20 == 19:
            log(f"{k + 1} of {len(chosen)} settings")
    return out


def _part(chosen: list[tuple[float, ...]]) -> Scores:
    return page_scores(_WORK["parts"], _WORK["probs"], chosen)


def made_from(files: list[Path]) -> list[tuple[str, int, int]]:
    """What a cache made from `files` keys on: each file's resolved name, size and modification time."""
    return [(f.resolve().as_posix(), f.stat().st_size, f.stat().st_mtime_ns) for f in files]


def cached_scores(path: Path, parts: dict[str, list[dict[str, Any]]], probs: Probs, workers: int = 1,
                  blend: Path | None = None) -> Scores:
    """page_scores of every grid setting, cached in `path` under loso_blend's rule_key, the grid and the parts
    files of the loso_blend run `blend` (their names, sizes and times: parts made again are scored again);
    `workers` processes share the settings."""
    files = sorted((blend / "parts").glob(f"*{SUFFIX}")) if blend is not None else []
    key = {"rule": rule_key(), "grid": {k: list(v) for k, v in GRID.items()}, "parts": made_from(files)}
    if path.exists():
        cached = read_cached(path)
        if cached.get("key") == key:
            return cached["scores"]
    log(f"{path}: every page under every setting")
    every = settings()
    if workers > 1:
        _WORK.update(parts=parts, probs=probs)
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            scores = {s: row for part in pool.map(_part, [every[k::workers] for k in range(workers)])
                      for s, row in part.items()}
    else:
        scores = page_scores(parts, probs, every)
    write_cached(path, {"key": key, "scores": scores})
    return scores


def fold_keys(parts: dict[str, list[dict[str, Any]]]) -> dict[str, tuple[str, np.ndarray]]:
    """loso_blend's grid keys (each fold, each fold without each other fold's sites, daniel zh) as page indices."""
    keys = {f: (f, np.arange(len(parts[f]))) for f in parts}
    for (f, g), idx in blind_pages(parts).items():
        keys[without(f, g)] = (f, np.array(idx, dtype=np.intp))
    keys[ZH] = ("daniel", np.array([i for i, p in enumerate(parts["daniel"]) if p["lang"] == "zh"], dtype=np.intp))
    return keys


def split_grid(scores: Scores, kinds: dict[str, np.ndarray], groups: tuple[tuple[str, ...], ...],
               keys: dict[str, tuple[str, np.ndarray]]) -> dict[tuple[Any, ...], Row]:
    """(token F1, acc@0.9) on every key of every setting whose vote weight is one per group of page kinds:
    settings (w, t, o, c, (h per group)), from the pages' scores under the grid's one-weight settings."""
    sums: dict[tuple[float, ...], dict[str, list[tuple[int, float, float]]]] = {}
    for s, row in scores.items():
        sums[s] = {}
        for name, (source, idx) in keys.items():
            f1, ratio = row[source]
            cells = []
            for group in groups:
                sel = idx[np.isin(kinds[source][idx], group)]
                sel = sel[~np.isnan(f1[sel])]
                cells.append((len(sel), float(f1[sel].sum()), accuracy(ratio[sel].tolist(), 0.9) * len(sel)))
            sums[s][name] = cells
    out: dict[tuple[Any, ...], Row] = {}
    for w, t, o, c in sorted({(s[0], s[2], s[3], s[4]) for s in scores}):
        votes = [h for h in GRID["vote"] if (w, h, t, o, c) in scores]
        for hs in itertools.product(votes, repeat=len(groups)):
            row: Row = {}
            for name in keys:
                cells = [sums[(w, h, t, o, c)][name][g] for g, h in enumerate(hs)]
                n = sum(x[0] for x in cells)
                row[name] = (sum(x[1] for x in cells) / n, sum(x[2] for x in cells) / n) if n else None
            out[(w, t, o, c, hs)] = row
    return out


def choose(grid: dict[tuple[Any, ...], Row], names: list[str]) -> tuple[Any, ...]:
    """The setting with the best OBJECTIVE over `names`, among those with the vote somewhere."""
    candidates = [s for s in grid if any(h > 0 for h in s[4])]
    tops = fold_tops(grid, candidates, names)  # type: ignore[arg-type]
    return max(candidates, key=lambda s: objective(grid[s], names, tops))


def nested(grid: dict[tuple[Any, ...], Row]) -> dict[str, tuple[Any, ...]]:
    """loso_blend.nested_choice on a split grid."""
    chosen = {f: choose(grid, [without(g, f) for g in SOURCES if g != f]) for f in SOURCES}
    return {**chosen, ZH: chosen["daniel"]}


def fmt_pair(pair: tuple[float, float] | None, digits: int = 3) -> str:
    return "-" if pair is None else f"{pair[0]:.{digits}f} / {pair[1]:.{digits}f}"


def mean_pair(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    return float(np.mean([p[0] for p in pairs])), float(np.mean([p[1] for p in pairs]))


def report(results: dict[str, dict[tuple[Any, ...], Row]], kinds: dict[str, np.ndarray]) -> str:
    counts = " ".join(f"{f} {'/'.join(str(int(np.sum(kinds[f] == k))) for k in KINDS)};" for f in SOURCES)
    lines = ["Written by benchmarks/vote_split.py (its docstring says how). Token F1 / acc@0.9 on each source's test "
             "pages, each fold's setting chosen on the other folds (nested, as loso_blend). Page kinds "
             f"(article/other/none) per fold: {counts.rstrip(';')}.", "",
             "| variant | " + " | ".join(SOURCES) + f" | {ZH} | mean |", "|---|" + "---|" * (len(SOURCES) + 2)]
    extra = []
    for name, grid in results.items():
        chosen = nested(grid)
        folds = [grid[chosen[f]][f] for f in SOURCES]
        lines.append(f"| {name} | " + " | ".join(fmt_pair(x) for x in folds) + f" | {fmt_pair(grid[chosen[ZH]][ZH])} | "
                     f"**{fmt_pair(mean_pair(folds), 4)}** |")  # type: ignore[arg-type]
        everywhere = choose(grid, list(SOURCES))
        oracle = [max((grid[s][f] for s in grid), key=sum) for f in SOURCES]  # type: ignore[arg-type]
        overall = mean_pair([grid[everywhere][f] for f in SOURCES])  # type: ignore[misc]
        extra.append(f"- {name}: the best over all folds {everywhere}, mean {fmt_pair(overall)}; each fold's own best "
                     f"(an oracle), mean {fmt_pair(mean_pair(oracle))}; nested settings: "
                     + ", ".join(f"{f} {chosen[f]}" for f in SOURCES))
    lines += ["", "Settings are (model weight, threshold, outer threshold, core, (vote weight per group)); the groups "
              "are " + "; ".join(f"{k}: {' | '.join('+'.join(g) for g in v)}" for k, v in GROUPS.items()) + ".", "",
              *extra]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = arguments(__doc__, out="runs/vote-split", write=True)
    ap.add_argument("--blend", type=Path, default=Path("runs/loso-blend"), help="a loso_blend run (its parts/)")
    ap.add_argument("--models", type=Path, default=Path("runs/loso-recipe"), help="fold folders holding model/ "
                    "(only where --blend lacks a fold's parts)")
    ap.add_argument("--trees", type=Path, default=Path("runs/loso-vocab"), help="fold folders holding gbt/")
    ap.add_argument("--veto", type=float, default=VETO, help=f"the veto variant's threshold (default {VETO})")
    ap.add_argument("--workers", type=int, default=1, help="processes scoring the settings (default 1)")
    args = ap.parse_args()
    parts = load_parts(args.blend, args.models, args.trees)
    kinds = {f: np.array(fold_kinds(f)) for f in SOURCES}
    for f in SOURCES:
        assert len(kinds[f]) == len(parts[f]), f"{f}: the parts hold other pages than its test split"
    keys = fold_keys(parts)
    args.out.mkdir(parents=True, exist_ok=True)
    plain = cached_scores(args.out / f"pages-blend{SUFFIX}", parts, blended, args.workers, args.blend)
    veto = cached_scores(args.out / f"pages-veto{args.veto:g}{SUFFIX}", parts, vetoed(args.veto), args.workers,
                         args.blend)
    results = {name: split_grid(plain, kinds, groups, keys) for name, groups in GROUPS.items()}
    results[f"veto {args.veto:g}"] = split_grid(veto, kinds, GROUPS["same"], keys)
    links = cached_scores(args.out / f"pages-links{LINKS:g}{SUFFIX}", parts, unlinked(LINKS), args.workers, args.blend)
    results[f"links {LINKS:g}"] = split_grid(links, kinds, GROUPS["same"], keys)
    text = report(results, kinds)
    print(text)
    write_report(args.write, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
