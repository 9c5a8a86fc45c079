"""WordPress page builders' shortcodes left in a page's text: `[vc_row css=".vc_custom_1"]`, `[/vc_column]`,
`[et_pb_section fb_built="1"]`, `[fusion_builder_container …]`. A site that exports its posts without the builder's
plugin shows its layout markup as text; a reader skips it, so the segmenter drops it from block text.

Only the shortcode syntax of page builders is matched: an opening or closing bracket tag whose name starts with a
builder's prefix (SHORTCODE_PREFIXES), with attributes up to MAX_ATTRIBUTES characters and no bracket inside them.
Bracketed words of prose ("[citation needed]", "[1]", "[sic]", "[Editor's note: …]") have no such name and stay.
"""

from __future__ import annotations

import re

# Visual Composer / WPBakery, Divi, Avada, Enfold, Cornerstone, X, Shortcodes Ultimate, Flatsome, Themify,
# King Composer, Qode and its Elated/Mikado themes, WPBakery add-ons (Ultimate, Total)
SHORTCODE_PREFIXES = ("vc_", "et_pb_", "fusion_", "av_", "cs_", "x_", "su_", "ux_", "themify_", "kc_", "qode_",
                      "eltdf_", "edgtf_", "mkdf_", "ult_", "vcex_")
MAX_ATTRIBUTES = 2_000  # characters of a shortcode's attributes, at most (keeps the match linear)
SHORTCODE = re.compile(r"\[/?(?:" + "|".join(SHORTCODE_PREFIXES) + r")[a-z0-9_]{1,40}"
                       r"(?:\s[^\[\]\n]{0," + str(MAX_ATTRIBUTES) + r"})?\]", re.IGNORECASE)
_SPACES = re.compile(r" {2,}")
_CELL_GAP = re.compile(r" *\t *")  # a cell separator keeps no space beside it


def drop_shortcodes(text: str) -> str:
    """The text without page-builder shortcodes, the spaces they leave collapsed and its lines stripped, empty
    lines dropped ("" when nothing else was there)."""
    if "[" not in text:
        return text
    cut = SHORTCODE.sub(" ", text)
    if cut == text:
        return text
    lines = [_CELL_GAP.sub("\t", _SPACES.sub(" ", ln)).strip(" \t") for ln in cut.split("\n")]
    return "\n".join(ln for ln in lines if ln.strip())
