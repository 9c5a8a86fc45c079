"""What HTML elements are, as a browser lays them out: one definition for the segmenter and the baselines.

Kept apart from logic (segment.py, baselines/) so that the two cannot drift: the heuristic's vote compares
their answers block by block, so they must agree on what is visible and where a line ends.
"""

from __future__ import annotations

# Elements that start a new line of text (a block box in a browser); everything else is inline and merges
# with its neighbours. (The segmenter joins the cells of a data-table row into one line: walk._boundary.)
BLOCK_TAGS = frozenset(
    "address article aside blockquote body caption center dd details dialog dir div dl dt fieldset "
    "figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr html li main menu nav ol p pre "
    "section summary table tbody td tfoot th thead tr ul legend noframes frameset".split()
)
# Elements whose subtree a browser does not display as page text: scripts and styles, embedded documents and
# media, form controls. (<object> is not here: Chromium shows its fallback content. A <button> that a missing
# </button> made swallow part of the page is displayed, and the segmenter walks it: walk._skip.)
INVISIBLE_TAGS = frozenset(
    "script style noscript template iframe svg head embed canvas audio video select option "
    "datalist input textarea button map area param source track frame".split()
)
HEADING_LEVELS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
HEADING_TAGS = frozenset(HEADING_LEVELS)
PRE_TAGS = frozenset(["pre", "textarea", "listing", "plaintext"])  # white space kept as written

# The baselines' view (baselines/), as they were tuned and as the heuristic's vote was weighted in the shipped
# ensemble. It differs from a browser's in three tags: <object> is dropped with its fallback content, and
# <option> and <input> are kept (an <option> as a line of its own). Taking the browser's view changes the
# vote on 3 of 1,000 dataset pages (python -m benchmarks.identical_output): do that with a re-tuned ensemble.
BASELINE_INVISIBLE_TAGS = (INVISIBLE_TAGS - {"option", "input"}) | {"object"}
BASELINE_BLOCK_TAGS = BLOCK_TAGS | {"option"}
