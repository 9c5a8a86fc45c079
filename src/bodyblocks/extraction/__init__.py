"""Extraction: a page segmented and annotated once, its blocks' P(body) blended, the decision rule applied.

  segmenting.py    segment_page, the one page path: a page segmented, annotated and voted on once, in one order
  extractor.py     BlockExtractor: the parts blended, the rule applied
  vote.py          the heuristic's vote on the segmenter's blocks
  prominence.py    a headline where the page names none (a short, prominent block above the body)
  kinds.py         page kinds the rule reads: a forum or Q&A thread, an error page
  roles.py         blocks on the article's page that are not its body: byline, standfirst, captions, comments
  role_cues.py     the role steps' cue data (words, class names, patterns), apart from their code
  headline.py      the page's headline: the block that matches its title, else one it shows as one
  decision.py      the decision rule: threshold, container, comments, headline, roles, error page, low confidence
"""
