"""Every model of the zoo (tests/python/zoo) is extracted with a dynamic batch,
saved as .opg, loaded by the C++ Session and run at two batch sizes from the
one file, against the model in PyTorch."""

import numpy as np
import pytest
from zoo import ZOO
from zoo.run import run_on_session

MODELS = {model.name: model for model in ZOO}


@pytest.mark.parametrize("name", MODELS)
def test_runs_on_the_session_like_pytorch(tmp_path, name):
    entry = MODELS[name]
    for batch, actual, expected in run_on_session(entry, tmp_path):
        assert actual.shape == expected.shape, f"{name} at batch {batch}"
        np.testing.assert_allclose(
            actual, expected, rtol=entry.tolerance, atol=entry.tolerance, err_msg=f"{name} at batch {batch}"
        )
