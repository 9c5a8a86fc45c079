"""Metrics on hand-made gold/extraction pairs: identical, disjoint and partial, Latin and CJK."""

from __future__ import annotations

import pytest

from bodyblocks.metrics import (
    THRESHOLDS,
    PageScore,
    accuracy,
    accuracy_curve,
    levenshtein_ratio,
    line_found,
    line_recall,
    score_page,
    snippet_counts,
    squash,
    summarize,
    token_prf,
    tokens,
)

LATIN = "The quick brown fox\njumps over the lazy dog."
CJK = "北京今天天气很好。\n市民纷纷外出踏青。"


def test_squash_removes_all_white_space() -> None:
    assert squash(" a b\tc\n d\u3000e\u00a0f ") == "abcdef"


@pytest.mark.parametrize("gold", [LATIN, CJK])
def test_identical_texts_score_one(gold: str) -> None:
    assert levenshtein_ratio(gold, gold) == 1.0
    assert token_prf(gold, gold) == (1.0, 1.0, 1.0)
    assert line_recall(gold, gold) == 1.0


def test_white_space_does_not_change_the_ratio() -> None:
    assert levenshtein_ratio("a b c\nd", "abcd") == 1.0
    assert levenshtein_ratio("北京 天气", "北京\n\n天气") == 1.0


def test_disjoint_texts_score_zero() -> None:
    assert levenshtein_ratio("abc", "xyz") == 0.0
    assert levenshtein_ratio("北京天气", "上海下雨") == 0.0
    assert token_prf(LATIN, "completely unrelated words") == (0.0, 0.0, 0.0)
    assert token_prf(CJK, "上海下雨") == (0.0, 0.0, 0.0)
    assert line_recall(LATIN, "completely unrelated words") == 0.0


def test_partial_ratio_is_the_indel_similarity() -> None:
    # "abcd" vs "ab": 2 deletions over 6 characters -> 1 - 2/6
    assert levenshtein_ratio("abcd", "ab") == pytest.approx(4 / 6)
    # one substitution = one deletion + one insertion: 1 - 2/8
    assert levenshtein_ratio("abcd", "abxd") == pytest.approx(0.75)
    assert levenshtein_ratio("北京天气", "北京") == pytest.approx(4 / 6)


def test_empty_strings() -> None:
    assert levenshtein_ratio("", "") == 1.0
    assert levenshtein_ratio("abc", "") == 0.0
    assert token_prf("abc", "") == (0.0, 0.0, 0.0)


def test_tokens_cjk_characters_and_lowercase_words() -> None:
    assert tokens("Hello, WORLD 北京。") == ["hello", "world", "北", "京"]
    assert tokens("日本語のテキスト") == ["日", "本", "語", "の", "テ", "キ", "ス", "ト"]
    assert tokens("ΑΘΗΝΑ Москва") == ["αθηνα", "москва"]
    assert tokens("foo北京bar") == ["foo", "北", "京", "bar"]


def test_token_prf_counts_bags_not_sets() -> None:
    p, r, f = token_prf("the the cat", "the cat cat dog")
    # overlap = min(the:2,1) + min(cat:1,2) = 2; pred 4 tokens, gold 3 tokens
    assert (p, r) == pytest.approx((2 / 4, 2 / 3))
    assert f == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))


def test_token_prf_partial_cjk() -> None:
    p, r, _ = token_prf("北京天气", "北京下雨了")
    assert (p, r) == pytest.approx((2 / 5, 2 / 4))


def test_line_recall_partial() -> None:
    gold = "First paragraph of the story.\nSecond paragraph here.\nThird one is missing."
    pred = "First paragraph of the story.\nSecond paragraph here."
    assert line_recall(gold, pred) == pytest.approx(2 / 3)
    assert line_recall(CJK, "北京今天天气很好。") == pytest.approx(0.5)


def test_line_found_tolerates_small_differences_in_long_lines_only() -> None:
    hay = squash("Menu Home The quick brown fox jumps over the lazy dog! Footer")
    assert line_found("The quick brown fox jumps over the lazy dog.", hay)
    assert line_found("The quick brown fax jumps over the lazy dog.", hay)  # one typo
    assert not line_found("A slow red fox walks under an active cat.", hay)
    assert not line_found("Hom!", hay)  # short lines must match exactly
    assert line_found("Home", hay)


def test_line_found_is_not_fooled_by_a_short_extraction_inside_a_long_line() -> None:
    assert not line_found("The quick brown fox jumps over the lazy dog.", squash("lazy dog"))


def test_snippet_counts() -> None:
    snippets = {"with": ["quick brown", "not there"], "without": ["Footer", "Cookie"]}
    pred = "The quick  brown fox\nFooter"
    assert snippet_counts(snippets, pred) == (1, 1, 1, 1)
    assert snippet_counts(None, pred) == (0, 0, 0, 0)


def test_score_page_skips_empty_gold_but_keeps_snippets() -> None:
    s = score_page("  \n ", "anything", {"with": ["anything"], "without": []})
    assert not s.has_gold and s.ratio is None and s.token_f1 is None
    assert s.snippet_tp == 1 and s.has_snippets
    assert not score_page(None, "x").has_gold


def test_accuracy_thresholds_are_inclusive() -> None:
    ratios = [0.9, 0.85, 0.7, 0.5]
    assert accuracy(ratios, 0.90) == 0.25
    assert accuracy(ratios, 0.70) == 0.75
    assert accuracy([0.8999999999999999], 0.90) == 1.0  # float noise at the boundary
    assert accuracy([], 0.9) == 0.0
    curve = accuracy_curve(ratios)
    assert curve["0.50"] == 1.0 and curve["1.00"] == 0.0 and len(curve) == 51


def test_summarize_counts_and_means() -> None:
    scores = [
        score_page(LATIN, LATIN),
        score_page(CJK, "上海下雨"),
        score_page("", "whatever"),
        score_page(None, "x", {"with": ["x"], "without": ["y"]}),
    ]
    out = summarize(scores)
    assert (out["pages"], out["scored"], out["skipped_no_gold"]) == (4, 2, 2)
    assert out["mean_ratio"] == pytest.approx(0.5)
    for t in THRESHOLDS:
        assert out[f"acc@{t:.2f}"] == 0.5
    assert out["token_f1"] == pytest.approx(0.5)
    assert out["snippet_pages"] == 1 and out["snippet_precision"] == 1.0 and out["snippet_recall"] == 1.0


def test_summarize_of_nothing() -> None:
    out = summarize([PageScore(False)])
    assert out["scored"] == 0 and out["mean_ratio"] is None and out["acc@0.90"] is None
    assert out["snippet_precision"] is None
