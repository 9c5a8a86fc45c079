"""Evaluation: extractors x datasets -> per-page scores -> tables, JSON, CSV, plots (evaluate.py, report.py).

Imports inference and training (datasets, splits), never the command line.
"""
