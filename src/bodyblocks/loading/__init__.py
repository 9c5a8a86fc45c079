"""Loading: checkpoint folders -> a ready extractor, and the plan of a run.

  options.py       ExtractOptions: how a block extractor runs, one validated object
  checkpoints.py   checkpoint folders by kind, the shipped ones, load_extractor
  engines.py       what runs a model folder: ONNX Runtime where it has its export, else torch
  registry.py      every extractor by name (baselines, peers, trained)
  plan.py          what a run will do, decided once: extractor, checkpoint, engine, threads, batch size
  provenance.py    what outputs were made with: preset, model hash, the first line of `bodyblocks extract`
"""
