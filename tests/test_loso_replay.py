"""benchmarks/loso_replay.py: a few folds' parts scored at fixed blends and at each fold's best."""

import sys

import pytest
from benchmarks import loso_blend, loso_replay

GOLD = "the harbour wall works begin in may and end in june"


def _texts(right):
    """page_texts as if the setting got exactly the pages `right[setting]` names right."""
    return lambda pages, setting, convention: [GOLD if right[setting][i] else "" for i in range(len(pages))]


def test_a_fold_is_scored_at_its_setting_the_shipped_one_and_its_best(monkeypatch):
    a, b, c = (0.2, 0.2, 0.45, 0.7, 0.0), (0.4, 0.1, 0.5, 0.6, 0.7), (0.3, 0.2, 0.45, 0.6, 0.7)
    pages = [{"gold": GOLD, "lang": "en"}, {"gold": GOLD, "lang": "zh"}, {"gold": GOLD, "lang": "zh"}]
    right = {a: [True, False, False], b: [True, True, True], c: [False, True, False]}
    monkeypatch.setattr(loso_replay, "settings", lambda: [a, b, c])
    monkeypatch.setattr(loso_blend, "page_texts", _texts(right))
    got = loso_replay.replay(pages, "daniel", a, c, oracle=True)
    assert got["at"] == (a, {"daniel": pytest.approx((1 / 3, 1 / 3)), loso_replay.ZH: (0.0, 0.0)})
    assert got["shipped"][1]["daniel"] == pytest.approx((1 / 3, 1 / 3))
    assert got["shipped"][1][loso_replay.ZH] == pytest.approx((0.5, 0.5))
    assert got["best"] == (b, {"daniel": (1.0, 1.0), loso_replay.ZH: (1.0, 1.0)})
    no_best = loso_replay.replay(pages[:1], "dragnet", None, a, oracle=False)
    assert set(no_best) == {"shipped"} and set(no_best["shipped"][1]) == {"dragnet"}


def test_the_table_has_a_mean_only_over_every_fold():
    s = (0.2, 0.2, 0.45, 0.7, 0.0)
    results = {"r3": {"dragnet": {"at": (s, {"dragnet": (0.9, 0.8)})},
                      "daniel": {"at": (s, {"daniel": (0.8, 0.6), loso_replay.ZH: (0.7, 0.5)})}},
               "r10": {"dragnet": {"at": (s, {"dragnet": (0.9, 0.8)}), "best": (s, {"dragnet": (0.95, 0.9)})},
                       "daniel": {"at": (s, {"daniel": (0.9, 0.8), loso_replay.ZH: (0.7, 0.5)})}}}
    text = loso_replay.table(results, ["dragnet", "daniel"])
    head, _, *rows = text.splitlines()
    assert head.split(" | ")[2:5] == ["dragnet", "daniel", "daniel zh"]
    assert "| r3 | each fold's `--at` | 0.9000 / 0.8000 | 0.8000 / 0.6000 | 0.7000 / 0.5000 | 0.8500 / 0.7000 |" in rows
    best = next(r for r in rows if r.startswith("| r10 | each fold's best"))
    assert best.endswith("| 0.9500 / 0.9000 | – | – | – |")  # daniel has no best: no mean
    assert "- r10, fold dragnet, its best: (0.2, 0.2, 0.45, 0.7, 0.0)" in rows


@pytest.mark.parametrize("at, message", [("wcxb-dev=0.3,0.2,0.45,0.6,0.7", "not one of --folds"),
                                         ("dragnet=0.3,0.2", "five numbers"), ("dragnet=a,b,c,d,e", "five numbers")])
def test_a_bad_setting_is_one_line_of_usage(monkeypatch, capsys, at, message):
    monkeypatch.setattr(sys, "argv", ["loso_replay", "--models", "runs/x", "--folds", "dragnet", "--at", at])
    with pytest.raises(SystemExit) as e:
        loso_replay.main()
    assert e.value.code == 2 and message in capsys.readouterr().err
