"""Models that keep state in buffers they update in place, extracted with
extract_ir and run on opgraph.Session run after run against the eager model:
a KV-cache Llama written as ExecuTorch's llama_transformer.py writes it (its
static cache, written at the new tokens' positions, and its dynamic-shape
cache, written at a start read with .item()), a GRU cell carrying its hidden
state, a running mean, a cache sliced at a start a tensor gives."""

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import opgraph
from opgraph.ir import extract_ir

DIM, N_LAYERS, N_HEADS, N_KV_HEADS, VOCAB, MAX_SEQ_LEN = 32, 2, 4, 2, 64, 16
HEAD_DIM = DIM // N_HEADS


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        normed = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.type_as(x) * self.weight


def rotary_frequencies(head_dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    angles = torch.outer(torch.arange(end).float(), freqs)
    return torch.cos(angles), torch.sin(angles)


def apply_rotary(x, cos, sin):
    """x: [B, S, H, D] rotated by pairs (x[2i], x[2i+1]); cos, sin: [S, D/2]."""
    real, imag = x.float().reshape(x.shape[:-1] + (-1, 2)).unbind(-1)
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    rotated = torch.stack([real * cos - imag * sin, real * sin + imag * cos], dim=-1).flatten(3)
    return rotated.type_as(x)


def start_of(input_pos):
    """ExecuTorch's dynamic-shape models take the first new position only, read as a number."""
    start = input_pos[-1].item()
    torch._check(start >= 0)
    torch._check(start < MAX_SEQ_LEN)
    return start


class KVCache(nn.Module):
    def __init__(self, batch, n_heads, max_seq_len, head_dim, dynamic_shape):
        super().__init__()
        shape = (batch, n_heads, max_seq_len, head_dim)
        self.dynamic_shape = dynamic_shape
        self.register_buffer("k_cache", torch.zeros(shape))
        self.register_buffer("v_cache", torch.zeros(shape))

    def update(self, input_pos, k_val, v_val):
        """input_pos: [S], or [1] holding the first position where dynamic_shape; k_val, v_val: [B, H, S, D]."""
        if self.dynamic_shape:
            start, length = start_of(input_pos), k_val.size(2)
            self.k_cache.narrow(2, start, length).copy_(k_val)
            self.v_cache.narrow(2, start, length).copy_(v_val)
            return self.k_cache, self.v_cache
        k_out, v_out = self.k_cache, self.v_cache
        k_out[:, :, input_pos] = k_val
        v_out[:, :, input_pos] = v_val
        return k_out, v_out


class Attention(nn.Module):
    def __init__(self, batch, dynamic_shape):
        super().__init__()
        self.wq = nn.Linear(DIM, N_HEADS * HEAD_DIM, bias=False)
        self.wk = nn.Linear(DIM, N_KV_HEADS * HEAD_DIM, bias=False)
        self.wv = nn.Linear(DIM, N_KV_HEADS * HEAD_DIM, bias=False)
        self.wo = nn.Linear(N_HEADS * HEAD_DIM, DIM, bias=False)
        self.kv_cache = KVCache(batch, N_KV_HEADS, MAX_SEQ_LEN, HEAD_DIM, dynamic_shape)
        self.register_buffer("mask", torch.tril(torch.ones(MAX_SEQ_LEN, MAX_SEQ_LEN, dtype=torch.bool)))

    def forward(self, x, cos, sin, input_pos):
        batch, seq_len, _ = x.shape
        q = self.wq(x).view(batch, seq_len, N_HEADS, HEAD_DIM)
        k = self.wk(x).view(batch, seq_len, N_KV_HEADS, HEAD_DIM)
        v = self.wv(x).view(batch, seq_len, N_KV_HEADS, HEAD_DIM)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        k, v = self.kv_cache.update(input_pos, k, v)
        if self.kv_cache.dynamic_shape:
            mask = self.mask.narrow(0, start_of(input_pos), seq_len)
        else:
            mask = self.mask[input_pos]
        repeats = N_HEADS // N_KV_HEADS
        k, v = k.repeat_interleave(repeats, dim=1), v.repeat_interleave(repeats, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.wo(y.transpose(1, 2).contiguous().view(batch, seq_len, DIM))


class FeedForward(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.w1 = nn.Linear(DIM, hidden, bias=False)
        self.w2 = nn.Linear(hidden, DIM, bias=False)
        self.w3 = nn.Linear(DIM, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, batch, dynamic_shape):
        super().__init__()
        self.attention_norm, self.attention = RMSNorm(DIM), Attention(batch, dynamic_shape)
        self.ffn_norm, self.feed_forward = RMSNorm(DIM), FeedForward()

    def forward(self, x, cos, sin, input_pos):
        h = x + self.attention(self.attention_norm(x), cos, sin, input_pos)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, batch=1, dynamic_shape=False):
        super().__init__()
        self.dynamic_shape = dynamic_shape
        self.tok_embeddings = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList(Block(batch, dynamic_shape) for _ in range(N_LAYERS))
        self.norm = RMSNorm(DIM)
        self.output = nn.Linear(DIM, VOCAB, bias=False)
        cos, sin = rotary_frequencies(HEAD_DIM, MAX_SEQ_LEN)
        self.register_buffer("freqs_cos", cos, persistent=False)
        self.register_buffer("freqs_sin", sin, persistent=False)

    def forward(self, tokens, input_pos):
        h = self.tok_embeddings(tokens)
        if self.dynamic_shape:
            start, length = start_of(input_pos), tokens.size(1)
            cos, sin = self.freqs_cos.narrow(0, start, length), self.freqs_sin.narrow(0, start, length)
        else:
            cos, sin = self.freqs_cos[input_pos], self.freqs_sin[input_pos]
        for layer in self.layers:
            h = layer(h, cos, sin, input_pos)
        return self.output(self.norm(h))


def calls(dynamic_shape, prompt_len=5, steps=4, seed=0):
    """(tokens, input_pos) of a prefill, then one token at a time."""
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, VOCAB, (1, prompt_len + steps), generator=generator)
    spans = [(0, prompt_len)] + [(p, p + 1) for p in range(prompt_len, prompt_len + steps)]
    return [
        (tokens[:, start:end], torch.tensor([start]) if dynamic_shape else torch.arange(start, end))
        for start, end in spans
    ]


def eager_outputs(model, runs):
    with torch.no_grad():
        return [model(*args).numpy() for args in runs]


@pytest.fixture(scope="module", params=[False, True], ids=["static_shape", "dynamic_shape"])
def llama(request, tmp_path_factory):
    """(the model before any run, Session of its extraction, loaded from an .opg file)."""
    dynamic_shape = request.param
    torch.manual_seed(0)
    model = Transformer(dynamic_shape=dynamic_shape).eval()
    eager = copy.deepcopy(model)
    seq = torch.export.Dim("seq", min=1, max=MAX_SEQ_LEN - 1)
    tokens, input_pos = calls(dynamic_shape, prompt_len=2)[0]
    dynamic_shapes = {"tokens": {1: seq}, "input_pos": None if dynamic_shape else {0: seq}}
    ir = extract_ir(model, (tokens, input_pos), dynamic_shapes=dynamic_shapes)
    path = tmp_path_factory.mktemp("llama") / "llama.opg"
    ir.save(path)
    return eager, opgraph.Session(path)


def test_a_kv_cache_llama_prefills_and_decodes_as_eager(llama):
    model, session = llama
    eager = copy.deepcopy(model)
    assert sorted(s.value.name for s in session.states) == sorted(
        f"layers.{i}.attention.kv_cache.{kv}_cache" for i in range(N_LAYERS) for kv in "kv"
    )
    runs = calls(model.dynamic_shape)
    state = session.new_state()
    for step, (args, want) in enumerate(zip(runs, eager_outputs(eager, runs))):
        (got,) = session.run(*[a.numpy() for a in args], state=state)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"run {step}")
    np.testing.assert_allclose(
        state["layers.0.attention.kv_cache.k_cache"], eager.layers[0].attention.kv_cache.k_cache.numpy(), atol=1e-5
    )


