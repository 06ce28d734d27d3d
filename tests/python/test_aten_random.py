"""aten rand, randn, randperm and native_dropout: reproducible after
opgraph.manual_seed whatever the thread count, the same as their references
(the same generator on one thread), and distributed as they should be."""

import numpy as np
import pytest
import torch
from oracle import aten_schema

import opgraph
from opgraph.ops import call, call_reference

N = 100_000


@pytest.fixture(autouse=True)
def restore_threads():
    threads = opgraph.get_num_threads()
    yield
    opgraph.set_num_threads(threads)


def seeded(run, seed, *args, **attrs):
    opgraph.manual_seed(seed)
    return run(*args, **attrs)


CALLS = {
    "rand": ("aten::rand", (), dict(size=[N])),
    "randn": ("aten::randn", (), dict(size=[7, N // 7])),
    "rand-float64": ("aten::rand", (), dict(size=[N], dtype=torch.float64)),
    "randn-float64": ("aten::randn", (), dict(size=[N], dtype="float64")),
    "randperm": ("aten::randperm", (), dict(n=N)),
    "dropout": ("aten::native_dropout", (np.ones(N, np.float32),), dict(p=0.3, train=True)),
}


def as_tuple(result):
    return result if isinstance(result, tuple) else (result,)


@pytest.mark.parametrize("case", CALLS)
def test_reproducible_across_threads_and_reference(case):
    name, inputs, attrs = CALLS[case]
    opgraph.set_num_threads(1)
    first = as_tuple(seeded(call, 5, name, *inputs, **attrs))
    opgraph.set_num_threads(4)
    again = as_tuple(seeded(call, 5, name, *inputs, **attrs))
    reference = as_tuple(seeded(call_reference, 5, name, *inputs, **attrs))
    other = as_tuple(seeded(call, 6, name, *inputs, **attrs))
    for result in (again, reference):
        for got, want in zip(result, first):
            np.testing.assert_array_equal(got, want)
    assert not np.array_equal(other[-1], first[-1])


def test_calls_continue_the_stream():
    opgraph.manual_seed(11)
    a, b = call("aten::rand", size=[5]), call("aten::rand", size=[5])
    assert not np.array_equal(a, b)
    opgraph.manual_seed(11)
    np.testing.assert_array_equal(call("aten::rand", size=[10])[:5], a)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rand_is_uniform(dtype):
    x = seeded(call, 1, "aten::rand", size=[N], dtype=dtype)
    assert x.dtype == np.dtype(dtype) and x.shape == (N,)
    assert x.min() >= 0 and x.max() < 1
    assert abs(x.mean() - 0.5) < 0.005 and abs(x.var() - 1 / 12) < 0.002
    assert np.histogram(x, bins=10, range=(0, 1))[0].min() > 0.09 * N


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_randn_is_normal(dtype):
    x = seeded(call, 2, "aten::randn", size=[100, N // 100], dtype=dtype)
    assert x.dtype == np.dtype(dtype) and x.shape == (100, N // 100)
    assert abs(x.mean()) < 0.015 and abs(x.var() - 1) < 0.02
    assert abs(np.mean(np.abs(x) < 1) - 0.6827) < 0.01
    assert abs(np.mean(x**3)) < 0.05 and abs(np.mean(x**4) - 3) < 0.1


@pytest.mark.parametrize("n", [0, 1, 2, 17, N])
def test_randperm_is_a_permutation(n):
    p = seeded(call, 3, "aten::randperm", n=n)
    assert p.dtype == np.int64 and p.shape == (n,)
    np.testing.assert_array_equal(np.sort(p), np.arange(n))
    if n == N:
        assert np.mean(p == np.arange(n)) < 0.001  # shuffled, not near the identity


@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_randperm_dtype(dtype):
    p = seeded(call, 3, "aten::randperm", n=50, dtype=dtype)
    assert p.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(np.sort(p), np.arange(50))


def test_randperm_positions_are_uniform():
    counts = np.zeros((4, 4))
    opgraph.manual_seed(4)
    for _ in range(4000):
        counts[np.arange(4), call("aten::randperm", n=4)] += 1
    assert np.all(np.abs(counts - 1000) < 120)


@pytest.mark.parametrize("p", [0.0, 0.3, 0.9, 1.0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dropout_mask_and_scale(p, dtype):
    x = np.random.default_rng(0).standard_normal((10, N // 10)).astype(dtype)
    out, mask = seeded(call, 7, "aten::native_dropout", x, p=p, train=True)
    assert mask.dtype == np.bool_ and mask.shape == x.shape and out.dtype == x.dtype
    assert abs(mask.mean() - (1 - p)) < 0.005
    scale = 0 if p == 1 else 1 / (1 - p)
    np.testing.assert_allclose(out, x * mask * dtype(scale), rtol=1e-6)


@pytest.mark.parametrize("shape", [(3, 4), (), (0, 2)])
def test_dropout_outside_training_is_identity(shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    for run in (call, call_reference):
        out, mask = run("aten::native_dropout", x, p=0.5, train=False)
        want = torch.ops.aten.native_dropout.default(torch.from_numpy(x), 0.5, False)
        np.testing.assert_array_equal(out, want[0].numpy())
        np.testing.assert_array_equal(mask, want[1].numpy())


def test_dropout_train_none_trains():
    x = np.ones(1000, np.float64)
    out, mask = seeded(call, 8, "aten::native_dropout", x, p=0.5, train=None)
    assert 0.4 < mask.mean() < 0.6 and set(np.unique(out)) <= {0.0, 2.0}


def test_dropout_strided_input():
    x = np.random.default_rng(0).standard_normal((40, 30)).T
    out, mask = seeded(call, 9, "aten::native_dropout", x, p=0.2, train=True)
    np.testing.assert_allclose(out, x * mask / 0.8, rtol=1e-12)


def test_empty_and_scalar_shapes():
    assert seeded(call, 1, "aten::rand", size=[0, 3]).shape == (0, 3)
    assert seeded(call, 1, "aten::randn", size=[]).shape == ()


@pytest.mark.parametrize("name", ["rand", "randn", "randperm", "native_dropout"])
def test_schema_is_aten(name):
    assert str(opgraph.op_schema(f"aten::{name}")) == aten_schema(getattr(torch.ops.aten, name).default)


def test_errors():
    with pytest.raises(opgraph.Error, match=r"aten::rand: dtype: expected float32 or float64, got int64"):
        call("aten::rand", size=[3], dtype="int64")
    with pytest.raises(opgraph.Error, match=r"aten::randn: size: expected non-negative extents, got \[2, -1\]"):
        call("aten::randn", size=[2, -1])
    with pytest.raises(opgraph.Error, match=r"aten::rand: device: expected None or cpu, got"):
        call("aten::rand", size=[3], device="cuda")
    with pytest.raises(opgraph.Error, match=r"aten::randperm: n: expected a non-negative length, got -2"):
        call("aten::randperm", n=-2)
    with pytest.raises(opgraph.Error, match=r"aten::native_dropout: p: expected a probability in \[0, 1\], got 1.5"):
        call("aten::native_dropout", np.ones(3, np.float32), p=1.5, train=True)
    with pytest.raises(opgraph.Error, match=r"aten::native_dropout: input: expected float32 or float64, got int64"):
        call("aten::native_dropout", np.ones(3, np.int64), p=0.5, train=True)


def test_exported_graph_runs_on_a_session():
    """randperm's dtype default, ATen's ScalarType number 4, reaches the graph as int64."""
    from opgraph import ir

    class Model(torch.nn.Module):
        def forward(self, x):
            out, mask = torch.ops.aten.native_dropout(x, 0.5, True)
            return torch.randperm(9), out, mask

    x = torch.ones(4, 6)
    session = ir.extract_ir(Model(), (x,)).to_session()
    opgraph.manual_seed(3)
    permutation, out, mask = (np.asarray(r) for r in session.run(x.numpy()))
    assert permutation.dtype == np.int64
    np.testing.assert_array_equal(np.sort(permutation), np.arange(9))
    np.testing.assert_array_equal(out, mask * 2.0)
    opgraph.manual_seed(3)
    np.testing.assert_array_equal(np.asarray(session.run(x.numpy())[0]), permutation)
