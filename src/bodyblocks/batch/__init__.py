"""Batch extraction (`bodyblocks extract`): inputs -> workers -> classification -> outputs and report.

  inputs.py     which pages: files, folders, dataset folders, URL lists (Job)
  worker.py     read and parse each page under a time limit (in worker processes)
  scheduler.py  parsed pages classified in groups, in input order, the forward pass overlapped
  outputs.py    each page's file and report line; report.json
  journal.py    the folder's append-only record of every run, and its lock
  system.py     heap memory handed back (cores and torch threads: bodyblocks.runtime.cores)
  runner.py     run_batch: the stages together
  review.py     review pages: a page's blocks with what was kept
"""

from bodyblocks.batch.inputs import Job, iter_jobs, stem_of
from bodyblocks.batch.outputs import Totals, render
from bodyblocks.batch.runner import BatchOptions, run_batch
from bodyblocks.batch.system import release_free_memory
from bodyblocks.runtime.cores import default_threads, usable_cores

__all__ = ["BatchOptions", "Job", "Totals", "default_threads", "iter_jobs", "release_free_memory", "render",
           "run_batch", "stem_of", "usable_cores"]
