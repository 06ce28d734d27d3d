"""aten::lstm.input and aten::gru.input, the ops nn.LSTM and nn.GRU call: against their references and PyTorch
(the ATen ops and the modules) over layers, directions, layouts, biases, projections and batch and hidden
sizes, on one thread and on two (where a direction's timesteps are shared); their errors; and models whose
extracted graphs keep each RNN one node and run on the Session as in PyTorch."""

import numpy as np
import pytest
import torch
from oracle import assert_schema_is_aten, check_op
from torch import nn
from zoo.stacks import Recurrent

import opgraph
from opgraph.ir import extract_ir
from opgraph.ops import call

aten = torch.ops.aten
DTYPES = [np.float32, np.float64]
# Products over a few hundred terms, in float32, in another order than PyTorch's.
TOLERANCE = {np.float32: dict(rtol=1e-4, atol=2e-5), np.float64: None}
GATES = {"lstm": 4, "gru": 3}


def random(shape, dtype, rng, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def make_params(cell, input_size, hidden, layers, bidirectional, has_biases, dtype, rng, proj=0):
    """ATen's flat params: per layer and direction w_ih, w_hh[, b_ih, b_hh][, w_hr], scaled as nn.LSTM's so that
    large states keep their gates off saturation."""
    gates, out = GATES[cell] * hidden, proj or hidden
    scale = min(0.4, 1.5 / hidden**0.5)
    directions = 2 if bidirectional else 1
    params = []
    for layer in range(layers):
        for _ in range(directions):
            inputs = input_size if layer == 0 else directions * out
            params += [random((gates, inputs), dtype, rng, scale), random((gates, out), dtype, rng, scale)]
            if has_biases:
                params += [random((gates,), dtype, rng, scale), random((gates,), dtype, rng, scale)]
            if proj:
                params.append(random((proj, hidden), dtype, rng, scale))
    return params


def check_rnn(
    cell,
    steps,
    batch,
    input_size,
    hidden,
    layers=1,
    bidirectional=False,
    batch_first=False,
    has_biases=True,
    dtype=np.float32,
    proj=0,
    train=False,
    dropout=0.0,
    seed=0,
):
    """Runs the op on random inputs and a nonzero initial state; checks fast kernel, reference and ATen agree."""
    rng = np.random.default_rng(seed)
    directions = 2 if bidirectional else 1
    x = random((batch, steps, input_size) if batch_first else (steps, batch, input_size), dtype, rng)
    h0 = random((layers * directions, batch, proj or hidden), dtype, rng)
    params = make_params(cell, input_size, hidden, layers, bidirectional, has_biases, dtype, rng, proj)
    attrs = dict(
        has_biases=has_biases,
        num_layers=layers,
        dropout=dropout,
        train=train,
        bidirectional=bidirectional,
        batch_first=batch_first,
    )
    flags = tuple(attrs.values())
    if cell == "lstm":
        c0 = random((layers * directions, batch, hidden), dtype, rng)
        return check_op(
            "aten::lstm.input",
            lambda x, hx, p: aten.lstm.input(x, hx, p, *flags),
            x,
            [h0, c0],
            params,
            tolerance=TOLERANCE[dtype],
            **attrs,
        )
    return check_op(
        "aten::gru.input",
        lambda x, hx, p: aten.gru.input(x, hx, p, *flags),
        x,
        h0,
        params,
        tolerance=TOLERANCE[dtype],
        **attrs,
    )


@pytest.fixture(params=[1, 2], ids=["1-thread", "2-threads"])
def threads(request):
    before = opgraph.get_num_threads()
    opgraph.set_num_threads(request.param)
    yield request.param
    opgraph.set_num_threads(before)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layers", [1, 2, 3])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq-first", "batch-first"])
