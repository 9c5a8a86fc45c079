"""Gold text -> block labels: align the page's text with the reference text, token by token, in order.

Method (`align_blocks`):
  1. tokenise every block and the gold text the same way: NFKC, lower case, one token per CJK character,
     one per run of other letters or digits; punctuation and white space are dropped, so typography,
     entity and `?`-artifact differences (L3S) do not matter;
  2. anchor first: a block whose tokens equal a gold line's, both occurring once on their side (and at
     least MIN_ANCHOR_CHARS long), is matched whole when a plain alignment agrees with its place (the
     gold just before the line matched before the block, the gold just after it after the block); the
     longest chain of anchors in order on both sides is kept. Between anchors, the page's tokens (all
     blocks, in document order) are aligned with the gold tokens by a Levenshtein alignment (rapidfuzz
     opcodes). Anchors settle the ties a plain alignment leaves open (the title's words also in a
     related-article link before the article); the alignment is monotonic, so a phrase that the sidebar
     repeats is not matched there while the gold lines around it match the article: matched tokens keep
     their order on both sides;
  3. each block's score is the share of its characters (summed token lengths) matched to gold tokens;
  4. partial-block rule: a block is body when its score is at least BODY_THRESHOLD (0.5). At 0.5 this is
     exactly the choice that lowers the edit distance of the block-level oracle to the gold: keeping a
     block adds its unmatched characters, dropping it loses its matched ones.
For L3S-GN1 (`align_annotated`), the reference is the annotated copy's whole text with a class per token
(the outermost body span 1 headline / 2 full text / 3 supplemental when there is one, as the gold takes
those spans whole; else the innermost span), aligned with the page's tokens as one sequence: a block's
score is the share of its characters matched to body-class tokens, and non-body text that repeats body
text (a related-links copy of the headline) is placed exactly.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from rapidfuzz.distance import Levenshtein

from bodyblocks.types import Block, Page

LABELS_VERSION = "2"  # bump when labels change: dataset caches key on it
BODY_THRESHOLD = 0.5  # share of a block's characters aligned to body text; see the module docstring
MIN_ANCHOR_CHARS = 4  # shorter block = gold line identities are too common to fix the alignment on
L3S_BODY_CLASSES = frozenset({1, 2, 3})  # headline, full text, supplemental
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002ffff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
_L3S_CLASS = re.compile(r"x-nc-sel(\d)")
_SKIP_TEXT = frozenset({"script", "style", "noscript", "template", "head", "title"})


@dataclass
class Alignment:
    """Per-block labels and match scores of one page."""

    labels: list[int]  # 1 body, 0 not body, aligned with the blocks
    scores: list[float]  # share of each block's characters aligned to body text, in [0, 1]
    gold_coverage: float  # share of the reference body characters matched to some block
    method: str  # "gold" (gold text), "annotated" (L3S spans) or "none" (no reference)


def tokenize(text: str) -> list[str]:
    """Alignment tokens: NFKC, lower case, CJK characters one by one, other letter/digit runs whole.

    Runs are also cut where a lower-case letter meets an upper-case one and where letters meet digits:
    gold texts that glued link texts together ("одиночествеЦИК", "2012Сколько") still match the page.
    """
    out: list[str] = []
    for tok in _TOKEN.findall(unicodedata.normalize("NFKC", text)):
        if tok.islower() or tok.isdigit() or (tok.isupper() and tok.isalpha()):
            out.append(tok.lower())
        else:
            out.extend(t.lower() for t in _split_glued(tok))
    return out


def _split_glued(tok: str) -> list[str]:
    """Cut a token at lower->upper case changes and letter<->digit changes."""
    parts: list[str] = []
    start = 0
    for k in range(1, len(tok)):
        a, b = tok[k - 1], tok[k]
        if (a.islower() and b.isupper()) or (a.isdigit() != b.isdigit()):
            parts.append(tok[start:k])
            start = k
    parts.append(tok[start:])
    return parts


def _page_tokens(blocks: Sequence[Block]) -> tuple[list[str], list[int]]:
    """All blocks' tokens in order, and the block index that owns each token."""
    toks: list[str] = []
    owner: list[int] = []
    for i, block in enumerate(blocks):
        t = tokenize(block.text)
        toks.extend(t)
        owner.extend([i] * len(t))
    return toks, owner


class _Vocab:
    """Maps each distinct token to one character, so token sequences become strings (rapidfuzz's fast path)."""

    def __init__(self) -> None:
        self.codes: dict[str, str] = {}

    def encode(self, tokens: Sequence[str]) -> str:
        out = []
        for tok in tokens:
            code = self.codes.get(tok)
            if code is None:
                n = len(self.codes) + 0x100
                code = self.codes[tok] = chr(n + 0x800 if n >= 0xD800 else n)  # skip the surrogate range
            out.append(code)
        return "".join(out)


