"""The parts of the hostile corpus (`python -m benchmarks.hostile_corpus`, the driver that builds, runs and judges).

  content.py        what its pages say (the article with a numbered sentence) and text helpers; imports no benchmark
  cases.py          one input the run must account for, and the checks of an ok page
  folders.py        folders of any depth made, walked and removed without recursion; snapshots
  inputs.py         the inputs: hostile files and good pages, a dataset folder, a URL list (Corpus)
  judge.py          report lines matched to the cases and judged; outputs outside --out
  reruns.py         scenarios of more than one run on the same inputs
  other_attacks.py  review links, annotate's writes, bad checkpoints, Ctrl-C

benchmarks/attacks/ modules use content.py only; nothing here imports the driver or benchmarks/attacks/.
"""
