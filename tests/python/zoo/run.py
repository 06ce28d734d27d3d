"""One zoo model through the whole path: extracted with a dynamic batch,
saved as .opg, loaded by the C++ Session and run at each of its batch sizes
from that one file. Shared by tests/python/test_zoo.py and report.py."""

import numpy as np
import torch

import opgraph
from opgraph.ir import extract_ir


def dynamic_batch(inputs):
    return tuple({0: torch.export.Dim.AUTO} for _ in inputs)


def run_on_session(entry, folder):
    """[(batch, Session output, PyTorch output)] for each of the entry's batch sizes."""
    model = entry.build()
    inputs = entry.inputs(entry.batches[-1])
    path = folder / f"{entry.name}.opg"
    extract_ir(model, inputs, dynamic_shapes=dynamic_batch(inputs)).save(path)
    session = opgraph.Session(str(path))
    results = []
    for batch in entry.batches:
        inputs = entry.inputs(batch)
        with torch.no_grad():
            expected = model(*inputs).numpy()
        (actual,) = session.run(*inputs)
        results.append((batch, actual, expected))
    return results


def max_error(actual, expected):
    return float(np.abs(actual.astype(np.float64) - expected).max()) if actual.shape == expected.shape else np.inf
