"""benchmarks/rechoose.py: the objective (the mean over sources of the mean per-page token F1), the one-pass
coordinate search with ties and gains within the noise to today's value, and the cue lists' split, removal and
recording, on synthetic pages."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from benchmarks import rechoose
from benchmarks.rechoose_cues import CueRecorder, cue_values, its_value, restore_values
from benchmarks.rechoose_space import Knob, cues_of, patched, rule_with, without

from bodyblocks.extraction import prominence, role_cues, roles
from bodyblocks.extraction.decision import DecisionRule
from bodyblocks.page.segment import segment

BODY = [f"Paragraph {i} of the harbour story, with enough words to read as body text here." for i in range(4)]
PAGE = ("<html><head><title>Harbour works begin</title></head><body><main><article>"
        + "".join(f"<p>{t}</p>" for t in BODY)
        + "<div id='sidebar'><div class='widget'><p>Blurb: this site is supported by a friend of the harbour.</p>"
        "</div></div></article></main></body></html>")
RULE = DecisionRule(0.45, 0.5, rescue=0.15)
SIDEBAR = re.compile(r"[.#](?:sidebar|sidebar-widget|widgets?|widget-area)(?=[.#/]|$)", re.IGNORECASE)  # a list


@pytest.fixture
def sidebar(monkeypatch: pytest.MonkeyPatch) -> Iterator[re.Pattern[str]]:
    """role_cues.SIDEBAR as this test has it, whatever the shipped list holds."""
    monkeypatch.setattr(role_cues, "SIDEBAR", SIDEBAR)
    roles._in_sidebar.cache_clear()
    yield SIDEBAR
    roles._in_sidebar.cache_clear()


def page(low: float) -> dict[str, Any]:
    """The page with its first two paragraphs at P(body) `low`, the others and the sidebar's blurb at 0.9."""
    doc = segment(PAGE)
    probs = np.array([low if b.text in BODY[:2] else 0.9 for b in doc.blocks], np.float32)
    return {"id": "p", "lang": "en", "gold": "\n".join(BODY), "doc": doc, "probs": probs}


class SerialPool:
    """The search's pool, in this process."""

    def map(self, f: Any, tasks: list[Any]) -> list[Any]:
        return [f(t) for t in tasks]


@pytest.fixture
def replay(monkeypatch: pytest.MonkeyPatch) -> rechoose.Replay:
    pages = {"a": [page(0.4)], "b": [page(0.9), page(0.9), page(0.9)]}
    r = rechoose.Replay(pages)
    monkeypatch.setattr(rechoose, "_REPLAY", r)
    return r


def test_the_objective_is_the_mean_over_sources_not_over_pages(replay: rechoose.Replay) -> None:
    got = replay.scores(RULE, {})
    f1 = {s: v[0] for s, v in rechoose.summary(got).items()}
    assert f1["a"] < f1["b"]  # page a loses its first two paragraphs under the threshold
    assert rechoose.objective(got) == pytest.approx((f1["a"] + f1["b"]) / 2)
    assert rechoose.objective(got) != pytest.approx((f1["a"] + 3 * f1["b"]) / 4)


def test_the_search_takes_a_value_that_gains_and_keeps_today_on_ties(replay: rechoose.Replay) -> None:
    grid = [Knob("rule.threshold", (0.35, 0.55)), Knob("rule.rescue", (0.1, "off")),
            Knob("roles.BUTTON_CHARS", (5, 20), integer=True)]
    rule, values, rows = rechoose.coordinate_search(SerialPool(), RULE, grid, lambda _: None)
    assert rule.threshold == 0.35 and rows[0]["gain"] > rechoose.NOISE  # page a gets its paragraphs back
    assert rule.rescue == 0.15 and values == {}  # the rescue and the button's length change nothing here: today's
    assert [r["chosen"] for r in rows[1:]] == [0.15, 10]


def test_a_gain_within_the_noise_keeps_today(replay: rechoose.Replay, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rechoose, "NOISE", 1.0)
    rule, _, rows = rechoose.coordinate_search(SerialPool(), RULE, [Knob("rule.threshold", (0.35,))],
                                               lambda _: None)
    assert rule.threshold == 0.45 and rows[0]["chosen"] == 0.45 and rows[0]["gain"] == 0.0


def test_a_rule_setting_turned_off_and_a_constant_patched_where_it_was_imported() -> None:
    box = DecisionRule(0.45, 0.5, 0.15, (0.6, 0.3, 0.6, 0.7, 0.3))
    assert rule_with(box, "rule.container[3]", "off").container == (0.6, 0.3, 0.6)
    assert rule_with(box, "rule.container[0]", "off").container is None
    assert rule_with(box, "rule.rescue", "off").rescue is None
    assert rule_with(box, "rule.container[1]", 0.2).container == (0.6, 0.2, 0.6, 0.7, 0.3)
    today = roles.BYLINE_CHARS
    with patched({"roles.BYLINE_CHARS": today * 2, "roles.STANDFIRST_CHARS[1]": 999}):
        assert roles.BYLINE_CHARS == prominence.BYLINE_CHARS == today * 2  # prominence imported it by name
        assert roles.STANDFIRST_CHARS[1] == 999
    assert roles.BYLINE_CHARS == prominence.BYLINE_CHARS == today


