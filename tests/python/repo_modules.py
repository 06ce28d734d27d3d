"""Python files of the repository outside the opgraph package (the fuzzer's
corpus maker, the bench programs), loaded by path for the tests that share
their code."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load(relative):
    """The module at ``relative`` (to the repository's root), executed."""
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
