"""Inference: HTML -> blocks -> P(body) per block -> body text. Never imports training or evaluation.

  vote.py          the heuristic's vote on the segmenter's blocks
  model.py         the block Transformer: inputs, forward pass, checkpoints
  traced.py        its forward pass for one page, traced (CPU)
  model_scorer.py  the model as a part of an extractor: batches, forward passes on CPU or GPU
  gbt.py           the boosted trees: features, tree walks, checkpoints, GbtScorer
  decision.py      the decision rule: threshold, rescue, low confidence, no body
  blocks.py        BlockExtractor: the parts blended, the rule applied, in three steps
  checkpoints.py   checkpoint folders by kind, the shipped ones, load_extractor
  registry.py      every extractor by name (baselines, peers, trained)
  plan.py          what a run will do, decided once: extractor, checkpoint, engine, threads, batch size
"""