def test_two_states_of_one_llama_session_are_independent(llama):
    model, session = llama
    first, second = calls(model.dynamic_shape, seed=1), calls(model.dynamic_shape, seed=2)
    want_first, want_second = eager_outputs(copy.deepcopy(model), first), eager_outputs(copy.deepcopy(model), second)
    states = session.new_state(), session.new_state()
    for step, (a, b) in enumerate(zip(first, second)):  # interleaved: each run reads only its own cache
        (got_a,) = session.run(*[t.numpy() for t in a], state=states[0])
        (got_b,) = session.run(*[t.numpy() for t in b], state=states[1])
        np.testing.assert_allclose(got_a, want_first[step], rtol=1e-4, atol=1e-4, err_msg=f"first, run {step}")
        np.testing.assert_allclose(got_b, want_second[step], rtol=1e-4, atol=1e-4, err_msg=f"second, run {step}")
    states[0].reset()
    for info in session.states:
        assert not states[0][info.value.name].any(), info.value.name
        assert states[1][info.value.name].any(), info.value.name
    (again,) = session.run(*[t.numpy() for t in first[0]], state=states[0])
    np.testing.assert_allclose(again, want_first[0], rtol=1e-4, atol=1e-4)


class GRUStream(nn.Module):
    def __init__(self, features=6, hidden=8):
        super().__init__()
        self.cell = nn.GRUCell(features, hidden)
        self.register_buffer("h", torch.zeros(1, hidden))

    def forward(self, x):
        h = self.cell(x, self.h)
        self.h.copy_(h)
        return h


