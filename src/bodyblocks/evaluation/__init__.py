"""Evaluation: extractors x datasets -> per-page scores -> tables, JSON, CSV, plots (evaluate.py, report.py).

Imports the extractors (loading) and training (datasets, splits), never the command line.
"""
