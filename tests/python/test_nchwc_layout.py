"""Channel-blocked activations between convolutions: the ops
(opgraph::conv2d_nchwc, opgraph::nchwc_to_nchw) against their references and
PyTorch, and the Session pass that uses them (use_nchwc_layout, part of
SessionOptions::optimize), whose graphs give the outputs of the graph as
written and of PyTorch."""

import json

import numpy as np
import pytest
import torch
from torch import nn

import opgraph
from opgraph.ir import extract_ir
from opgraph.ops import call, call_reference

# Sums of a few hundred float32 products, in another order than PyTorch's.
FLOAT32_SUMS = dict(rtol=1e-4, atol=1e-5)
BLOCKED = opgraph.get_cpu_capability() != "default"
needs_blocks = pytest.mark.skipif(
    not BLOCKED,
    reason="the pass runs only where oneDNN has blocked kernels "
    "(AVX2 or AVX-512); this CPU or OPGRAPH_CPU_CAPABILITY has neither",
)


def to_blocks(x, block):
    """[N, C, H, W] -> [N, ceil(C / block), H, W, block], zeros in the padding channels."""
    n, c, h, w = x.shape
    blocks = -(-c // block)
    padded = np.zeros((n, blocks * block, h, w), x.dtype)
    padded[:, :c] = x
    return np.ascontiguousarray(padded.reshape(n, blocks, block, h, w).transpose(0, 1, 3, 4, 2))


def from_blocks(x, channels):
    n, blocks, h, w, block = x.shape
    return np.ascontiguousarray(x.transpose(0, 1, 4, 2, 3).reshape(n, blocks * block, h, w)[:, :channels])


ACTIVATIONS = {"none": lambda y: y, "relu": torch.relu, "sigmoid": torch.sigmoid}


@pytest.mark.parametrize("block", [8, 16, "channels-last"])
@pytest.mark.parametrize("blocked_input", [False, True])
@pytest.mark.parametrize(
    "channels, out_channels, groups, kernel, stride, padding, padding_end, dilation",
    [
        (3, 32, 1, 3, 2, (1, 1), (1, 1), 1),  # a first layer: few input channels
        (24, 40, 1, 1, 1, (0, 0), (0, 0), 1),  # pointwise, neither a multiple of 16
        (32, 32, 32, 3, 2, (0, 0), (1, 1), 1),  # depthwise after TF "same" padding (a folded pad)
        (5, 5, 5, 3, 1, (2, 1), (0, 2), 2),  # depthwise, 5 channels, dilated, uneven padding
        (16, 12, 2, 3, 1, (1, 1), (1, 1), 1),  # grouped
    ],
)
@pytest.mark.parametrize("activation", ["none", "relu", "sigmoid"])
@pytest.mark.parametrize("residual", [False, True])
def test_conv2d_nchwc_matches_reference_and_pytorch(
    block,
    blocked_input,
    channels,
    out_channels,
    groups,
    kernel,
    stride,
    padding,
    padding_end,
    dilation,
    activation,
    residual,
):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, channels, 11, 9)).astype(np.float32)
    w = rng.standard_normal((out_channels, channels // groups, kernel, kernel)).astype(np.float32)
    b = rng.standard_normal(out_channels).astype(np.float32)
    attrs = dict(
        stride=[stride, stride],
        padding=list(padding),
        padding_end=list(padding_end),
        dilation=[dilation, dilation],
        groups=groups,
        block=block,
        activation=activation,
    )
    # Channels-last: one block of every channel, the input's own and the output's.
    input_block, block = (channels, out_channels) if block == "channels-last" else (block, block)
    attrs["block"] = block
    given = to_blocks(x, input_block) if blocked_input else x
    # torch.nn.functional.pad takes (left, right, top, bottom).
    padded = nn.functional.pad(torch.from_numpy(x), (padding[1], padding_end[1], padding[0], padding_end[0]))
    conv = nn.functional.conv2d(
        padded, torch.from_numpy(w), torch.from_numpy(b), stride=stride, dilation=dilation, groups=groups
    )
    shortcut = torch.randn(conv.shape, generator=torch.Generator().manual_seed(1)) if residual else None
    added = to_blocks(shortcut.numpy(), block) if residual else None
    fast, reference = (
        call("opgraph::conv2d_nchwc", given, w, b, added, **attrs),
        call_reference("opgraph::conv2d_nchwc", given, w, b, added, **attrs),
    )
    expected = ACTIVATIONS[activation](conv + shortcut if residual else conv)
    assert fast.shape == reference.shape == to_blocks(expected.numpy(), block).shape
    np.testing.assert_allclose(from_blocks(fast, out_channels), expected.numpy(), **FLOAT32_SUMS)
    np.testing.assert_allclose(from_blocks(reference, out_channels), expected.numpy(), **FLOAT32_SUMS)
    if out_channels % block:  # the padding channels hold zeros (sigmoid's too), which the next ops rely on
        assert not fast[:, -1, :, :, out_channels % block :].any()


@pytest.mark.parametrize("block", [8, 16, "channels-last"])
@pytest.mark.parametrize("channels", [1, 8, 21, 32, 100])
def test_nchwc_to_nchw_undoes_the_blocks(block, channels):
    block = channels if block == "channels-last" else block
    x = np.random.default_rng(1).standard_normal((3, channels, 4, 7)).astype(np.float32)
    for run in (call, call_reference):
        np.testing.assert_array_equal(run("opgraph::nchwc_to_nchw", to_blocks(x, block), channels=channels), x)


def test_bad_blocks_are_errors():
    x, w = np.zeros((1, 2, 5, 5, 16), np.float32), np.zeros((8, 24, 3, 3), np.float32)
    with pytest.raises(
        opgraph.Error, match=r"opgraph::conv2d_nchwc.*block: expected 8, 16 or the output's 8 channels, got 12"
    ):
        call("opgraph::conv2d_nchwc", x, w, None, block=12)
    with pytest.raises(opgraph.Error, match=r"input: expected \[N, 1, H, W, 16\] \(8 channels in blocks of 16\)"):
        call("opgraph::conv2d_nchwc", x, np.zeros((8, 8, 3, 3), np.float32), None)
    with pytest.raises(opgraph.Error, match=r"input: expected float32, got float64"):
        call("opgraph::conv2d_nchwc", np.zeros((1, 24, 5, 5)), w, None)
    with pytest.raises(
        opgraph.Error,
        match=r"input: expected \[N, C, H, W\] or a blocked \[N, C/B, H, W, B\], got float32\[24, 5, 5\]",
    ):
        call("opgraph::conv2d_nchwc", np.zeros((24, 5, 5), np.float32), w, None)
    with pytest.raises(opgraph.Error, match=r"weight: expected rank 4 \(out_channels, in_channels/groups, kh, kw\)"):
        call("opgraph::conv2d_nchwc", x, np.zeros((8, 24), np.float32), None)
    with pytest.raises(opgraph.Error, match=r"padding_end: expected 2 values of at least 0, got \[1, -1\]"):
        call("opgraph::conv2d_nchwc", np.zeros((1, 24, 5, 5), np.float32), w, None, padding_end=[1, -1])
    with pytest.raises(
        opgraph.Error,
        match=r"self: expected \[N, 3, H, W, 16\] \(40 channels in blocks of 16\), "
        r"got float32\[1, 2, 5, 5, 16\]",
    ):
        call("opgraph::nchwc_to_nchw", x, channels=40)
    with pytest.raises(opgraph.Error, match=r"channels: expected at least 1, got 0"):
        call("opgraph::nchwc_to_nchw", x, channels=0)
    with pytest.raises(opgraph.Error, match=r"self: expected a blocked \[N, C/B, H, W, B\]"):
        call("opgraph::nchwc_to_nchw", np.zeros((1, 2, 5, 5), np.float32), channels=2)


# ---- the pass --------------------------------------------------------------


def op_types(session):
    return [node["op_type"] for node in json.loads(session.graph.to_json())["nodes"]]


class InvertedResidual(nn.Module):
    """MobileNetV2's block as transformers writes it (TF "same" padding as an
    explicit pad before the strided depthwise convolution, ReLU6), then a
    residual block with activations that do not fuse; its middle value is also a graph output and feeds a
    pooling that reads the plain layout."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 24, 3, padding=1), nn.BatchNorm2d(24), nn.ReLU6())
        self.expand = nn.Conv2d(24, 72, 1)
        self.depthwise = nn.Conv2d(72, 72, 3, stride=2, groups=72)
        self.project = nn.Conv2d(72, 24, 1)
        self.residual = nn.Conv2d(24, 24, 3, padding=1)

    def forward(self, x):
        x = self.stem(x)
        y = nn.functional.relu6(self.expand(x))
        y = nn.functional.relu6(self.depthwise(nn.functional.pad(y, (0, 1, 0, 1))))
        y = self.project(y)
        z = nn.functional.hardswish(nn.functional.silu(self.residual(y)) + y)
        return z, y, nn.functional.adaptive_avg_pool2d(z, 1)


def model_and_sessions(model, x, **export):
    ir = extract_ir(model.eval(), (x,), **export)
    return ir.to_session(), ir.to_session(optimize=False)


@needs_blocks
def test_convolution_chains_keep_the_blocks():
    torch.manual_seed(0)
    model, x = InvertedResidual(), torch.randn(2, 3, 17, 17)
    session, plain = model_and_sessions(model, x)
    types = op_types(session)
    assert types.count("opgraph::conv2d_nchwc") == 5 and "aten::pad" not in types
    # Blocked: silu, the residual add and hardswish; converted back: y and z, each once, for the caller and the
    # pooling.
    assert types.count("opgraph::nchwc_to_nchw") == 2
    assert "aten::conv2d" not in types and "opgraph::conv2d" not in types
    got, written = session.run(x.numpy()), plain.run(x.numpy())
    with torch.no_grad():
        expected = model(x)
    for a, b, want in zip(got, written, expected):
        np.testing.assert_allclose(a, b, **FLOAT32_SUMS)
        np.testing.assert_allclose(a, want.numpy(), **FLOAT32_SUMS)


@needs_blocks
def test_dynamic_batch_runs_the_blocked_graph_at_every_size():
    torch.manual_seed(0)
    model = InvertedResidual().eval()
    batch = torch.export.Dim("batch", min=1, max=32)
    session, _ = model_and_sessions(model, torch.randn(2, 3, 17, 17), dynamic_shapes={"x": {0: batch}})
    assert "opgraph::conv2d_nchwc" in op_types(session)
    for size in (1, 5):
        x = torch.randn(size, 3, 17, 17)
        with torch.no_grad():
            expected = model(x)
        for got, want in zip(session.run(x.numpy()), expected):
            np.testing.assert_allclose(got, want.numpy(), **FLOAT32_SUMS)


class Bottlenecks(nn.Module):
    """Two of ResNet's bottleneck blocks: one that downsamples, its shortcut
    convolution run after the main branch and added in place (torchvision's
    order), and one adding its input (transformers' ResNetBottleNeckLayer
    computes the shortcut first)."""

    def __init__(self, kernel=3):
        super().__init__()
        pad = kernel // 2

        def branch(channels, width, out, stride):
            return nn.Sequential(
                nn.Conv2d(channels, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                nn.Conv2d(width, width, kernel, stride=stride, padding=pad, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                nn.Conv2d(width, out, 1, bias=False), nn.BatchNorm2d(out),
            )  # fmt: skip

        self.stem = nn.Conv2d(3, 24, kernel, padding=pad)
        self.first = branch(24, 16, 40, 2)
        self.downsample = nn.Sequential(nn.Conv2d(24, 40, 1, stride=2, bias=False), nn.BatchNorm2d(40))
        self.second = branch(40, 16, 40, 1)

    def forward(self, x):
        x = self.stem(x)
        out = self.first(x)
        out += self.downsample(x)
        out = nn.functional.relu(out)
        shortcut = out
        return nn.functional.relu(self.second(out) + shortcut)


@needs_blocks
def test_residual_connections_fold_into_the_convolutions():
    torch.manual_seed(0)
    model = Bottlenecks().eval()
    for module in model.modules():  # statistics that make the folded batch norms matter
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
    x = torch.randn(2, 3, 15, 15)
    session, plain = model_and_sessions(model, x)
    types = op_types(session)
    assert types.count("opgraph::conv2d_nchwc") == 8
    assert not any(t.startswith(("aten::add", "aten::relu")) for t in types), types
    (got,), (written,) = session.run(x.numpy()), plain.run(x.numpy())
    with torch.no_grad():
        expected = model(x)
    np.testing.assert_allclose(got, written, **FLOAT32_SUMS)
    np.testing.assert_allclose(got, expected.numpy(), **FLOAT32_SUMS)


@pytest.mark.skipif(
    opgraph.get_cpu_capability() != "avx512", reason="channels-last is AVX-512's layout; AVX2 keeps blocks of 8"
)
@pytest.mark.parametrize(
    "size, kernel, block", [(15, 5, "channels-last"), (424, 5, 16), (21, 3, 16), (15, 3, "channels-last")]
)
def test_activations_past_the_cache_and_winograd_convolutions_take_blocks_of_16(size, kernel, block):
    """Channels-last, unless the chain's largest activation (the stem's 24
    channels) takes more than 16 MiB (424 x 424 pixels take 16.5 MiB) or a
    convolution runs Winograd kernels (3x3 with unit strides over 400 output
    pixels or more, as the stem's at 21 x 21 and not at 15 x 15; their
    results are held to torch's here)."""
    torch.manual_seed(0)
    model, x = Bottlenecks(kernel).eval(), torch.randn(1, 3, size, size)
    session, plain = model_and_sessions(model, x)
    convolutions = [
        node for node in json.loads(session.graph.to_json())["nodes"] if node["op_type"] == "opgraph::conv2d_nchwc"
    ]
    blocks = {node["attrs"]["block"]["value"] for node in convolutions}
    assert blocks == ({16} if block == 16 else {16, 24, 40}), blocks  # channels-last: each tensor's channels
    (got,), (written,) = session.run(x.numpy()), plain.run(x.numpy())
    with torch.no_grad():
        expected = model(x)
    np.testing.assert_allclose(got, written, **FLOAT32_SUMS)
    np.testing.assert_allclose(got, expected.numpy(), **FLOAT32_SUMS)


class WideConvolutions(nn.Module):
    """A chain past the cache (the stem's 24 channels at 424 x 424), so on
    blocks of 16, with 3x3 convolutions of 256 channels: one with rows of 27
    pixels, one with rows of 7; and a sum of the first's output and a 1x1
    convolution's."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 24, 3, padding=1)
        self.widen = nn.Conv2d(24, 256, 1, stride=8)  # 53 x 53
        self.long_rows = nn.Conv2d(256, 256, 3, stride=2, padding=1)  # 27 x 27
        self.shortcut = nn.Conv2d(256, 256, 1, stride=2)
        self.short_rows = nn.Conv2d(256, 256, 3, stride=4, padding=1)  # 7 x 7

    def forward(self, x):
        x = torch.relu(self.widen(torch.relu(self.stem(x))))
        return self.short_rows(torch.relu(self.long_rows(x)) + self.shortcut(x))


@pytest.mark.skipif(opgraph.get_cpu_capability() != "avx512", reason="channels-last is AVX-512's layout")
def test_wide_convolutions_with_long_rows_run_channels_last_between_blocks():
    torch.manual_seed(0)
    model, x = WideConvolutions().eval(), torch.randn(1, 3, 424, 424)
    session, plain = model_and_sessions(model, x)
    nodes = json.loads(session.graph.to_json())["nodes"]
    blocks = [node["attrs"]["block"]["value"] for node in nodes if node["op_type"] == "opgraph::conv2d_nchwc"]
    assert blocks == [16, 16, 256, 16, 16], blocks
    # The sum's operands come in two layouts: it reads the plain ones.
    (add,) = [node for node in nodes if node["op_type"] == "aten::add.Tensor"]
    assert add["inputs"] == ["relu_2", "conv2d_3"], add
    (got,), (written,) = session.run(x.numpy()), plain.run(x.numpy())
    with torch.no_grad():
        expected = model(x)
    np.testing.assert_allclose(got, written, **FLOAT32_SUMS)
    np.testing.assert_allclose(got, expected.numpy(), **FLOAT32_SUMS)


class PooledStem(nn.Module):
    """ResNet's stem, conv 7x7 / 2 then max pooling 3x3 / 2 with padding 1,
    then poolings the blocked pooling takes (ceil mode's partial last window,
    a stride other than the kernel) and one it does not (dilated)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 24, 7, stride=2, padding=3)
        self.convs = nn.ModuleList(nn.Conv2d(24, 24, 3, padding=1) for _ in range(3))

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.stem(x)), 3, stride=2, padding=1)
        x = nn.functional.max_pool2d(self.convs[0](x), 2, ceil_mode=True)
        x = nn.functional.max_pool2d(self.convs[1](x), 3, stride=1)
        return self.convs[2](nn.functional.max_pool2d(x, 2, dilation=2))


