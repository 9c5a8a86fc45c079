"""What benchmarks.rechoose searches: the decision rule's numeric constants (its grids) and its cue lists (their cues).

    with patched({"roles.BYLINE_CHARS": 150}):       # a module constant, wherever it was imported by value
        rule.decide(doc, probs, "ensemble")
    rule_with(rule, "threshold", 0.5)                 # a setting of the shipped config's rule
    cues_of("SIDEBAR")                                # a cue list's cues: [Cue(list, text, pattern), ...]

A constant read at segmentation (prominence's TITLE_CHARS, role_cues.DESCRIPTION_NAMES) is not here: the cached
pages were segmented with it. The lru-cached readers of tag paths (roles, kinds) are cleared on every change.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bodyblocks.extraction import decision, headline, kinds, prominence, role_cues, roles
from bodyblocks.extraction.decision import DecisionRule

MODULES = {"decision": decision, "roles": roles, "kinds": kinds, "headline": headline, "prominence": prominence,
           "role_cues": role_cues}
OFF = "off"  # a grid's value that turns the rule setting's step off (rescue None, container None, no core)


@dataclass(frozen=True)
class Knob:
    """One numeric constant: `rule.FIELD` (the shipped config's rule), `rule.container[i]`, or `MODULE.NAME`
    (`MODULE.NAME[i]`: an item of a tuple constant); its grid around today's value."""

    name: str
    grid: tuple[Any, ...]
    integer: bool = False


def scaled(today: float, factors: Sequence[float] = (0.5, 0.75, 1.5, 2.0), integer: bool = False) -> tuple[Any, ...]:
    """Today's value times each factor (rounded for a count; today's value and repeats left out)."""
    values = [round(today * f) if integer else round(today * f, 4) for f in factors]
    return tuple(dict.fromkeys(v for v in values if v != today and v >= 0))


def shifted(today: float, steps: Sequence[float], low: float = 0.0, high: float = 1.0) -> tuple[float, ...]:
    """Today's value plus each step, within [low, high] (today's value and repeats left out)."""
    values = [round(min(high, max(low, today + s)), 4) for s in steps]
    return tuple(dict.fromkeys(v for v in values if v != today))


def current(name: str, rule: DecisionRule) -> Any:
    """A knob's value today: of the rule, or of its module."""
    base, index = _split(name)
    if base.startswith("rule."):
        value = getattr(rule, base[5:])
    else:
        module, attr = base.split(".")
        value = getattr(MODULES[module], attr)
    return value[index] if index is not None and value is not None else value


def _split(name: str) -> tuple[str, int | None]:
    m = re.fullmatch(r"(.+)\[(\d+)\]", name)
    return (m.group(1), int(m.group(2))) if m else (name, None)


def rule_with(rule: DecisionRule, name: str, value: Any) -> DecisionRule:
    """`rule` with one of its settings changed (`rule.container[3]`: the core; OFF: that step off)."""
    base, index = _split(name)
    field = base[5:]
    if field == "container":
        box = list(rule.container or ())
        if value == OFF:
            return dataclasses.replace(rule, container=None if index is None or index < 3 else tuple(box[:3]))
        assert index is not None
        box[index] = value
        return dataclasses.replace(rule, container=tuple(box))
    return dataclasses.replace(rule, **{field: None if value == OFF else value})


def clear_caches() -> None:
    for module in MODULES.values():
        for obj in vars(module).values():
            if callable(getattr(obj, "cache_clear", None)):
                obj.cache_clear()


# the names read inside the lru-cached readers of tag paths: a change of one clears their caches
CACHED = ("role_cues.", "kinds.REPEAT_KEY", "roles.COMMENT_CHARS", "roles.ARTICLE_BEFORE_COMMENTS")


@contextlib.contextmanager
def patched(values: Mapping[str, Any]) -> Iterator[None]:
    """While inside: the module constants named (`MODULE.NAME`, `MODULE.NAME[i]`) set to these values, in their
    module and in every bodyblocks module that imported the same object by name."""
    undo: list[tuple[Any, str, Any]] = []
    clear = any(name.startswith(CACHED) for name in values)
    try:
        for name, value in values.items():
            base, index = _split(name)
            module, attr = base.split(".")
            old = getattr(MODULES[module], attr)
            new = value
            if index is not None:
                items = list(old)
                items[index] = value
                new = type(old)(items)
            for mod in list(sys.modules.values()):
                if getattr(mod, "__name__", "").startswith("bodyblocks") and getattr(mod, attr, None) is old:
                    undo.append((mod, attr, old))
                    setattr(mod, attr, new)
        if clear:
            clear_caches()
        yield
    finally:
        for mod, attr, old in reversed(undo):
            setattr(mod, attr, old)
        if clear:
            clear_caches()


def knobs(rule: DecisionRule) -> list[Knob]:
    """Every numeric constant the replay can change, each with its grid (chosen before any result was read):
    probabilities and shares ±0.05, ±0.1 (and the step off where it has one); character counts and windows ×0.5,
    ×0.75, ×1.5, ×2; rapidfuzz ratios (0-100) ±5, ±10."""
    prob = (-0.1, -0.05, 0.05, 0.1)
    out: list[Knob] = [Knob("rule.threshold", shifted(rule.threshold, prob))]
    if rule.rescue is not None:
        out.append(Knob("rule.rescue", (*shifted(rule.rescue, prob), OFF)))
    if rule.container is not None:
        for i, _ in enumerate(rule.container):
            out.append(Knob(f"rule.container[{i}]", (*shifted(rule.container[i], prob), *((OFF,) if i in (0, 3)
                                                                                         else ()))))
    for name in ("decision.SECTION_HEARD", "decision.BEFORE_HEADLINE", "decision.CAPTION_SHARE",
                 "decision.KEY_POINTS_SHARE", "decision.SIDEBAR_SHARE", "roles.STANDFIRST_LINKS", "kinds.POST_LINKS",
                 "kinds.POST_DISTINCT", "kinds.POST_PROB", "kinds.POST_SHARE"):
        out.append(Knob(name, shifted(current(name, rule), prob)))
    for name in ("roles.BYLINE_CHARS", "roles.BYLINE_WINDOW", "roles.PROMO_CHARS", "roles.CAPTION_CHARS",
                 "roles.FIGURE_CHARS", "roles.BUTTON_CHARS", "roles.STANDFIRST_CHARS[0]", "roles.STANDFIRST_CHARS[1]",
                 "roles.STANDFIRST_BODY", "roles.KEY_POINTS_LABEL", "roles.KEY_POINT_CHARS", "roles.COMMENT_CHARS",
                 "roles.COMMENT_HEADING_CHARS", "roles.ARTICLE_BEFORE_COMMENTS", "kinds.MIN_ARTICLE",
                 "kinds.POST_CHARS", "kinds.REPEAT_KEY", "kinds.MIN_POSTS", "kinds.REPEAT_KEPT", "kinds.ERROR_CHARS",
                 "kinds.OTHER_CHARS", "prominence.HEADLINE_WINDOW"):
        out.append(Knob(name, scaled(current(name, rule), integer=True), integer=True))
    for name in ("roles.DESCRIPTION_MATCH", "headline.HEADLINE_SIMILARITY"):
        out.append(Knob(name, shifted(current(name, rule), (-10, -5, 5, 10), 0.0, 100.0)))
    return out


# ----------------------------------------------------------------------------------------------------- cue lists
NEVER = re.compile(r"(?!)")  # a cue list turned off: matches nothing


@dataclass(frozen=True)
class Cue:
    """One cue of a list: an alternative of its regular expression (`pattern`: the expression with that
    alternative alone, to count where it fires), or an item of a set of words (`pattern` None)."""

    list: str
    text: str
    pattern: re.Pattern[str] | None = None


def _scan(source: str) -> tuple[list[int], list[tuple[int, int]]]:
    """The top-level `|` of `source`, and its outermost groups as (start of the content, the closing parenthesis)."""
    pipes: list[int] = []
    groups: list[tuple[int, int]] = []
    depth, opened, in_class, escaped = 0, 0, False, False
    for i, ch in enumerate(source):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            if depth == 0:
                m = re.match(r"\(\?(?:[:=!]|<[=!])?", source[i:])
                opened = i + (len(m.group(0)) if m else 1)
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                groups.append((opened, i))
        elif ch == "|" and depth == 0:
            pipes.append(i)
    return pipes, groups


def _alternatives(source: str) -> tuple[str, list[str], str]:
    """(prefix, alternatives, suffix) of the first level of `source` that has alternatives: the top level, else
    the group (depth first) with the most alternatives of its own; one alternative when none has."""
    pipes, groups = _scan(source)
    if pipes:
        bounds = [-1, *pipes, len(source)]
        return "", [source[a + 1:b] for a, b in zip(bounds, bounds[1:], strict=False)], ""
    best: tuple[str, list[str], str] = ("", [source], "")
    for start, end in groups:  # the group with the most alternatives (AD_CLASS: its words, not its anchors)
        prefix, alts, suffix = _alternatives(source[start:end])
        if len(alts) > len(best[1]):
            best = (source[:start] + prefix, alts, suffix + source[end:])
    return best


def cues_of(name: str) -> list[Cue]:
    """The cues of role_cues' list NAME."""
    value = getattr(role_cues, name)
    if isinstance(value, re.Pattern):
        prefix, alts, suffix = _alternatives(value.pattern)
        return [Cue(name, alt, re.compile(prefix + alt + suffix if prefix or suffix else alt, value.flags))
                for alt in alts]
    return [Cue(name, str(item)) for item in sorted(value)]


def without(value: Any, texts: Sequence[str]) -> Any:
    """A cue list's value less the cues `texts` (a regular expression rebuilt with the same flags; a set or tuple
    less the items); a regular expression with none left matches nothing."""
    if isinstance(value, re.Pattern):
        prefix, alts, suffix = _alternatives(value.pattern)
        rest = [a for a in alts if a not in texts]
        return re.compile(prefix + "|".join(rest) + suffix, value.flags) if rest else NEVER
    return type(value)(v for v in value if str(v) not in texts)


def list_off(name: str) -> Any:
    """Cue list NAME turned off: a regular expression matching nothing, an empty set or tuple."""
    value = getattr(role_cues, name)
    return NEVER if isinstance(value, re.Pattern) else type(value)()


# the lists read while deciding (DESCRIPTION_NAMES is read at segmentation; MONTH is a part of DATE)
CUE_LISTS = ("DATE", "AUTHOR", "BYLINE_CLASS", "PROMO_TEXT", "AD_CLASS", "COMMENT_TOKEN", "COMMENT_CONTAINER",
             "SIDEBAR", "DEK_WORDS", "DEK_INSIDE", "NOT_DEK", "NOT_DEK_WORDS", "SUMMARY_LABEL", "DATELINE", "CREDIT",
             "GALLERY_COUNTER", "CAPTION_TOKEN", "NOT_CAPTION_TOKEN", "IMAGE_TOKEN", "NOT_CAPTION_TAGS", "KEY_POINTS",
             "CREDIT_HINTS", "COMMENT_HEADING", "COMMENT_LINE")