@pytest.mark.parametrize("has_biases", [True, False], ids=["biases", "no-biases"])
@pytest.mark.parametrize("steps, batch, input_size, hidden", [(5, 3, 4, 7), (1, 1, 3, 16), (4, 1, 5, 1)])
def test_against_aten(cell, steps, batch, input_size, hidden, layers, bidirectional, batch_first, has_biases, dtype):
    check_rnn(cell, steps, batch, input_size, hidden, layers, bidirectional, batch_first, has_biases, dtype)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("batch, hidden", [(1, 151), (3, 160), (2, 37)])
def test_large_states_on_one_and_two_threads(cell, batch, hidden, bidirectional, dtype, threads):
    """Hidden sizes whose timesteps two threads share (an odd one splits unevenly), and the two directions of a
    bidirectional layer, each on a thread of its own."""
    check_rnn(cell, 6, batch, 9, hidden, 2, bidirectional, batch_first=True, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("has_biases", [True, False], ids=["biases", "no-biases"])
@pytest.mark.parametrize("proj", [1, 3])
def test_lstm_projections(proj, layers, bidirectional, has_biases, dtype):
    """proj_size: h = W_hr (o * tanh(c)), so h_0 and h_n hold proj_size values and c_0 and c_n hidden_size."""
    check_rnn("lstm", 4, 2, 3, 6, layers, bidirectional, has_biases=has_biases, dtype=dtype, proj=proj)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_empty_batch(cell):
    output = check_rnn(cell, 3, 0, 4, 5, 2, True)
    assert output[0].shape == (3, 0, 10)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_train_without_dropout_between_layers_is_inference(cell):
    """train=True only matters through dropout, which acts between layers: none at 0.0 or with one layer."""
    check_rnn(cell, 3, 2, 4, 5, layers=2, train=True)
    check_rnn(cell, 3, 2, 4, 5, layers=1, train=True, dropout=0.5)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_strided_input(cell):
    rng = np.random.default_rng(3)
    x = random((2, 6, 4), np.float32, rng)[:, ::2].transpose(1, 0, 2)  # [3, 2, 4], not contiguous
    h0 = random((1, 2, 5), np.float32, rng)
    params = make_params(cell, 4, 5, 1, False, True, np.float32, rng)
    flags = dict(has_biases=True, num_layers=1, dropout=0.0, train=False, bidirectional=False, batch_first=False)
    if cell == "lstm":
        hx = [h0, random((1, 2, 5), np.float32, rng)]
        check_op(
            "aten::lstm.input",
            lambda x, hx, p: aten.lstm.input(x, hx, p, *flags.values()),
            x,
            hx,
            params,
            tolerance=TOLERANCE[np.float32],
            **flags,
        )
    else:
        check_op(
            "aten::gru.input",
            lambda x, hx, p: aten.gru.input(x, hx, p, *flags.values()),
            x,
            h0,
            params,
            tolerance=TOLERANCE[np.float32],
            **flags,
        )


@pytest.mark.parametrize("kind, proj", [("LSTM", 0), ("LSTM", 4), ("GRU", 0)])
def test_against_the_modules(kind, proj):
    """nn.LSTM / nn.GRU called with an initial state, and the op called with the module's flat weights."""
    torch.manual_seed(0)
    extra = dict(proj_size=proj) if proj else {}
    module = getattr(nn, kind)(6, 8, num_layers=2, bidirectional=True, batch_first=True, **extra).eval()
    x = torch.randn(3, 5, 6)
    h0 = torch.randn(4, 3, proj or 8)
    hx = (h0, torch.randn(4, 3, 8)) if kind == "LSTM" else h0
    with torch.no_grad():
        output, state = module(x, hx)
    expected = [output, *(state if kind == "LSTM" else (state,))]
    params = [w.detach().numpy() for w in module._flat_weights]
    attrs = dict(has_biases=True, num_layers=2, dropout=0.0, train=False, bidirectional=True, batch_first=True)
    if kind == "LSTM":
        got = call("aten::lstm.input", x.numpy(), [hx[0].numpy(), hx[1].numpy()], params, **attrs)
    else:
        got = call("aten::gru.input", x.numpy(), h0.numpy(), params, **attrs)
    for g, want in zip(got, expected):
        np.testing.assert_allclose(g, want.numpy(), **TOLERANCE[np.float32])


def lstm_inputs(hidden=5, params=None, h_shape=(1, 2, 5), c_shape=(1, 2, 5), dtype=np.float32, x_shape=(3, 2, 4)):
    rng = np.random.default_rng(0)
    x = random(x_shape, dtype, rng)
    hx = [random(h_shape, np.float32, rng), random(c_shape, np.float32, rng)]
    return [x, hx, params if params is not None else make_params("lstm", 4, hidden, 1, False, True, np.float32, rng)]


FLAGS = dict(has_biases=True, num_layers=1, dropout=0.0, train=False, bidirectional=False, batch_first=False)
PARAMS = make_params("lstm", 4, 5, 1, False, True, np.float32, np.random.default_rng(1))
GRU_PARAMS = make_params("gru", 4, 5, 1, False, True, np.float32, np.random.default_rng(1))


@pytest.mark.parametrize(
    "op, inputs, attrs, message",
    [
        (
            "aten::lstm.input",
            lstm_inputs(params=PARAMS[:3]),
            FLAGS,
            r"params: expected 4 tensors \(1 layers x 1 directions x 4: w_ih, w_hh, b_ih, b_hh\), got 3",
        ),
        (
            "aten::lstm.input",
            lstm_inputs(),
            dict(FLAGS, num_layers=2),
            r"hx\[0\] \(h_0\): expected \[2, 2, 5\] \(num_layers \* directions, batch, hidden\), got float32\[1, 2, 5\]",
        ),
        (
            "aten::lstm.input",
            lstm_inputs(h_shape=(1, 3, 5), c_shape=(1, 3, 5)),
            FLAGS,
            r"hx\[0\] \(h_0\): expected \[1, 2, 5\]",
        ),
        (
            "aten::lstm.input",
            lstm_inputs(c_shape=(1, 2, 6)),
            FLAGS,
            r"params: expected 5 tensors \(1 layers x 1 directions x 5: w_ih, w_hh, b_ih, b_hh, w_hr\), got 4",
        ),
        (
            "aten::lstm.input",
            lstm_inputs(dtype=np.float64),
            FLAGS,
            r"hx\[0\] \(h_0\): expected float64\[num_layers \* directions, batch, hidden\] like input float64\[3, 2, 4\], "
            r"got float32\[1, 2, 5\]",
        ),
        (
            "aten::lstm.input",
            lstm_inputs(params=[PARAMS[0].astype(np.float64)] + PARAMS[1:]),
            FLAGS,
            r"params\[0\] \(w_ih of layer 0\): expected float32\[20, 4\], got float64\[20, 4\]",
        ),
        (
            "aten::lstm.input",
            lstm_inputs(params=[PARAMS[0][:, :3]] + PARAMS[1:]),
            FLAGS,
            r"params\[0\] \(w_ih of layer 0\): expected float32\[20, 4\], got float32\[20, 3\]",
        ),
        (
            "aten::lstm.input",
            lstm_inputs(),
            dict(FLAGS, num_layers=2, train=True, dropout=0.5),
            r"dropout: expected 0.0 with train=True \(opgraph runs inference: no dropout between layers\), got 0.5",
        ),
        (
            "aten::lstm.input",
            lstm_inputs(x_shape=(3, 4)),
            FLAGS,
            r"input: expected rank 3 \(\[seq, batch, features\]; "
            r"nn.LSTM adds the batch dim of an unbatched input\), got float32\[3, 4\]",
        ),
        (
            "aten::lstm.input",
            lstm_inputs(x_shape=(0, 2, 4)),
            FLAGS,
            r"input: expected a sequence of at least 1 step \(dim 0\), got float32\[0, 2, 4\]",
        ),
        (
            "aten::lstm.input",
            [np.ones((3, 2, 4), np.int64)] + lstm_inputs()[1:],
            FLAGS,
            r"input: expected float32 or float64, got int64\[3, 2, 4\]",
        ),
        ("aten::lstm.input", lstm_inputs(), dict(FLAGS, num_layers=0), r"num_layers: expected at least 1, got 0"),
        (
            "aten::gru.input",
            [random((3, 2, 4), np.float32, np.random.default_rng(0)), np.zeros((1, 2, 6), np.float32), GRU_PARAMS],
            FLAGS,
            r"params\[0\] \(w_ih of layer 0\): expected float32\[18, 4\], got float32\[15, 4\]",
        ),
        (
            "aten::gru.input",
            [random((3, 2, 4), np.float32, np.random.default_rng(0)), np.zeros((2, 2, 5), np.float32), GRU_PARAMS],
            dict(FLAGS, bidirectional=True),
            r"params: expected 8 tensors \(1 layers x 2 directions x 4: w_ih, w_hh, b_ih, b_hh\), got 4",
        ),
    ],
)
def test_errors_say_what_was_expected(op, inputs, attrs, message):
    with pytest.raises(opgraph.Error, match=rf"{op}: {message}"):
        call(op, *inputs, **attrs)


def test_lstm_needs_both_states():
    x, hx, params = lstm_inputs()
    with pytest.raises(opgraph.Error, match=r"aten::lstm.input: hx: expected 2 tensors \(h_0 and c_0\), got 1"):
        call("aten::lstm.input", x, hx[:1], params, **FLAGS)


@pytest.mark.parametrize("op", ["lstm", "gru"])
def test_schema_is_aten(op):
    assert_schema_is_aten(op, "input")


class Speech(nn.Module):
    """A bidirectional LSTM with projections into a GRU, batch first, and the GRU's final state."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(10, 24, num_layers=2, bidirectional=True, batch_first=True, proj_size=8)
        self.gru = nn.GRU(16, 160, batch_first=True)
        self.head = nn.Linear(160, 3)

    def forward(self, x):
        y, _ = self.lstm(x)
        z, h = self.gru(y)
        return self.head(z), h


class Unbatched(nn.Module):
    """An LSTM over one sequence without a batch dim, which nn.LSTM adds around the op."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 6)

    def forward(self, x):
        return self.lstm(x)[0]


@pytest.mark.parametrize(
    "model, shape, rnns",
    [
        (Speech, (2, 7, 10), {"aten::lstm.input": 1, "aten::gru.input": 1}),
        # One sequence: each step's product is one row times a packed weight,
        # the GRU's wide enough for two threads to share.
        (Speech, (1, 7, 10), {"aten::lstm.input": 1, "aten::gru.input": 1}),
        (Unbatched, (5, 4), {"aten::lstm.input": 1}),
        (lambda: Recurrent("LSTM"), (3, 9, 12), {"aten::lstm.input": 1}),
        (lambda: Recurrent("GRU"), (3, 9, 12), {"aten::gru.input": 1}),
    ],
    ids=["speech", "speech-one-sequence", "unbatched", "zoo-lstm", "zoo-gru"],
)
def test_models_keep_each_rnn_one_node_and_run_on_the_session(model, shape, rnns, threads):
    torch.manual_seed(0)
    module, x = model().eval(), torch.randn(shape)
    ir = extract_ir(module, (x,))
    kinds = [node.op_type for node in ir.nodes]
    assert {kind: kinds.count(kind) for kind in rnns} == rnns, kinds
    with torch.no_grad():
        expected = module(x)
    expected = expected if isinstance(expected, tuple) else (expected,)
    session = ir.to_session()
    for _ in range(2):  # the second run on the weights the first one prepared
        for got, want in zip(session.run(x.numpy()), expected):
            np.testing.assert_allclose(got, want.numpy(), **TOLERANCE[np.float32])