@needs_blocks
@pytest.mark.parametrize("size", [33, 40])
def test_max_pooling_keeps_the_blocks(size):
    torch.manual_seed(0)
    model, x = PooledStem().eval(), torch.randn(2, 3, size, size)
    session, plain = model_and_sessions(model, x)
    types = op_types(session)
    assert types.count("opgraph::max_pool2d_nchwc") == 3 and types.count("aten::max_pool2d") == 1
    assert types.count("opgraph::conv2d_nchwc") == 3  # the last reads the dilated pooling's plain output
    (got,), (written,) = session.run(x.numpy()), plain.run(x.numpy())
    with torch.no_grad():
        expected = model(x)
    np.testing.assert_allclose(got, written, **FLOAT32_SUMS)
    np.testing.assert_allclose(got, expected.numpy(), **FLOAT32_SUMS)


@pytest.mark.parametrize("block", [8, 16, "channels-last"])
@pytest.mark.parametrize(
    "kernel, stride, padding, ceil_mode", [(3, 2, 1, False), (2, 2, 0, True), (3, 3, 1, True), (1, 1, 0, False)]
)
def test_max_pool2d_nchwc_matches_reference_and_pytorch(block, kernel, stride, padding, ceil_mode):
    x = torch.randn(2, 21, 11, 10, generator=torch.Generator().manual_seed(0))
    expected = nn.functional.max_pool2d(x, kernel, stride, padding, ceil_mode=ceil_mode).numpy()
    block = 21 if block == "channels-last" else block
    # The padding at the end that gives PyTorch's size, as the layout pass computes it.
    padding_end = [max(0, (expected.shape[2 + d] - 1) * stride + kernel - x.shape[2 + d] - padding) for d in range(2)]
    attrs = dict(kernel_size=[kernel] * 2, stride=[stride] * 2, padding=[padding] * 2, padding_end=padding_end)
    for run in (call, call_reference):
        got = run("opgraph::max_pool2d_nchwc", to_blocks(x.numpy(), block), **attrs)
        np.testing.assert_array_equal(from_blocks(got, 21), expected)


