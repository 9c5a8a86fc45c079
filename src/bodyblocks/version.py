"""The package's version, in a leaf module that every layer may import (the package root imports the layers,
so no module under it imports the root). pyproject.toml's version is the same (tests/test_architecture.py)."""

__version__ = "0.1.0"
