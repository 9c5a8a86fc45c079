"""builder._Builder._make_block passes Block's fields by position (keywords cost 3% of the segmenter's time): each
argument is a local named as its field, and this checks that the names come in Block's field order."""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import fields

from bodyblocks.page.builder import _Builder
from bodyblocks.types import Block


def test_make_block_passes_every_field_by_its_name_in_field_order() -> None:
    tree = ast.parse(textwrap.dedent(inspect.getsource(_Builder._make_block)))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id == "Block"]
    assert len(calls) == 1
    call = calls[0]
    assert not call.keywords
    assert all(isinstance(a, ast.Name) for a in call.args)
    names = [a.id for a in call.args]  # type: ignore[attr-defined]
    required = [f.name for f in fields(Block) if f.name != "marks"]  # marks: set by _flush when a block has any
    assert names == required
