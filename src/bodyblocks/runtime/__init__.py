"""Process plumbing: worker pools, cores and threads, atomic files, optional extras."""
