"""benchmarks/loso_blend.py's grid: the settings it scores and `--grid` changes to them."""

import pytest
from benchmarks import loso_blend

from bodyblocks.training.datasets import GoldConvention


def test_settings_leave_the_trees_a_share():
    settings = loso_blend.settings()
    assert settings and all(w + h < 1.0 for w, h, *_ in settings)
    assert (0.2, 0.2, 0.45, 0.6, 0.7) in settings  # the shipped ensemble's blend
    assert (0.2, 0.2, 0.45, 0.6, 0.0) in settings  # the same without the container's core


def test_a_setting_with_a_core_puts_it_in_the_container_step():
    from bodyblocks.extraction.decision import DecisionRule

    assert loso_blend.rule_meta((0.2, 0.2, 0.45, 0.6, 0.0))["container"] == [0.6, 0.3, 0.6]
    meta = loso_blend.rule_meta((0.2, 0.2, 0.45, 0.6, 0.7))
    assert meta["container"] == [0.6, 0.3, 0.6, 0.7, loso_blend.CORE_SHARE]
    assert DecisionRule.from_meta(meta).container == (0.6, 0.3, 0.6, 0.7, loso_blend.CORE_SHARE)


def test_a_cache_scored_under_another_rule_is_scored_again(tmp_path, monkeypatch):
    from benchmarks.cache_files import write_cached

    row = {"wcxb-dev": (0.8, 0.5)}
    path = tmp_path / "grid.json.gz"
    scores = {(0.2, 0.2, 0.45, 0.6, 0.7): row, (0.5, 0.0, 0.5, 0.6, 0.0): row}
    write_cached(path, {"rule": loso_blend.rule_key(), "scores": scores})
    assert loso_blend.load_grid(path) == scores
    conventions = {**loso_blend.rule_key()["conventions"], "cleaneval-en": GoldConvention(True, True, True)._asdict()}
    for other in ({"captions": False}, {"repeated_posts": False}, {"comment_headings": False}, {"version": 0},
                  {"conventions": conventions}):  # a step, the rule or what a source's gold holds changed
        write_cached(path, {"rule": {**loso_blend.rule_key(), **other}, "scores": scores})
        assert loso_blend.load_grid(path) == {}
    monkeypatch.setitem(loso_blend.STEPS, "comment_headings", False)  # an ablation's run keeps its own cache
    write_cached(path, {"rule": loso_blend.rule_key(), "scores": scores})
    assert loso_blend.load_grid(path) == scores
    write_cached(path, {(0.2, 0.2, 0.45, 0.6): row})  # older: a bare dict, scored under no known rule
    assert loso_blend.load_grid(path) == {}
    assert loso_blend.load_grid(tmp_path / "none.json.gz") == {}


def test_the_ablation_steps_reach_the_rule(monkeypatch):
    assert loso_blend.rule_of((0.2, 0.2, 0.45, 0.6, 0.7))[1].repeated_posts
    monkeypatch.setitem(loso_blend.STEPS, "repeated_posts", False)
    monkeypatch.setitem(loso_blend.STEPS, "captions", False)
    monkeypatch.setitem(loso_blend.STEPS, "comment_headings", False)
    rule = loso_blend.rule_of((0.2, 0.2, 0.45, 0.6, 0.7))[1]
    assert not rule.repeated_posts and not rule.captions and not rule.comment_headings


def test_ship_values_parse_and_refuse():
    assert loso_blend.ship_values("0.2,0.2,0.45,0.6,0.7;0.5,0,0.5,0.6,0") == (
        (0.2, 0.2, 0.45, 0.6, 0.7), (0.5, 0.0, 0.5, 0.6, 0.0))
    for bad in ("0.2,0.2,0.45,0.6,0.7", "0.2,0.2,0.45,0.6;0.5,0,0.5,0.6", "0.5,0,0.5,0.6,0;0.2,0.2,0.45,0.6,0.7",
                "a,b;c,d"):
        with pytest.raises(ValueError, match="--ship"):
            loso_blend.ship_values(bad)


def test_grid_values_parse_and_refuse(monkeypatch):
    assert loso_blend.grid_values(["weight=0", "vote=0,0.1"]) == {"weight": (0.0,), "vote": (0.0, 0.1)}
    for bad in ("nope=1", "weight=", "weight=a,b", "weight"):
        with pytest.raises(ValueError, match="--grid"):
            loso_blend.grid_values([bad])
    monkeypatch.setattr(loso_blend, "GRID", {**loso_blend.GRID, **loso_blend.grid_values(["weight=0"])})
    assert {w for w, *_ in loso_blend.settings()} == {0.0}


