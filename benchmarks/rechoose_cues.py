"""Where each cue of role_cues.py fires on the pages that choose, and what removing it does there.

A cue fires on a page when the rule, deciding that page, tests a string its list matches and the cue's own
alternative (or word) matches it too: the lists are swapped for recording stand-ins (PatternRecorder, a frozenset
that notes its hits) while the rule runs at the chosen values. A cue that fires on no page cannot change one, so its
removal is scored on the pages where it fires only (benchmarks.rechoose: the others keep their scores).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from benchmarks.rechoose_space import CUE_LISTS, Cue, clear_caches, cues_of, list_off, patched, without
from bodyblocks.extraction import role_cues
from bodyblocks.extraction.decision import DecisionRule

CREDIT_HINTS = "CREDIT_HINTS"  # the words that let CREDIT be tried: a hint fires where CREDIT matches a text holding it


class PatternRecorder:
    """A compiled expression that notes, on each successful match, which of its cues match the same string."""

    def __init__(self, pattern: re.Pattern[str], cues: list[Cue], note: Callable[[str, str], None]) -> None:
        self._pattern, self._cues, self._note = pattern, cues, note
        self.pattern, self.flags = pattern.pattern, pattern.flags

    def _seen(self, method: str, string: str) -> None:
        for cue in self._cues:
            assert cue.pattern is not None
            if getattr(cue.pattern, method)(string):
                self._note(cue.list, cue.text)

    def search(self, string: str, *args: Any) -> re.Match[str] | None:
        m = self._pattern.search(string, *args)
        if m:
            self._seen("search", string)
        return m

    def match(self, string: str, *args: Any) -> re.Match[str] | None:
        m = self._pattern.match(string, *args)
        if m:
            self._seen("match", string)
        return m

    def fullmatch(self, string: str, *args: Any) -> re.Match[str] | None:
        m = self._pattern.fullmatch(string, *args)
        if m:
            self._seen("fullmatch", string)
        return m

    def finditer(self, string: str, *args: Any) -> Iterable[re.Match[str]]:
        found = list(self._pattern.finditer(string, *args))
        if found:
            self._seen("search", string)
        return iter(found)

    def findall(self, string: str, *args: Any) -> list[Any]:
        found = self._pattern.findall(string, *args)
        if found:
            self._seen("search", string)
        return found

    def sub(self, repl: Any, string: str, *args: Any) -> str:
        if self._pattern.search(string):
            self._seen("search", string)
        return self._pattern.sub(repl, string, *args)


def set_recorder(name: str, items: frozenset[str], note: Callable[[str, str], None]) -> frozenset[str]:
    """A frozenset of `items` that notes the items found by `in` and `isdisjoint`."""

    class Recording(frozenset):  # type: ignore[type-arg]
        def __contains__(self, item: object) -> bool:
            hit = frozenset.__contains__(self, item)
            if hit:
                note(name, str(item))
            return hit

        def isdisjoint(self, other: Iterable[Any]) -> bool:
            seen = [x for x in other if frozenset.__contains__(self, x)]
            for x in seen:
                note(name, str(x))
            return not seen

    return Recording(items)


class CueRecorder:
    """Each cue's pages (where it fires) and its removal's gain; each list's removal's gain (benchmarks.rechoose)."""

    def __init__(self, full: Any, sample: Any, pool: Any, scores: Callable[[tuple[Any, ...]], Any],
                 rule: DecisionRule, values: dict[str, Any], objective: Callable[[Any], float], noise: float,
                 log: Callable[[str], None]) -> None:
        """`full`, `sample`: benchmarks.rechoose's Replay of all train+val pages (where a cue fires is counted) and
        of the search's sample (what its removal does: in the workers of `pool`, `scores((rule, values, only,
        base))`)."""
        self.replay, self.sample, self.pool, self.scores = full, sample, pool, scores
        self.rule, self.values, self.objective, self.noise, self.log = rule, values, objective, noise, log
        self.base = sample.scores(rule, values)
        self.cues = {name: cues_of(name) for name in CUE_LISTS}
        # a page of the full set -> its index in the sample (by identity: the sample holds the same rows)
        self.in_sample = {s: {id(row): i for i, row in enumerate(rows)} for s, rows in sample.pages.items()}

    def fired(self) -> dict[tuple[str, str], dict[str, list[int]]]:
        """Per (list, cue): per source, the pages it fires on."""
        pages: dict[tuple[str, str], dict[str, list[int]]] = {}
        where: list[tuple[str, int]] = [("", 0)]

        def note(name: str, text: str) -> None:
            got = pages.setdefault((name, text), {}).setdefault(where[0][0], [])
            if not got or got[-1] != where[0][1]:
                got.append(where[0][1])

        stand_ins: dict[str, Any] = {}
        for name, cues in self.cues.items():
            value = getattr(role_cues, name)
            if isinstance(value, re.Pattern):
                stand_ins[f"role_cues.{name}"] = PatternRecorder(value, cues, note)
            elif isinstance(value, frozenset):
                stand_ins[f"role_cues.{name}"] = set_recorder(name, value, note)

        with patched({**self.values, **stand_ins}):
            credit = role_cues.CREDIT
            if isinstance(credit, PatternRecorder) and CREDIT_HINTS in self.cues:
                hints = list(getattr(role_cues, CREDIT_HINTS))
                original = credit._seen

                def seen_with_hints(method: str, string: str) -> None:
                    original(method, string)
                    low = string.lower()
                    for h in hints:
                        if h in low:
                            note(CREDIT_HINTS, h)

                credit._seen = seen_with_hints  # type: ignore[method-assign]
            for source, rows in self.replay.pages.items():
                for i, p in enumerate(rows):
                    if p["doc"] is None or p["probs"] is None:
                        continue
                    where[0] = (source, i)
                    clear_caches()  # a tag path cached from another page would not be matched again on this one
                    self.rule.decide(p["doc"], p["probs"], "ensemble")
        return pages

    def _sampled(self, only: dict[str, list[int]]) -> dict[str, list[int]]:
        """Pages of the full set (per source, indices) as indices of the sample (those it holds)."""
        out = {}
        for source, idx in only.items():
            rows, where = self.replay.pages[source], self.in_sample[source]
            out[source] = [where[id(rows[i])] for i in idx if id(rows[i]) in where]
        return out

    def gains(self, tasks: list[tuple[str, Any, dict[str, list[int]]]]) -> list[float]:
        """The objective's change on the sample with each list NAME set to `value`, scored again on its pages."""
        got = self.pool.map(self.scores, [(self.rule, {**self.values, f"role_cues.{name}": value},
                                           self._sampled(only), self.base) for name, value, only in tasks])
        return [self.objective(g) - self.objective(self.base) for g in got]

    def run(self) -> dict[str, Any]:
        fired = self.fired()
        rows, lists = [], []
        for name, cues in self.cues.items():
            union: dict[str, set[int]] = {}
            tasks, counts = [], []
            for cue in cues:
                only = fired.get((name, cue.text), {})
                for s, idx in only.items():
                    union.setdefault(s, set()).update(idx)
                counts.append(sum(len(v) for v in only.values()))
                tasks.append((name, without(getattr(role_cues, name), [cue.text]), only))
            tasks.append((name, list_off(name), {s: sorted(v) for s, v in union.items()}))
            gains = self.gains(tasks)
            for cue, count, gain in zip(cues, counts, gains, strict=False):
                dropped = count > 0 and gain > self.noise  # no page: a tie
                rows.append({"list": name, "text": cue.text, "pages": count, "gain": gain, "dropped": dropped})
                self.log(f"cue {name} {cue.text!r}: {count} pages, removal {gain:+.4f}{' dropped' if dropped else ''}")
            lists.append({"list": name, "pages": sum(len(v) for v in union.values()), "gain_off": gains[-1]})
            self.log(f"list {name}: {lists[-1]['pages']} pages, off {gains[-1]:+.4f}")
        old = {name: _plain(getattr(role_cues, name)) for name in self.cues}
        return {"cues": rows, "lists": lists, "old": old}


def _plain(value: Any) -> dict[str, Any]:
    """A cue list's value in JSON (its_value inverts it)."""
    if isinstance(value, re.Pattern):
        return {"pattern": value.pattern, "flags": int(value.flags)}
    return {"items": sorted(str(v) for v in value), "type": type(value).__name__}


def its_value(plain: dict[str, Any]) -> Any:
    if "pattern" in plain:
        return re.compile(plain["pattern"], re.RegexFlag(plain["flags"]))
    return frozenset(plain["items"]) if plain["type"] == "frozenset" else tuple(plain["items"])


def restore_values(cues: dict[str, Any]) -> dict[str, Any]:
    """The cue lists as they were before the search (`patched` values), for the lists it changed."""
    changed = {c["list"] for c in cues["cues"] if c["dropped"]}
    return {f"role_cues.{name}": its_value(cues["old"][name]) for name in sorted(changed)}


def cue_values(cues: dict[str, Any]) -> dict[str, Any]:
    """The cue lists less their dropped cues (`patched` values), for the lists the search changed."""
    out = {}
    for key, old in restore_values(cues).items():
        name = key.split(".", 1)[1]
        out[key] = without(old, [c["text"] for c in cues["cues"] if c["list"] == name and c["dropped"]])
    return out
