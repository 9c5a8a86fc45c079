"""Training: datasets -> block labels -> cached pages -> learned parts -> tuned rule and blend.

Imports classify, extraction and loading (the parts it trains), never evaluation or the command line.

  datasets.py  the shared dataset layout and plain folders of pages
  labels.py    gold text -> block labels (alignment)
  splits.py    grouped train/val/test splits (data/splits)
  cache.py     processed pages: blocks, labels, per dataset
  data.py      labelled pages by split for a DataConfig
  loop.py      the block classifier's training loop
  gbt.py       the boosted trees' training
  tune.py      the decision rule and the ensemble's blend, tuned on validation
  ship.py      a trained checkpoint made into a shipped one
  oracle.py    the best text a segmentation allows (labels as predictions)
  synth.py     a synthetic corpus in the shared layout (tests, demos)
"""