def _matched_pairs(src: str, ref: str, s0: int = 0, r0: int = 0) -> list[tuple[int, int]]:
    """(source index, reference index) of the tokens a Levenshtein alignment keeps as equal (offset by s0, r0)."""
    if not src or not ref:
        return []
    pairs: list[tuple[int, int]] = []
    for op in Levenshtein.opcodes(src, ref):
        if op.tag == "equal":
            pairs.extend(zip(range(s0 + op.src_start, s0 + op.src_end),
                             range(r0 + op.dest_start, r0 + op.dest_end), strict=True))
    return pairs


def _increasing_chain(cands: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Longest chain of (line, block) pairs increasing in both (cands sorted by line; blocks distinct)."""
    import bisect

    tails: list[int] = []  # block index ending the best chain of each length
    tail_at: list[int] = []  # position in cands of that chain end
    prev = [-1] * len(cands)
    for k, (_, b) in enumerate(cands):
        n = bisect.bisect_left(tails, b)
        if n == len(tails):
            tails.append(b)
            tail_at.append(k)
        else:
            tails[n], tail_at[n] = b, k
        prev[k] = tail_at[n - 1] if n else -1
    chain, k = [], tail_at[-1] if tail_at else -1
    while k >= 0:
        chain.append(cands[k])
        k = prev[k]
    return chain[::-1]


def _anchors(block_keys: list[str], block_chars: list[int], line_keys: list[str]) -> list[tuple[int, int]]:
    """(line, block) pairs whose token strings are equal and occur once on each side, sorted by line."""
    blocks: dict[str, list[int]] = {}
    for i, key in enumerate(block_keys):
        if key:
            blocks.setdefault(key, []).append(i)
    lines: dict[str, list[int]] = {}
    for j, key in enumerate(line_keys):
        if key:
            lines.setdefault(key, []).append(j)
    return sorted((js[0], blocks[k][0]) for k, js in lines.items()
                  if len(js) == 1 and len(blocks.get(k, ())) == 1 and block_chars[blocks[k][0]] >= MIN_ANCHOR_CHARS)


def _consistent(anchors: list[tuple[int, int]], plain: list[tuple[int, int]], bstart: list[int],
                lstart: list[int]) -> list[tuple[int, int]]:
    """Anchors that agree with the plain alignment around them: the gold tokens matched just before the
    line sit before the block, those just after it sit after (a unique title-like line that the gold
    holds far from where the page has it would otherwise pull the whole alignment apart)."""
    import bisect

    gpos = [g for _, g in plain]  # increasing
    keep = []
    for j, i in anchors:
        k = bisect.bisect_left(gpos, lstart[j])
        before_ok = k == 0 or plain[k - 1][0] < bstart[i + 1]
        m = bisect.bisect_left(gpos, lstart[j + 1])
        after_ok = m == len(plain) or plain[m][0] >= bstart[i]
        if before_ok and after_ok:
            keep.append((j, i))
    return keep


def _anchored_pairs(block_toks: list[list[str]], line_toks: list[list[str]]) -> list[int]:
    """Source positions matched to gold tokens: anchors first, Levenshtein alignment between them."""
    vocab = _Vocab()
    bkeys = [vocab.encode(t) for t in block_toks]
    lkeys = [vocab.encode(t) for t in line_toks]
    src, ref = "".join(bkeys), "".join(lkeys)
    bstart = list(accumulate(map(len, bkeys), initial=0))
    lstart = list(accumulate(map(len, lkeys), initial=0))
    plain = _matched_pairs(src, ref)
    anchors = _anchors(bkeys, [sum(map(len, t)) for t in block_toks], lkeys)
    chain = _increasing_chain(_consistent(anchors, plain, bstart, lstart))
    if not chain:
        return [k for k, _ in plain]
    matched: list[int] = []
    s, r = 0, 0
    for j, i in chain:
        matched += [k for k, _ in _matched_pairs(src[s : bstart[i]], ref[r : lstart[j]], s, r)]
        matched += range(bstart[i], bstart[i + 1])
        s, r = bstart[i + 1], lstart[j + 1]
    matched += [k for k, _ in _matched_pairs(src[s:], ref[r:], s, r)]
    return matched


def _finish(blocks: Sequence[Block], src: list[str], owner: list[int], body_src: list[int],
            ref_body_chars: int, threshold: float, method: str) -> Alignment:
    """Scores and labels from the source tokens that matched body tokens."""
    total = [0] * len(blocks)
    for tok, i in zip(src, owner, strict=True):
        total[i] += len(tok)
    matched = [0] * len(blocks)
    for k in body_src:
        matched[owner[k]] += len(src[k])
    scores = [m / t if t else 0.0 for m, t in zip(matched, total, strict=True)]
    labels = [int(t > 0 and s >= threshold) for s, t in zip(scores, total, strict=True)]
    coverage = sum(matched) / ref_body_chars if ref_body_chars else 1.0
    return Alignment(labels, scores, min(coverage, 1.0), method)


def align_blocks(blocks: Sequence[Block], gold: str, threshold: float = BODY_THRESHOLD) -> Alignment:
    """Label blocks body/non-body by aligning them, in order, with the gold text."""
    block_toks = [tokenize(b.text) for b in blocks]
    line_toks = [tokenize(line) for line in gold.splitlines()]
    src = [t for toks in block_toks for t in toks]
    owner = [i for i, toks in enumerate(block_toks) for _ in toks]
    body = _anchored_pairs(block_toks, line_toks)
    ref_chars = sum(len(t) for toks in line_toks for t in toks)
    return _finish(blocks, src, owner, body, ref_chars, threshold, "gold")


def annotated_tokens(labels_html: bytes | str, innermost: bool = False) -> tuple[list[str], list[int]]:
    """Tokens of an L3S annotated copy, each with its x-nc-sel class (-1: outside every span): the outermost body
    span's (the gold's reading), or with `innermost` the nearest span's (a caption's 3 inside a text span's 2)."""
    import lxml.html
    from lxml import etree

    root = lxml.html.document_fromstring(labels_html, parser=lxml.html.HTMLParser(huge_tree=True))
    toks: list[str] = []
    classes: list[int] = []
    state: dict[object, tuple[int, bool]] = {}  # element -> (label, text hidden)

    def emit(text: str | None, label: int, hidden: bool) -> None:
        if text and not hidden:
            t = tokenize(text)
            toks.extend(t)
            classes.extend([label] * len(t))

    for event, el in etree.iterwalk(root, events=("start", "end")):
        parent = el.getparent()
        p_label, p_hidden = state.get(parent, (-1, False)) if parent is not None else (-1, False)
        if event == "start":
            tag = el.tag.lower() if isinstance(el.tag, str) else ""
            m = _L3S_CLASS.search(el.get("class", "")) if tag == "span" else None
            own = int(m.group(1)) if m else -1
            # the outermost body span decides (the gold is the outermost 1/2/3 spans, whole); x-nc-sel0
            # spans wrap whole tables around body spans, so below a non-body span the innermost one wins
            label = p_label if own < 0 or (p_label in L3S_BODY_CLASSES and not innermost) else own
            hidden = p_hidden or tag in _SKIP_TEXT or not tag
            state[el] = (label, hidden)
            emit(el.text, label, hidden)
        else:
            emit(el.tail, p_label, p_hidden)
    return toks, classes


