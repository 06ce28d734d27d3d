"""Every model of the zoo (tests/python/zoo) is extracted with a dynamic batch,
saved as .opg, loaded by the C++ Session and run at two batch sizes from the
one file, against the model in PyTorch."""
import numpy as np
import pytest
import torch

import opgraph
from opgraph.ir import extract_ir
from zoo import ZOO

MODELS = {model.name: model for model in ZOO}


def dynamic_batch(inputs):
    return tuple({0: torch.export.Dim.AUTO} for _ in inputs)


@pytest.mark.parametrize("name", MODELS)
def test_runs_on_the_session_like_pytorch(tmp_path, name):
    entry = MODELS[name]
    model = entry.build()
    first, second = entry.batches
    inputs = entry.inputs(second)
    path = tmp_path / f"{name}.opg"
    extract_ir(model, inputs, dynamic_shapes=dynamic_batch(inputs)).save(path)
    session = opgraph.Session(str(path))
    for batch in (first, second):
        inputs = entry.inputs(batch)
        with torch.no_grad():
            expected = model(*inputs)
        (actual,) = session.run(*inputs)
        assert actual.shape == tuple(expected.shape), f"{name} at batch {batch}"
        np.testing.assert_allclose(actual, expected.numpy(), rtol=entry.tolerance, atol=entry.tolerance,
                                   err_msg=f"{name} at batch {batch}")