def test_each_fold_is_scored_with_the_setting_best_on_the_other_folds():
    a, b, c = (0.2, 0.2, 0.45, 0.6, 0.7), (0.3, 0.1, 0.5, 0.5, 0.0), (0.2, 0.0, 0.4, 0.5, 0.7)  # c: without the vote
    folds = loso_blend.SOURCES
    grid = {a: {f: (0.80, 0.5) for f in folds}, b: {f: (0.81, 0.5) for f in folds}, c: {f: (0.90, 0.9) for f in folds}}
    grid[a]["dragnet"] = (0.99, 0.9)  # a wins on dragnet by far: best over all folds, yet not dragnet's own choice
    for row in grid.values():  # each fold without the pages of another's sites: here the same pages
        row.update({loso_blend.without(g, f): row[g] for f in folds for g in folds if g != f})
    assert loso_blend.best(grid, folds) == a
    nested = loso_blend.nested_choice(grid)
    assert nested["dragnet"] == b  # dragnet's own pages take no part in choosing its blend
    assert all(nested[f] == a for f in folds if f != "dragnet")  # the others see a's dragnet score
    assert nested[loso_blend.ZH] == nested["daniel"]
    assert set(loso_blend.nested_choice(grid, vote=False).values()) == {c}  # the settings without the vote apart
    grid[b]["dragnet"] = (0.0, 0.0)  # a fold's own score never changes its choice
    assert loso_blend.nested_choice(grid)["dragnet"] == b


def test_the_nested_choice_is_blind_to_the_left_out_sources_sites():
    a, b = (0.2, 0.2, 0.45, 0.7, 0.0), (0.4, 0.1, 0.5, 0.6, 0.7)
    w = loso_blend.without
    grid = {  # on all of fold x's pages a wins; on those not of a site of fold s, b does
        a: {"x": (0.95, 0.9), "y": (0.80, 0.7), w("x", "s"): (0.70, 0.5), w("y", "s"): (0.80, 0.7)},
        b: {"x": (0.90, 0.8), "y": (0.80, 0.7), w("x", "s"): (0.90, 0.8), w("y", "s"): (0.80, 0.7)},
    }
    assert loso_blend.best(grid, ("x", "y")) == a
    assert loso_blend.best(grid, ("x", "y"), blind_to="s") == b


def test_loso_reads_each_tool_with_and_without_its_headline(tmp_path):
    import json

    from benchmarks import loso

    from bodyblocks.evaluation.evaluate import ALL, BODY_ONLY

    def row(extractor, lang, f1):
        return {"extractor": extractor, "dataset": "d" if lang != "x" else ALL, "lang": ALL if lang == "x" else lang,
                "token_f1": f1, "acc@0.90": f1, "pages": 3}

    summary = [row("trafilatura", "x", 0.1), row("trafilatura", ALL, 0.8), row("trafilatura", "zh", 0.7),
               row("trafilatura" + BODY_ONLY, ALL, 0.6), row("trafilatura" + BODY_ONLY, "zh", 0.5)]
    (tmp_path / "eval-trafilatura.json").write_text(json.dumps({"summary": summary}), encoding="utf-8")
    rows = loso.fold_rows(tmp_path)
    assert set(rows) == {"trafilatura", "trafilatura" + BODY_ONLY}
    assert rows["trafilatura"]["all"]["token_f1"] == 0.8 and rows["trafilatura"]["zh"]["token_f1"] == 0.7
    assert rows["trafilatura" + BODY_ONLY]["all"]["token_f1"] == 0.6
    cfg = loso.fold_config("dragnet", tmp_path, tmp_path / "fold", 3)
    assert cfg.data.exclude_sites_of == ["dragnet"] and "dragnet" not in cfg.data.datasets


def test_grid_scores_each_fold_less_the_pages_of_each_other_folds_sites(monkeypatch):
    from bodyblocks.training.hosts import Unseen

    a, b = (0.2, 0.2, 0.45, 0.7, 0.0), (0.4, 0.1, 0.5, 0.6, 0.7)
    gold = "the harbour wall works begin in may"
    parts = {"x": [{"gold": gold, "lang": "en"}] * 3, "s": [{"gold": gold, "lang": "en"}]}
    domains = {"x": ["bbc.co.uk", None, "nytimes.com"], "s": ["bbc.co.uk"]}
    right = {a: [True, True, False], b: [False, True, True]}  # per page of x: the setting gets its text right
    monkeypatch.setattr(loso_blend, "settings", lambda: [a, b])
    monkeypatch.setattr(loso_blend, "test_domains", lambda f: domains[f])
    monkeypatch.setattr(loso_blend, "resolve_dataset", lambda f: f)
    monkeypatch.setattr(loso_blend, "unseen_sites", lambda pairs: Unseen({d for n, _ in pairs for d in domains[n]},
                                                                        True))
    monkeypatch.setattr(loso_blend, "page_texts", lambda pages, setting, convention: [
        gold if (len(pages) == 1 or right[setting][i]) else "" for i in range(len(pages))])
    grid = loso_blend.grid_scores(parts, {})
    w = loso_blend.without
    assert grid[a]["x"][0] == grid[b]["x"][0] and set(grid[a]) == {"x", "s", w("x", "s"), w("s", "x")}
    assert grid[a][w("s", "x")] is None  # every page of s is of a site of x: s is out of the choice for x
    assert grid[a][w("x", "s")] == (0.0, 0.0) and grid[b][w("x", "s")] == (1.0, 1.0)  # nytimes.com's page alone
    assert loso_blend.best(grid, ("x",), blind_to="s") == b
    assert loso_blend.grid_scores(parts, grid) == grid  # every key there: nothing scored again