class LoneConvolutions(nn.Module):
    """A patch embedding after a zero pad, convolutions separated by an
    average pooling (which does not run on blocks), and an unbatched one: no
    convolution reads another's output directly or through blocked ops."""

    def __init__(self):
        super().__init__()
        self.patches, self.conv = nn.Conv2d(3, 8, 4, stride=4), nn.Conv2d(8, 8, 3)

    def forward(self, x, unbatched):
        y = self.conv(nn.functional.avg_pool2d(self.patches(nn.functional.pad(x, (1, 1, 2, 2))), 2))
        return y, self.conv(unbatched)


@needs_blocks
def test_lone_convolutions_keep_the_plain_layout():
    torch.manual_seed(0)
    model, inputs = LoneConvolutions().eval(), (torch.randn(2, 3, 30, 28), torch.randn(8, 6, 6))
    ir = extract_ir(model, inputs)
    session = ir.to_session()
    assert not any("nchwc" in t for t in op_types(session)) and "aten::pad" in op_types(session)
    with torch.no_grad():
        expected = model(*inputs)
    for got, want in zip(session.run(*[t.numpy() for t in inputs]), expected):
        np.testing.assert_allclose(got, want.numpy(), **FLOAT32_SUMS)


class PadsThatDoNotFold(nn.Module):
    """Pads a convolution cannot take as its padding: reflection, a fill of 1,
    a negative pad (a crop), and a zero pad another node reads too."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Conv2d(4, 4, 3), nn.Conv2d(4, 4, 3)

    def forward(self, x):
        x = self.a(x)
        y = self.b(nn.functional.pad(x, (1, 1, 1, 1), mode="reflect"))
        y = self.b(nn.functional.pad(y, (1, 1, 1, 1), value=1.0))
        y = self.b(nn.functional.pad(y, (-1, 2, 2, -1)))
        shared = nn.functional.pad(y, (2, 2, 2, 2))
        return self.b(shared) + shared[:, :, 2:-2, 2:-2].sum()


@needs_blocks
def test_only_zero_pads_of_a_convolution_alone_fold():
    torch.manual_seed(0)
    model, x = PadsThatDoNotFold().eval(), torch.randn(2, 4, 12, 12)
    session, plain = model_and_sessions(model, x)
    assert op_types(session).count("aten::pad") == 4
    with torch.no_grad():
        expected = model(x)
    np.testing.assert_allclose(session.run(x.numpy())[0], plain.run(x.numpy())[0], **FLOAT32_SUMS)
    np.testing.assert_allclose(session.run(x.numpy())[0], expected.numpy(), **FLOAT32_SUMS)


class NarrowChain(nn.Module):
    """Convolutions writing 8 and then 16 channels: channels-last blocks that
    are also blocks of 8 and 16 (5x5 kernels: a 3x3 one with unit strides
    would run Winograd on blocks of 16)."""

    def __init__(self):
        super().__init__()
        self.first = nn.Conv2d(3, 8, 5, padding=2)
        self.second = nn.Conv2d(8, 16, 5, padding=2)

    def forward(self, x):
        return self.second(nn.functional.max_pool2d(torch.relu(self.first(x)), 2))


@needs_blocks
def test_chains_of_8_and_16_channels():
    torch.manual_seed(0)
    model, x = NarrowChain(), torch.randn(2, 3, 12, 12)
    session, plain = model_and_sessions(model, x)
    convolutions = [
        node for node in json.loads(session.graph.to_json())["nodes"] if node["op_type"] == "opgraph::conv2d_nchwc"
    ]
    blocks = [node["attrs"]["block"]["value"] for node in convolutions]
    assert blocks == ([8, 16] if opgraph.get_cpu_capability() == "avx512" else [8, 8])
    (got,), (written,) = session.run(x.numpy()), plain.run(x.numpy())
    with torch.no_grad():
        expected = model(x)
    np.testing.assert_allclose(got, written, **FLOAT32_SUMS)
    np.testing.assert_allclose(got, expected.numpy(), **FLOAT32_SUMS)


class LastStage(nn.Module):
    """ResNet-50's last stage in small: two bottleneck blocks from 14x14 to
    7x7, whose weights of 4 MiB or more (all but the first 1x1 and the stem)
    stream from memory and which the Session runs on the kernel for few
    pixels (kernels/cpu/engines/conv_few_pixels.cpp): strided, gathered, read in
    place, with residuals added separately and in place."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 512, 3, padding=1)
        self.first = nn.Sequential(
            nn.Conv2d(512, 256, 1), nn.ReLU(), nn.Conv2d(256, 512, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(512, 2048, 1),
        )  # fmt: skip
        self.shortcut = nn.Conv2d(512, 2048, 1, stride=2)
        self.second = nn.Sequential(
            nn.Conv2d(2048, 512, 1), nn.ReLU(), nn.Conv2d(512, 512, 3, padding=1), nn.ReLU(), nn.Conv2d(512, 2048, 1),
        )  # fmt: skip

    def forward(self, x):
        x = self.stem(x)
        out = nn.functional.relu(self.first(x) + self.shortcut(x))
        return nn.functional.relu(self.second(out) + out)


@needs_blocks
@pytest.mark.parametrize("batch", [1, 2])
@pytest.mark.parametrize("threads", [1, 2])
def test_last_stages_over_few_pixels_give_pytorchs(batch, threads):
    torch.manual_seed(0)
    model, x = LastStage().eval(), torch.randn(batch, 3, 14, 14)
    previous = opgraph.get_num_threads()
    opgraph.set_num_threads(threads)
    try:
        session, plain = model_and_sessions(model, x)
        assert op_types(session).count("opgraph::conv2d_nchwc") == 8
        (written,) = plain.run(x.numpy())
        with torch.no_grad():
            expected = model(x)
        for _ in range(2):  # packing the weights, then on the packed copies
            (got,) = session.run(x.numpy())
            np.testing.assert_allclose(got, written, **FLOAT32_SUMS)
            np.testing.assert_allclose(got, expected.numpy(), **FLOAT32_SUMS)
    finally:
        opgraph.set_num_threads(previous)
