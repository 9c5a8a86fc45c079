"""Labelling pages by hand: block labels keyed by xpath (store.py) and the local web page that makes them
(server.py, ui.py; `bodyblocks annotate DATASET`)."""
