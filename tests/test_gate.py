"""The regression gate (benchmarks/gate.py): the shipped default on its pinned dataset pages may not fall below
the figures recorded in tests/gate/floors.json; and the comparison itself catches a drop."""

from __future__ import annotations

import copy
import json

import pytest
from benchmarks import gate


def test_the_comparison_names_a_figure_below_its_floor_and_a_changed_page_set() -> None:
    recorded = {"pages": {"src": ["a", "b"]}, "figures": {"src": {"token_f1": 0.9, "acc@0.90": 0.75}}}
    same = copy.deepcopy(recorded)
    assert gate.compare(recorded, same) == []
    within = copy.deepcopy(recorded)
    within["figures"]["src"]["token_f1"] = 0.899  # inside the tolerance for CPU numerics
    assert gate.compare(recorded, within) == []
    lower = copy.deepcopy(recorded)
    lower["figures"]["src"]["token_f1"] = 0.89
    assert gate.compare(recorded, lower) == ["src token_f1: 0.89 < recorded 0.9"]
    moved = copy.deepcopy(recorded)
    moved["pages"]["src"] = ["a", "c"]
    assert "pinned pages changed" in gate.compare(recorded, moved)[0]
    missing = copy.deepcopy(recorded)
    del missing["figures"]["src"]
    assert len(gate.compare(recorded, missing)) == 2


@pytest.mark.slow
@pytest.mark.datasets
def test_the_shipped_default_holds_its_recorded_figures_on_the_pinned_pages(shared_datasets) -> None:  # noqa: ANN001
    recorded = json.loads(gate.FLOORS.read_text(encoding="utf-8"))
    now = gate.measure()
    assert gate.compare(recorded, now) == [], now["figures"]


@pytest.mark.parametrize("page", gate.fixture_pages(), ids=lambda p: p.stem)
def test_the_segmenter_gives_each_tricky_page_its_recorded_blocks(page) -> None:  # noqa: ANN001
    recorded = json.loads(gate.recorded_blocks(page).read_text(encoding="utf-8"))
    assert gate.fixture_blocks(page) == recorded


def test_the_segmenter_gate_has_its_pages_and_they_say_what_they_test() -> None:
    pages = {p.stem for p in gate.fixture_pages()}
    assert {"script-before-html", "invisible-text", "gbk-undeclared", "app-shell-noscript"} <= pages
    blocks = {p.stem: json.loads(gate.recorded_blocks(p).read_text(encoding="utf-8")) for p in gate.fixture_pages()}
    text = {name: "\n".join(b.get("text", "") for b in bl) for name, bl in blocks.items()}
    assert "harbour works began" in text["script-before-html"].lower()
    assert "template text" not in text["invisible-text"] and "hidden by" not in text["invisible-text"]
    assert "第一步：提交申请。\n第二步：等待审核。" in text["invisible-text"]
    assert "会议研究部署了近期重点工作" in text["gbk-undeclared"]
    assert "ten seconds" in text["app-shell-noscript"]