def align_annotated(blocks: Sequence[Block], labels_html: bytes | str,
                    threshold: float = BODY_THRESHOLD) -> Alignment:
    """Label blocks from an L3S annotated copy: body where the matched span text is headline/text/supplemental."""
    src, owner = _page_tokens(blocks)
    ref, classes = annotated_tokens(labels_html)
    vocab = _Vocab()
    pairs = _matched_pairs(vocab.encode(src), vocab.encode(ref))
    body_src = [k for k, j in pairs if classes[j] in L3S_BODY_CLASSES]
    ref_body = sum(len(t) for t, c in zip(ref, classes, strict=True) if c in L3S_BODY_CLASSES)
    return _finish(blocks, src, owner, body_src, ref_body, threshold, "annotated")


def annotated_classes(blocks: Sequence[Block], labels_html: bytes | str) -> list[int]:
    """Each block's L3S class from the annotated copy: of its characters matched to the copy's text, the innermost
    span class that holds the most (-1: none matched, or outside every span)."""
    src, owner = _page_tokens(blocks)
    ref, classes = annotated_tokens(labels_html, innermost=True)
    vocab = _Vocab()
    held: list[dict[int, int]] = [{} for _ in blocks]
    for k, j in _matched_pairs(vocab.encode(src), vocab.encode(ref)):
        counts = held[owner[k]]
        counts[classes[j]] = counts.get(classes[j], 0) + len(src[k])
    return [max(c, key=lambda x: (c[x], x)) if c else -1 for c in held]


def label_page(page: Page, blocks: Sequence[Block], threshold: float = BODY_THRESHOLD) -> Alignment:
    """Labels for a page's blocks from its best reference: people's block labels (bodyblocks annotate), the
    L3S annotated copy, else the gold text."""
    if page.block_labels is not None:
        return align_labelled(blocks, page.block_labels)
    if page.labels_html:
        return align_annotated(blocks, page.labels_html, threshold)
    if page.gold is not None:
        return align_blocks(blocks, page.gold, threshold)
    return Alignment([0] * len(blocks), [0.0] * len(blocks), 0.0, "none")


def align_labelled(blocks: Sequence[Block], annotation: Any) -> Alignment:
    """Labels from an annotation of the blocks (training/annotations.py), method "blocks", when every block
    still has its label (by key and text, or by its text alone when it moved); else method "none", so that
    training leaves the page out rather than learn from labels on the wrong blocks. gold_coverage is the
    share of blocks that fit."""
    from bodyblocks.training.annotations import apply_labels

    labels, check = apply_labels(blocks, annotation)
    fit = 1.0 - (check.changed + check.missing) / max(1, len(blocks))
    return Alignment(labels, [float(y) for y in labels], fit, "blocks" if check.exact else "none")


def oracle_text(blocks: Sequence[Block], labels: Sequence[int]) -> str:
    """The text of the body-labelled blocks, one block per line group: the best a block classifier can do."""
    return "\n".join(b.text for b, y in zip(blocks, labels, strict=True) if y)
