"""benchmarks/page_selector.py: the page figures of the two answers, and the choice fitted on them."""

import math

import numpy as np
import pytest
from benchmarks import page_selector
from benchmarks.page_selector import FEATURES, PageRow, fit, page_features

from bodyblocks.metrics import score_page
from bodyblocks.types import Block


def _block(i: int, chars: int, links: int = 0) -> Block:
    return Block(i, "x" * chars, "p", "html/body/p", f"/html[1]/body[1]/p[{i + 1}]", 2, chars, links,
                 links / chars if chars else 0.0)


def test_page_features_measure_the_two_answers_against_each_other():
    blocks = [_block(0, 10, links=10), _block(1, 40), _block(2, 30), _block(3, 20, links=5)]
    probs = np.array([0.1, 0.9, 0.8, 0.3])
    kept = np.array([False, True, True, False])
    vote = np.array([0.0, 1.0, 0.0, 1.0], np.float32)
    f = dict(zip(FEATURES, page_features(blocks, probs, kept, vote, "a line of text\nand one more"), strict=True))
    assert f["log_chars_kept"] == pytest.approx(math.log1p(70))
    assert f["log_chars_voted"] == pytest.approx(math.log1p(60))
    assert f["overlap"] == pytest.approx(40 / 91)  # both 40, either 90 (+1)
    assert f["kept_voted"] == pytest.approx(40 / 71) and f["voted_kept"] == pytest.approx(40 / 61)
    assert f["p_voted"] == pytest.approx((0.9 * 40 + 0.3 * 20) / 60)
    assert f["p_kept"] == pytest.approx((0.9 * 40 + 0.8 * 30) / 70) and f["p_max"] == pytest.approx(0.9)
    assert f["links_kept"] == 0.0 and f["links_voted"] == pytest.approx(5 / 61)
    assert f["log_runs_kept"] == pytest.approx(math.log1p(1)) and f["log_runs_voted"] == pytest.approx(math.log1p(2))
    assert f["p_voted_dropped"] == pytest.approx(0.3) and f["log_blocks"] == pytest.approx(math.log1p(4))
    assert f["log_chars_answer"] == pytest.approx(math.log1p(21))  # white space not counted
    empty = page_features(blocks, probs, np.zeros(4, bool), np.zeros(4, np.float32), "")
    assert np.isfinite(empty).all() and empty[FEATURES.index("p_kept")] == 0.0


def test_the_fitted_choice_takes_the_heuristic_where_it_scores_better():
    rng = np.random.default_rng(0)
    n = len(FEATURES)
    x = rng.normal(size=(400, n))
    gain = np.where(x[:, 3] > 0.2, 0.3, -0.3) * rng.uniform(0.5, 1.0, 400)  # the overlap decides
    gain[:40] = 0.0  # ties teach nothing
    choice = fit(x, gain)
    test = rng.normal(size=(200, n))
    chosen = np.array([choice.prefers_heuristic(row) for row in test])
    assert (chosen == (test[:, 3] > 0.2)).mean() > 0.95
    with pytest.raises(ValueError, match="each answer"):
        fit(x, np.full(400, 0.1))
    # a page with no choice keeps the ensemble's answer, whatever the regression says
    sure = type("Sure", (), {"predict_proba": lambda self, z: np.array([[0.0, 1.0]])})()
    always = page_selector.Choice(np.zeros(n), np.ones(n), sure, 0.5)
    ours, theirs = score_page("a b c", "a b c"), score_page("a b c", "a")
    assert PageRow("en", None, ours, theirs).score(always) is ours
    assert PageRow("en", np.zeros(n), ours, theirs).score(always) is theirs
