"""Page-relative and container features of blocks: what a block looks like against its own page.

Site-specific inputs (class names, tag-path words) and absolute sizes describe the sites a classifier was
trained on; how a block compares with the rest of its page transfers to sites it has never seen
(leave-one-source-out: the `gbt.context` row of docs/GENERALIZATION.md's ablation table). Two groups, NumPy
only, from the segmenter's blocks alone (no second parse):

  1. page-relative: the block's length against the page's longest block and its rank among the page's
     blocks, its link and punctuation density against the page's character-weighted mean, its distance in
     blocks from the page's longest block, and the mean length and link density of the blocks around it;
  2. containers (readability's idea, as inputs): for the block's ancestors 1..CONTAINER_LEVELS up (by its
     xpath), the share of the page's clean text (characters outside links) that the ancestor holds and the
     ancestor's link density; and whether the block sits inside the page's main container, the element
     with the most clean text weighted by its purity (clean / all characters).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bodyblocks.types import Block

CONTAINER_LEVELS = 4  # ancestors described per block: parent, grandparent, ...
WINDOW = 3  # blocks either side in the windowed means

CONTEXT_NAMES: tuple[str, ...] = (
    "len_vs_max",  # characters / the page's longest block
    "len_rank",  # rank of the block's length among the page's blocks (1: the longest)
    "link_vs_page",  # link density - the page's character-weighted link density
    "punct_vs_page",  # punctuation density - the page's character-weighted punctuation density
    "dist_longest",  # |index - index of the longest block| / blocks
    "win_log_len",  # mean log1p(characters) / 8 of the blocks within WINDOW either side
    "win_link",  # character-weighted link density of the blocks within WINDOW either side
    *(f"up{k}_clean_share" for k in range(1, CONTAINER_LEVELS + 1)),  # ancestor's share of the page's clean text
    *(f"up{k}_link" for k in range(1, CONTAINER_LEVELS + 1)),  # ancestor's link density
    "in_main",  # inside the page's main container
    "main_share",  # the main container's share of the page's clean text
)


def _parent(xpath: str) -> str:
    """The xpath of an element's parent ("" for the root, /html[1], and above)."""
    cut = xpath.rfind("/")
    return xpath[:cut] if cut > 0 else ""


def element_sums(xpaths: Sequence[str], values: np.ndarray) -> tuple[dict[str, int], np.ndarray]:
    """What each element holds: per element (xpath) that is a proper ancestor of one of the blocks, the sums of
    the blocks' `values` (n, k) over the blocks strictly inside it.

    Returns ({xpath: row}, sums (elements, k)); rows are in the order of each element's first block (an
    element before its ancestors). Every element is summed into its parent once, deepest first, rather than
    every block into every ancestor.
    """
    rows: dict[str, int] = {}
    parents: list[int] = []  # row -> its parent's row (-1: none among the rows)
    owner = np.full(len(xpaths), -1, dtype=np.intp)  # block -> its parent element's row
    for i, xpath in enumerate(xpaths):
        parent = _parent(xpath)
        if not parent:
            continue
        row = rows.get(parent)
        if row is None:
            row = rows[parent] = len(parents)
            parents.append(-1)
            child, up = row, _parent(parent)
            while up:  # the element's ancestors not seen yet, each once
                known = rows.get(up)
                if known is not None:
                    parents[child] = known
                    break
                parents[child] = rows[up] = len(parents)
                parents.append(-1)
                child, up = parents[child], _parent(up)
        owner[i] = row
    inside = owner >= 0
    depth = [x.count("/") for x in rows]
    order = sorted(range(len(parents)), key=lambda r: -depth[r])  # deepest first; stable: first seen first
    columns = []
    for k in range(values.shape[1]):  # per column in Python floats: a few hundred adds, no array per element
        col = np.bincount(owner[inside], weights=values[inside, k], minlength=len(parents)).tolist()
        for row in order:
            if parents[row] >= 0:
                col[parents[row]] += col[row]
        columns.append(col)
    sums = np.array(columns, dtype=np.float64).T.reshape(len(parents), values.shape[1])
    return rows, sums


def context_features(blocks: Sequence[Block]) -> np.ndarray:
    """CONTEXT_NAMES for each block of one page, in page order: float32 array (n, len(CONTEXT_NAMES))."""
    n = len(blocks)
    out = np.zeros((n, len(CONTEXT_NAMES)), dtype=np.float32)
    if n == 0:
        return out
    col = {name: i for i, name in enumerate(CONTEXT_NAMES)}
    chars = np.array([b.text_len for b in blocks], dtype=np.float64)
    links = np.minimum(np.array([b.link_len for b in blocks], dtype=np.float64), chars)
    punct = np.array([b.punct_count for b in blocks], dtype=np.float64)
    clean = chars - links
    total, total_clean = max(chars.sum(), 1.0), max(clean.sum(), 1.0)
    density = links / np.maximum(chars, 1)
    longest = int(np.argmax(chars))
    out[:, col["len_vs_max"]] = chars / max(chars[longest], 1.0)
    order = np.argsort(-chars, kind="stable")
    rank = np.empty(n)
    rank[order] = np.arange(1, n + 1)
    out[:, col["len_rank"]] = np.log1p(rank) / 8
    out[:, col["link_vs_page"]] = density - links.sum() / total
    out[:, col["punct_vs_page"]] = np.clip(punct / np.maximum(chars, 1) - punct.sum() / total, -1, 1)
    out[:, col["dist_longest"]] = np.abs(np.arange(n) - longest) / n
    # windowed sums by prefix sums
    k = WINDOW
    lo, hi = np.maximum(np.arange(n) - k, 0), np.minimum(np.arange(n) + k + 1, n)

    def window_sum(v: np.ndarray) -> np.ndarray:
        c = np.concatenate(([0.0], np.cumsum(v)))
        return c[hi] - c[lo]

    out[:, col["win_log_len"]] = window_sum(np.log1p(chars) / 8) / (hi - lo)
    out[:, col["win_link"]] = window_sum(links) / np.maximum(window_sum(chars), 1)
    # containers: the characters and link characters each element holds
    rows, held = element_sums([b.xpath for b in blocks], np.stack((chars, links), axis=1))
    none = np.array([[total, links.sum()]])  # past the root: the whole page
    table = np.concatenate((held, none))
    level = [b.xpath for b in blocks]
    for k_up in range(1, CONTAINER_LEVELS + 1):
        level = [_parent(x) for x in level]
        sums = table[[rows.get(x, -1) if x else -1 for x in level]]
        out[:, col[f"up{k_up}_clean_share"]] = (sums[:, 0] - sums[:, 1]) / total_clean
        out[:, col[f"up{k_up}_link"]] = sums[:, 1] / np.maximum(sums[:, 0], 1.0)
    if rows:
        purity = (held[:, 0] - held[:, 1]) ** 2 / np.maximum(held[:, 0], 1.0)
        names = list(rows)
        best = np.flatnonzero(purity == purity.max())
        main = max((names[i] for i in best), key=lambda x: x.count("/"))  # ties: the deepest
        prefix = main + "/"
        out[:, col["in_main"]] = [b.xpath.startswith(prefix) for b in blocks]
        out[:, col["main_share"]] = (held[rows[main], 0] - held[rows[main], 1]) / total_clean
    return out