def test_a_cue_list_splits_into_its_cues_and_loses_one(sidebar: re.Pattern[str]) -> None:
    sidebar = [c.text for c in cues_of("SIDEBAR")]
    assert sidebar[:2] == ["sidebar", "sidebar-widget"]
    fewer = without(role_cues.SIDEBAR, ["sidebar"])
    assert fewer.flags == role_cues.SIDEBAR.flags
    assert role_cues.SIDEBAR.search("div#sidebar") and not fewer.search("div#sidebar") and fewer.search("li.widget")
    assert [c.text for c in cues_of("AD_CLASS")] == ["ad", "ads", "advert\\w*", "sponsor\\w*", "promo\\w*"]
    assert without(frozenset({"dek", "lede"}), ["dek"]) == frozenset({"lede"})
    assert without(re.compile("a|b"), ["a", "b"]).search("ab") is None  # none left: matches nothing


def test_the_recorder_finds_where_a_cue_fires_and_keeps_those_that_never_do(replay: rechoose.Replay,
                                                                            sidebar: re.Pattern[str]) -> None:
    base = replay.scores(RULE, {})
    recorder = CueRecorder(replay, replay, SerialPool(), rechoose._scores, RULE, {}, rechoose.objective,
                           rechoose.NOISE, lambda _: None)
    recorder.cues = {"SIDEBAR": cues_of("SIDEBAR")}
    fired = recorder.fired()
    assert fired[("SIDEBAR", "sidebar")] == {"a": [0], "b": [0, 1, 2]}
    assert ("SIDEBAR", "widget-area") not in fired
    result = recorder.run()
    rows = {r["text"]: r for r in result["cues"]}
    assert rows["sidebar"]["pages"] == 4 and not rows["sidebar"]["dropped"]
    assert rows["sidebar"]["gain"] == 0.0 and rows["widgets?"]["pages"] == 4  # "widget" still names the blurb
    assert not rows["widget-area"]["dropped"] and rows["widget-area"]["pages"] == 0  # fires nowhere: a tie keeps it
    assert result["lists"][0]["gain_off"] < 0  # the list off: the blurb comes back into the body
    assert "role_cues.SIDEBAR" not in cue_values(result)  # nothing to drop
    hurting = dict(result, cues=[dict(r, dropped=r["text"] == "widget-area") for r in result["cues"]])
    restored, dropped = restore_values(hurting), cue_values(hurting)
    assert restored["role_cues.SIDEBAR"].pattern == role_cues.SIDEBAR.pattern
    assert not dropped["role_cues.SIDEBAR"].search("div#widget-area")
    assert dropped["role_cues.SIDEBAR"].search("div#sidebar")
    assert its_value({"items": ["b", "a"], "type": "frozenset"}) == frozenset({"a", "b"})
    assert replay.scores(RULE, {}) == base


def test_the_report_names_each_change_and_each_list() -> None:
    chosen = {"knobs": [{"knob": "rule.rescue", "today": 0.15, "chosen": "off", "gain": 0.002, "gain_all": 0.0015},
                        {"knob": "roles.PROMO_CHARS", "today": 40, "chosen": 40, "gain": 0.0},
                        {"knob": "kinds.REPEAT_KEY", "today": 2, "chosen": 2, "gain": 0.0, "gain_all": 0.0009,
                         "tried": {"today": [0.94, {}], "1": [0.91, {}], "3": [0.9415, {}]}}],
              "cues": {"lists": [{"list": "SIDEBAR", "pages": 7, "gain_off": -0.004}],
                       "cues": [{"list": "SIDEBAR", "text": "sidebar", "pages": 7, "gain": 0.0, "dropped": False},
                                {"list": "SIDEBAR", "text": "rail", "pages": 0, "gain": 0.0, "dropped": True}]}}
    row = {s: (0.9, 0.8) for s in [*rechoose.SOURCES, "daniel zh"]}
    moved = {s: (1.0, 10.0) for s in [*rechoose.SOURCES, "daniel zh"]}
    text = rechoose.markdown(chosen, {"test": {"today": row, "re-chosen": row, rechoose.CHANGED: moved}})
    assert "| test | today | 0.900 / 0.800 |" in text and "**0.900 / 0.800**" in text
    assert f"| test | {rechoose.CHANGED} | 1 of 10 |" in text and "| 6 of 60 |" in text
    assert "- `rule.rescue` 0.15 → off (+0.0020; +0.0015)" in text and "PROMO_CHARS" not in text
    assert "today's value kept: `kinds.REPEAT_KEY` 2 → 3 (+0.0015 on the sample; +0.0009 on all train+val)" in text
    assert "| SIDEBAR | 2 | 1 (7) | 1 | 0 | -0.0040 |" in text
