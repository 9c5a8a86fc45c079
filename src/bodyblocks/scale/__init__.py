"""Past one machine: bodyblocks extract on Ray Data (pipeline.py), WARC and page files in, Parquet shards out.

    from bodyblocks.scale import read_pages, extract_dataset, write_shards, run_ray

The WARC reader and the shard writer it uses are the single-process run's (batch/warc.py, batch/columnar.py);
ray and pyarrow are imported when a function here runs (the `scale` extra: pip install 'bodyblocks[scale]').
`datatrove_step.BodyblocksExtractor` is bodyblocks as a step of a datatrove pipeline and `hf_map.BodyblocksMap` a
`datasets.map` function over a Hugging Face dataset of pages (each imported on its own).
"""

from bodyblocks.scale.pipeline import RayOptions, RaySummary, extract_dataset, read_pages, run_ray, write_shards

__all__ = ["RayOptions", "RaySummary", "extract_dataset", "read_pages", "run_ray", "write_shards"]
