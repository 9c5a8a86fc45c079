"""`heuristic`: the eight-step pruning pipeline.

  1. decode the bytes (decode.py: BOM, declared charsets tried strictly, UTF-8, GB18030, cp1252);
  2. parse with libxml2's recovering HTML parser;
  3. drop script/style/noscript/iframe/svg and comments, then form/nav/aside/footer/header;
  4. prune containers whose class or id hits a negative word;
     steps 3 (form...header) and 4 never prune a container holding >= 3 paragraphs and > 35 % of the
     page's text: a missing </div> can pull the body into class="header", ASP.NET wraps pages in <form>;
  5. score candidate containers on their direct content:
     chars * (1 - 1.6 * link density) + 55 * min(paragraphs, 12) + a positive-class bonus;
  6. promote the best candidate to the ancestor that holds the rest of the body: climb while an
     ancestor's whole-subtree score beats the current one's by PROMOTE_GAIN;
  7. filter the chosen element's lines: headings need 2 characters, other lines 10;
  8. keep the title (og:title, <h1>, <title>) as its own channel.

Steps 2-7 are pruning.py's (parse_text, body_text), which the ensemble's vote runs on the segmenter's tree.
"""

from __future__ import annotations

from bodyblocks.baselines.dom import page_title, parse
from bodyblocks.baselines.pruning import body_text
from bodyblocks.types import Extraction


class HeuristicExtractor:
    """The eight-step pruning pipeline (see the module docstring)."""

    name = "heuristic"

    def extract(self, html: str | bytes, url: str | None = None) -> Extraction:
        """Body lines of the promoted best container; title as its own channel."""
        root, decoded = parse(html)  # 1. decode, 2. parse with recovery
        title = page_title(root)  # 8. read before steps 3-4 remove <head> and <header>
        text = body_text(root)
        return Extraction(text, title, self.name, decoded.encoding, no_body=not text, replaced=decoded.replaced,
                          guessed=decoded.guessed)


def heuristic_text(html: str | bytes) -> str:
    """The heuristic's body text of a page, without its title (the ensemble's vote: pruning.vote_text)."""
    return body_text(parse(html)[0])