def test_a_grid_without_one_kind_of_setting_is_named_not_a_traceback():
    row = {f: (0.8, 0.5) for f in loso_blend.SOURCES}
    assert loso_blend.missing_kind({(0.2, 0.2, 0.45, 0.6, 0.7): row, (0.5, 0.0, 0.5, 0.6, 0.0): row}) is None
    assert "without the vote" in loso_blend.missing_kind({(0.2, 0.2, 0.45, 0.6, 0.7): row})
    assert "with the vote" in loso_blend.missing_kind({(0.5, 0.0, 0.5, 0.6, 0.0): row})
    assert "of any kind" in loso_blend.missing_kind({})


def test_the_report_shows_the_shipped_setting_though_it_is_not_among_the_best(tmp_path, monkeypatch):
    import argparse
    import json

    shipped = (0.2, 0.2, 0.45, 0.6, 0.7)  # an ensemble whose blend `--ensemble` recorded (metrics.setting)
    record = tmp_path / "config.json"
    record.write_text(json.dumps({"metrics": {"setting": list(shipped)}}), encoding="utf-8")
    monkeypatch.setattr(loso_blend, "SHIPPED", record)
    assert loso_blend.shipped_setting() == shipped
    folds = (*loso_blend.SOURCES, loso_blend.ZH)
    others = [(w, 0.2, t, 0.6, 0.7) for w in (0.3, 0.4, 0.5) for t in (0.4, 0.45, 0.5)]  # nine, each above it
    grid = {s: {f: (0.9, 0.8) for f in folds} for s in others}
    grid[shipped] = {f: (0.5, 0.4) for f in folds}
    grid[(0.5, 0.0, 0.5, 0.6, 0.0)] = {f: (0.7, 0.6) for f in folds}
    for row in grid.values():
        row.update({loso_blend.without(g, f): row[g] for f in loso_blend.SOURCES for g in loso_blend.SOURCES
                    if g != f})
    args = argparse.Namespace(models="m", trees="t", peers=tmp_path, grid=[], no_captions=False,
                              no_repeated_posts=False, no_comment_headings=False, out="o", doc="d", note="")
    text = loso_blend.report(grid, tmp_path, args)
    assert f"| {shipped} (shipped) | 0.500 / 0.400 |" in text
    assert text.count("(shipped)") == 1
    monkeypatch.setattr(loso_blend, "SHIPPED", tmp_path / "none.json")  # no record: no such row
    assert "(shipped)" not in loso_blend.report(grid, tmp_path, args)


def test_a_blend_is_chosen_by_token_f1_and_acc_at_0_9_together():
    a, b = (0.2, 0.2, 0.45, 0.6, 0.7), (0.4, 0.1, 0.4, 0.7, 0.7)
    grid = {a: {"x": (0.804, 0.570)}, b: {"x": (0.806, 0.515)}}  # b: a hair better F1, far worse at 0.9
    assert loso_blend.best(grid, ("x",)) == a
    grid[b]["x"] = (0.804, 0.570)  # a tie of both: token F1 breaks it, then the grid's order
    grid[a]["x"] = (0.803, 0.571)
    assert loso_blend.best(grid, ("x",)) == b


def test_a_blend_is_chosen_by_its_worst_shortfall_on_any_fold():
    a, b = (0.2, 0.2, 0.45, 0.6, 0.7), (0.2, 0.1, 0.5, 0.7, 0.7)
    # b: the better mean of token F1 plus acc@0.9 over x, y, z, by being best on two folds, but 0.09 behind on z
    grid = {a: {"x": (0.90, 0.80), "y": (0.90, 0.80), "z": (0.80, 0.57)},
            b: {"x": (0.92, 0.83), "y": (0.92, 0.83), "z": (0.76, 0.52)}}
    tops = loso_blend.fold_tops(grid, [a, b], ("x", "y", "z"))
    assert tops == {"x": pytest.approx(1.75), "y": pytest.approx(1.75), "z": pytest.approx(1.37)}
    assert loso_blend.objective(grid[b], ("x", "y", "z"), tops)[1] > loso_blend.objective(grid[a], ("x", "y", "z"),
                                                                                           tops)[1]
    assert loso_blend.best(grid, ("x", "y", "z")) == a  # a: 0.05 short on x and y; b: 0.09 short on z
    assert loso_blend.best(grid, ("x", "y")) == b  # without z, b is best everywhere
    grid[a]["z"] = grid[b]["z"] = None  # a fold with no page left is out of the choice
    assert loso_blend.best(grid, ("x", "y", "z")) == b
    grid[b]["z"] = (0.5, 0.5)  # ... also where another setting has it (the folds' grid keys are the same pages)
    assert loso_blend.best(grid, ("x", "y", "z")) == b
    assert loso_blend.best({a: {"z": None}, b: {"z": None}}, ("z",)) in (a, b)  # no fold left: no crash
