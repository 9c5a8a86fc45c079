"""benchmarks/loso_blend.py's grid: the settings it scores and `--grid` changes to them."""

import pytest
from benchmarks import loso_blend


def test_settings_leave_the_trees_a_share():
    settings = loso_blend.settings()
    assert settings and all(w + h < 1.0 for w, h, _, _ in settings)
    assert (0.2, 0.2, 0.45, 0.6) in settings  # the shipped ensemble's blend


def test_grid_values_parse_and_refuse(monkeypatch):
    assert loso_blend.grid_values(["weight=0", "vote=0,0.1"]) == {"weight": (0.0,), "vote": (0.0, 0.1)}
    for bad in ("nope=1", "weight=", "weight=a,b", "weight"):
        with pytest.raises(ValueError, match="--grid"):
            loso_blend.grid_values([bad])
    monkeypatch.setattr(loso_blend, "GRID", {**loso_blend.GRID, **loso_blend.grid_values(["weight=0"])})
    assert {w for w, _, _, _ in loso_blend.settings()} == {0.0}


def test_each_fold_is_scored_with_the_setting_best_on_the_other_folds():
    a, b, c = (0.2, 0.2, 0.45, 0.6), (0.3, 0.1, 0.5, 0.5), (0.2, 0.0, 0.4, 0.5)  # c: without the vote
    folds = loso_blend.SOURCES
    grid = {a: {f: (0.80, 0.5) for f in folds}, b: {f: (0.81, 0.5) for f in folds}, c: {f: (0.90, 0.9) for f in folds}}
    grid[a]["dragnet"] = (0.99, 0.9)  # a wins on dragnet by far: best over all folds, yet not dragnet's own choice
    assert loso_blend.best(grid, folds) == a
    nested = loso_blend.nested_choice(grid)
    assert nested["dragnet"] == b  # dragnet's own pages take no part in choosing its blend
    assert all(nested[f] == a for f in folds if f != "dragnet")  # the others see a's dragnet score
    assert nested[loso_blend.ZH] == nested["daniel"]
    assert set(loso_blend.nested_choice(grid, vote=False).values()) == {c}  # the settings without the vote apart
    grid[b]["dragnet"] = (0.0, 0.0)  # a fold's own score never changes its choice
    assert loso_blend.nested_choice(grid)["dragnet"] == b
