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
