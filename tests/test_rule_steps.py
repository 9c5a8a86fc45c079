"""The shipped decision rule has only what ships; benchmarks/rule_steps.py turns its steps off for the ablations."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from benchmarks.rule_steps import STEPS, AblatedRule, ablated

from bodyblocks.extraction.decision import DecisionRule
from bodyblocks.page.segment import segment

PAGE = ("<html><head><title>Harbour works begin</title></head><body><main><article><h1>Harbour works begin</h1>"
        + "".join(f"<p>Paragraph {i} of the harbour story, with enough words to read as body text here.</p>"
                  for i in range(4))
        + "<figure><img src='a.jpg'><figcaption>Water covers Mill Street. (AP Photo/John Doe)</figcaption></figure>"
        "<div id='sidebar'><div class='widget'><p>Blurb: this site is supported by a friend of the harbour.</p></div>"
        "</div></article><section id='comments'><div class='comment'><p>Great article, thanks for writing it up.</p>"
        "</div></section></main></body></html>")


def test_the_shipped_rule_has_no_switch_of_an_ablation() -> None:
    shipped = {f.name for f in dataclasses.fields(DecisionRule)}
    assert set(STEPS) == {"captions", "repeated_posts", "comment_headings", "role_rescue", "sidebars", "key_points"}
    assert not shipped & set(STEPS)


def test_every_step_on_decides_as_the_shipped_rule_and_each_off_changes_its_part() -> None:
    doc = segment(PAGE)
    probs = np.array([0.05 if "comment" in b.tag_path else 0.9 for b in doc.blocks], np.float32)
    rule = DecisionRule(0.5, 0.5, rescue=0.15)
    shipped = rule.decide(doc, probs, "m")
    assert ablated(rule).decide(doc, probs, "m") == shipped
    assert "Mill Street" not in shipped.text and "Blurb" not in shipped.text and shipped.captions
    no_captions = ablated(rule, captions=False).decide(doc, probs, "m")
    assert "Mill Street" in no_captions.text and no_captions.captions == []
    assert "Blurb" in ablated(rule, sidebars=False).decide(doc, probs, "m").text
    again = ablated(ablated(rule, sidebars=False), captions=False)  # the switches already off stay off
    assert isinstance(again, AblatedRule) and not again.sidebars and not again.captions and again.rescue == 0.15


def test_an_unknown_step_is_refused() -> None:
    with pytest.raises(ValueError, match="no such step: sidebar"):
        ablated(DecisionRule(0.5, 0.5), sidebar=False)


def _marked_steps(function: object) -> list[int]:
    """The step numbers a function's comments mark (`# step 5`, `# steps 1-4`), ranges spelled out, in order."""
    import inspect
    import re

    marks = re.findall(r"#\s*steps?\s+(\d+)(?:-(\d+))?", inspect.getsource(function))  # type: ignore[arg-type]
    return [n for first, last in marks for n in range(int(first), int(last or first) + 1)]


def test_the_rule_steps_are_numbered_in_the_order_the_code_runs_them() -> None:
    import re

    from bodyblocks.extraction import decision

    listed = [int(n) for n in re.findall(r"^ {1,2}(\d+)\. ", decision.__doc__ or "", re.MULTILINE)]
    assert listed == list(range(1, len(listed) + 1)) and len(listed) >= 10
    assert _marked_steps(DecisionRule.keep) == [1, 2, 3, 4]
    assert _marked_steps(DecisionRule._decide) == list(range(1, len(listed)))  # every step but the last, in order
    assert _marked_steps(DecisionRule.decide) == [*range(1, len(listed)), len(listed)]  # _decide's, then the last
