"""fuselab's version: a leaf module, so the parts that stamp caches with it import nothing else."""
__version__ = "0.1.0"
