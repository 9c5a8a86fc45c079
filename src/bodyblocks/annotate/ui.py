"""The labelling page that `bodyblocks annotate` serves: page.html beside this file (package data), one HTML
document with its script and style inline.

The page (the server's CSP allows inline script and style only, nothing is loaded from elsewhere):
  - the blocks of one page in reading order: text, tag path, the model's P(body); body blocks green, the
    current block outlined, selected blocks tinted, a block whose label differs from the model's marked;
  - keys and clicks: j/k move, space toggles, b/n set body / not body, m the model's label, u undo;
    c selects the current block's container (again: the next ancestor that holds more blocks, C narrows back),
    v starts a range that j/k extend, shift+click selects a range, Escape clears; the labelling keys then
    apply to the whole selection; ? shows the keys;
  - the side pane: the page as rendered by /render/<id> (sandboxed, no scripts), its blocks' elements (data-bb)
    painted from the labels; a click there jumps to and toggles that element's blocks;
  - saving: 1 s after the last change, before another page opens and when the tab is hidden or closed (a
    keepalive request), and with s / the save button; the done box marks the page done (d toggles it,
    D marks it done and opens the next page not done, } opens the next page not done);
  - resume: the page named by the URL's hash, else the first page not done; the cursor's block per page is
    remembered in localStorage.
Write requests carry the run's token (X-Bodyblocks-Token).
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files

AUTOSAVE_MS = 1000  # a change is saved this long after the last one



@cache
def _page() -> str:
    """page.html, read once."""
    return files(__package__).joinpath("page.html").read_text(encoding="utf-8")


def index_html(token: str) -> str:
    """The labelling page with this run's write token (a JS string literal)."""
    return _page().replace("__TOKEN__", json.dumps(token)).replace("__AUTOSAVE_MS__", str(AUTOSAVE_MS))
