"""The soak test (tests/soak/soak.py) in short: 500 Session runs and 5,000 op
calls, over the same models and ops as `make soak`, with resident memory flat
once warm and every result the same as the first with the same inputs."""

import importlib.util
from pathlib import Path

SOAK = Path(__file__).resolve().parents[1] / "soak" / "soak.py"


def load_soak():
    spec = importlib.util.spec_from_file_location("soak", SOAK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_short_soak_keeps_memory_flat_and_results_equal():
    figures = load_soak().soak(runs=500, calls=5_000)
    assert figures["calls"] == 5_000
    assert not figures["mismatches"], figures
    assert figures["growth_mb"] <= figures["tolerance_mb"], figures