class RunningMean(nn.Module):
    """An exponential moving average of its inputs, and the input less it."""

    def __init__(self, features=6, momentum=0.25):
        super().__init__()
        self.momentum = momentum
        self.register_buffer("mean", torch.full((features,), 0.5))

    def forward(self, x):
        self.mean.mul_(1 - self.momentum).add_(x.mean(0), alpha=self.momentum)
        return x - self.mean


@pytest.mark.parametrize("model_class", [GRUStream, RunningMean])
def test_a_streaming_model_carries_its_buffer_from_run_to_run_as_eager(model_class):
    torch.manual_seed(0)
    model = model_class().eval()
    eager = copy.deepcopy(model)
    session = extract_ir(model, (torch.zeros(1, 6),)).to_session()
    assert len(session.states) == 1
    state = session.new_state()
    for step in range(5):
        x = torch.randn(1, 6)
        with torch.no_grad():
            want = eager(x).numpy()
        (got,) = session.run(x.numpy(), state=state)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"step {step}")


class SliceCache(nn.Module):
    """Writes x into its cache from the position ``start`` gives, and returns the cache up to there."""

    def __init__(self, rows=16):
        super().__init__()
        self.register_buffer("cache", torch.zeros(2, rows, 3))

    def forward(self, x, start):
        begin, end = start.item(), start.item() + x.shape[1]
        torch._check(begin >= 0)
        torch._check(end <= self.cache.shape[1])
        self.cache[:, begin:end] = x
        return self.cache * 2


def test_a_slice_at_a_start_read_from_a_tensor_becomes_indexing():
    model = SliceCache()
    eager = copy.deepcopy(model)
    length = torch.export.Dim("length", min=1, max=15)
    ir = extract_ir(model, (torch.ones(2, 3, 3), torch.tensor(0)), dynamic_shapes=({1: length}, None))
    assert {"aten::index_put", "aten::slice_scatter"} & {node.op_type for node in ir.nodes} == {"aten::index_put"}
    session = ir.to_session()
    state = session.new_state()
    for start, count in [(0, 4), (4, 1), (5, 3), (2, 1)]:
        x = torch.randn(2, count, 3)
        with torch.no_grad():
            want = eager(x, torch.tensor(start)).numpy()
        (got,) = session.run(x.numpy(), np.array(start), state=state)
        np.testing.assert_array_equal(got, want)
    with pytest.raises(opgraph.Error, match="out of range"):
        session.run(np.ones((2, 2, 3), np.float32), np.array(15), state=state)
