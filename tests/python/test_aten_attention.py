"""scaled_dot_product_attention, its heads-second form and the rotary embedding
before it, against their references and PyTorch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from oracle import assert_schema_is_aten, check_op

import opgraph

NAME = "aten::scaled_dot_product_attention"
TOLERANCE = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-11, atol=1e-12)}


def sample(shape, dtype=np.float32, seed=0):
    return np.asarray(np.random.default_rng(seed).standard_normal(shape), dtype=dtype)


def sdpa(**attrs):
    return lambda q, k, v, mask=None: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **attrs)


# (query, key, value) shapes: one row, one key, rows past the kernel's row
# block, features in whole vectors (transposed in registers) with a last
# block of rows that is not, keys past several of the chunks the product with
# v takes at a time (value features padded to whole vectors), keys spread
# over enough memory, heads apart, to be copied together first, batch dims that
# broadcast, no batch dims, empty sequences.
SHAPES = {
    "bert": ((2, 4, 7, 8), (2, 4, 7, 8), (2, 4, 7, 8)),
    "one-row": ((1, 2, 1, 16), (1, 2, 9, 16), (1, 2, 9, 16)),
    "decode": ((2, 3, 2, 32), (2, 3, 40, 32), (2, 3, 40, 24)),
    "one-key": ((1, 1, 5, 4), (1, 1, 1, 4), (1, 1, 1, 3)),
    "long": ((1, 2, 67, 8), (1, 2, 45, 8), (1, 2, 45, 12)),
    "wide-features": ((1, 2, 37, 32), (1, 2, 29, 32), (1, 2, 29, 16)),
    "many-keys": ((1, 2, 40, 16), (1, 2, 300, 16), (1, 2, 300, 20)),
    "spread-keys": ((1, 4, 40, 64), (1, 4, 1100, 64), (1, 4, 1100, 20)),
    "3d": ((3, 5, 8), (3, 6, 8), (3, 6, 2)),
    "2d": ((5, 8), (6, 8), (6, 8)),
    "broadcast-batch": ((2, 1, 5, 8), (1, 3, 6, 8), (1, 3, 6, 8)),
    "no-rows": ((1, 2, 0, 8), (1, 2, 6, 8), (1, 2, 6, 8)),
    "no-keys": ((1, 2, 3, 8), (1, 2, 0, 8), (1, 2, 0, 8)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shapes", SHAPES)
def test_matches_torch(shapes, dtype):
    q, k, v = (sample(shape, dtype, seed) for seed, shape in enumerate(SHAPES[shapes]))
    check_op(NAME, sdpa(), q, k, v, tolerance=TOLERANCE[dtype])


@pytest.mark.parametrize("keys", [44, 45])
def test_scores_past_twos_range_weigh_like_torchs(keys):
    """The softmax subtracts each row's largest score wherever among the keys it
    lies (the last key, in whole groups of four or not): taken as 2^x alone,
    that score would overflow to inf and the rows to NaN."""
    q = np.full((1, 2, 40, 8), 30, dtype=np.float32)
    k = np.zeros((1, 2, keys, 8), dtype=np.float32)
    k[..., -1, :] = 30
    k[..., 0, :] = 25
    v = sample((1, 2, keys, 8), seed=2)
    check_op(NAME, sdpa(), q, k, v, tolerance=TOLERANCE[np.float32])


@pytest.mark.parametrize("shapes", ["bert", "long", "one-key", "decode"])
def test_causal_and_scale(shapes):
    q, k, v = (sample(shape, seed=seed) for seed, shape in enumerate(SHAPES[shapes]))
    check_op(NAME, sdpa(is_causal=True), q, k, v, is_causal=True, tolerance=TOLERANCE[np.float32])
    check_op(NAME, sdpa(scale=0.3), q, k, v, scale=0.3, tolerance=TOLERANCE[np.float32])


def padding_mask(batch, keys, lengths):
    mask = np.zeros((batch, 1, 1, keys), dtype=bool)
    for b, length in enumerate(lengths):
        mask[b, ..., :length] = True
    return mask


# Masks: per key (BERT's padding), per query row and key, all-true, all-false
# (rows that attend to nothing come out as zeros), and float masks.
MASKS = {
    "padding": padding_mask(2, 7, [5, 7]),
    "full": np.random.default_rng(3).random((2, 4, 7, 7)) > 0.4,
    "rows": np.random.default_rng(4).random((7, 1)) > 0.5,
    "all-true": np.ones((1, 1, 7, 7), dtype=bool),
    "all-false": np.zeros((2, 1, 1, 7), dtype=bool),
    "float": sample((2, 1, 7, 7), seed=5),
    "float-row": sample((1, 7), seed=6),
    "float-minus-inf": np.where(padding_mask(2, 7, [0, 3]), 0.0, -np.inf).astype(np.float32),
}


@pytest.mark.parametrize("mask", MASKS)
def test_masks_match_torch(mask):
    q, k, v = (sample(shape, seed=seed) for seed, shape in enumerate(SHAPES["bert"]))
    check_op(NAME, sdpa(), q, k, v, MASKS[mask], tolerance=TOLERANCE[np.float32])


def test_boolean_causal_mask_matches_is_causal():
    # Exported Hugging Face decoders give causality as a boolean tensor: a
    # block of rows skips the keys past its last True, across several blocks
    # and a partial last one.
    q, k, v = (sample((1, 3, 70, 16), seed=seed) for seed in range(3))
    causal = np.tril(np.ones((1, 1, 70, 70), dtype=bool))
    check_op(NAME, sdpa(), q, k, v, causal, tolerance=TOLERANCE[np.float32])
    (by_mask,) = opgraph.ops.call(NAME, q, k, v, causal)
    (by_flag,) = opgraph.ops.call(NAME, q, k, v, is_causal=True)
    np.testing.assert_allclose(by_mask, by_flag, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("rows", [1, 2, 5, 40])
def test_masks_with_keys_cut_per_row(rows):
    # Each row attends a prefix of its own length (one row none at all), so a
    # block's keys end at the longest prefix among its rows; one and two rows
    # take the one-row path, whose softmax runs along each row.
    q, k, v = sample((2, 2, rows, 32), seed=1), sample((2, 2, 50, 32), seed=2), sample((2, 2, 50, 24), seed=3)
    lengths = np.random.default_rng(4).integers(0, 51, size=(2, 1, rows, 1))
    lengths[0, 0, 0, 0] = 0
    mask = np.arange(50) < lengths
    check_op(NAME, sdpa(), q, k, v, mask, tolerance=TOLERANCE[np.float32])


def test_grouped_query_attention():
    q, k, v = sample((1, 4, 5, 8), seed=1), sample((1, 2, 6, 8), seed=2), sample((1, 2, 6, 8), seed=3)
    check_op(NAME, sdpa(enable_gqa=True), q, k, v, enable_gqa=True, tolerance=TOLERANCE[np.float32])


def test_strided_inputs():
    q = sample((2, 7, 4, 8), seed=1).transpose(0, 2, 1, 3)  # (batch, seq, heads, dim) -> heads first
    k = sample((2, 7, 4, 8), seed=2).transpose(0, 2, 1, 3)
    v = sample((2, 4, 8, 7), seed=3).transpose(0, 1, 3, 2)
    check_op(NAME, sdpa(), q, k, v, tolerance=TOLERANCE[np.float32])


def test_long_sequence_runs_in_parallel_blocks():
    q, k, v = (sample((1, 3, 200, 32), seed=seed) for seed in range(3))
    check_op(NAME, sdpa(is_causal=True), q, k, v, is_causal=True, tolerance=dict(rtol=1e-4, atol=1e-5))


def test_schema_is_aten():
    assert_schema_is_aten("scaled_dot_product_attention")


BAD = {
    "features": (
        (sample((1, 5, 8)), sample((1, 6, 4)), sample((1, 6, 4))),
        {},
        r"key: expected 8 features \(dim -1\) like query",
    ),
    "positions": (
        (sample((1, 5, 8)), sample((1, 6, 8)), sample((1, 5, 8))),
        {},
        r"value: expected 6 positions \(dim -2\) like key",
    ),
    "dtype": ((sample((5, 8)), sample((6, 8), np.float64), sample((6, 8))), {}, r"key: expected float32 like query"),
    "integer": ((np.ones((5, 8), np.int64),) * 3, {}, r"query: expected float32 or float64"),
    "rank": ((sample((8,)), sample((6, 8)), sample((6, 8))), {}, r"query: expected rank 2 or more"),
    "batch": ((sample((2, 5, 8)), sample((3, 6, 8)), sample((3, 6, 8))), {}, r"key: batch dims .* do not broadcast"),
    "mask-shape": (
        (sample((5, 8)), sample((6, 8)), sample((6, 8)), np.ones((5, 5), bool)),
        {},
        r"attn_mask: expected a shape that broadcasts to the scores' \[5, 6\]",
    ),
    "mask-dtype": (
        (sample((5, 8)), sample((6, 8)), sample((6, 8)), np.ones((5, 6), np.int64)),
        {},
        r"attn_mask: expected bool or float32",
    ),
    "mask-and-causal": (
        (sample((5, 8)), sample((6, 8)), sample((6, 8)), np.ones((5, 6), bool)),
        {"is_causal": True},
        r"attn_mask: expected None when is_causal is True",
    ),
    "dropout": (
        (sample((5, 8)), sample((6, 8)), sample((6, 8))),
        {"dropout_p": 0.1},
        r"dropout_p: expected 0.0 \(inference\)",
    ),
    "gqa-heads": (
        (sample((1, 3, 5, 8)), sample((1, 2, 6, 8)), sample((1, 2, 6, 8))),
        {"enable_gqa": True},
        r"key: with enable_gqa, the query's 3 heads",
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_a_clear_error(case):
    inputs, attrs, message = BAD[case]
    with pytest.raises(opgraph.Error, match=rf"{NAME}: {message}"):
        opgraph.ops.call(NAME, *inputs, **attrs)


# opgraph::attention_bshd: the same on [batch, sequence, heads, features],
# which the Session puts in place of transformers' transposes around
# attention (test_optimize.py).
HEADS_SECOND = "opgraph::attention_bshd"


def heads_second(**attrs):
    def attend(q, k, v, mask=None):
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **attrs).transpose(1, 2)

    return attend


def to_heads_second(shape):
    return (shape[0], shape[2], shape[1], shape[3])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shapes",
    [
        "bert",
        "one-row",
        "decode",
        "one-key",
        "long",
        "wide-features",
        "many-keys",
        "spread-keys",
        "broadcast-batch",
        "no-rows",
    ],
)
def test_heads_second_matches_torch(shapes, dtype):
    q, k, v = (sample(to_heads_second(shape), dtype, seed) for seed, shape in enumerate(SHAPES[shapes]))
    check_op(HEADS_SECOND, heads_second(), q, k, v, tolerance=TOLERANCE[dtype])


@pytest.mark.parametrize("mask", ["padding", "full", "float", "all-false"])
def test_heads_second_masks_and_causality(mask):
    q, k, v = (sample(to_heads_second(shape), seed=seed) for seed, shape in enumerate(SHAPES["bert"]))
    check_op(HEADS_SECOND, heads_second(), q, k, v, MASKS[mask], tolerance=TOLERANCE[np.float32])
    q, k, v = (sample((2, 70, 3, 16), seed=seed) for seed in range(3))
    check_op(HEADS_SECOND, heads_second(is_causal=True), q, k, v, is_causal=True, tolerance=TOLERANCE[np.float32])


def test_heads_second_grouped_query_attention():
    q, k, v = sample((1, 5, 4, 8), seed=1), sample((1, 6, 2, 8), seed=2), sample((1, 6, 2, 8), seed=3)
    check_op(HEADS_SECOND, heads_second(enable_gqa=True), q, k, v, enable_gqa=True, tolerance=TOLERANCE[np.float32])
    # Keys spread over enough memory to be copied first, each copy serving two query heads.
    q, k, v = sample((1, 40, 4, 64), seed=1), sample((1, 2200, 2, 64), seed=2), sample((1, 2200, 2, 20), seed=3)
    check_op(HEADS_SECOND, heads_second(enable_gqa=True), q, k, v, enable_gqa=True, tolerance=TOLERANCE[np.float32])


def test_heads_second_bad_input_is_a_clear_error():
    with pytest.raises(opgraph.Error, match=r"query: expected rank 4 \(batch, sequence, heads, features\)"):
        opgraph.ops.call(HEADS_SECOND, sample((2, 5, 8)), sample((2, 6, 3, 8)), sample((2, 6, 3, 8)))
    with pytest.raises(opgraph.Error, match=r"value: expected 6 positions .* \(operands read as \[batch, heads"):
        opgraph.ops.call(HEADS_SECOND, sample((2, 5, 3, 8)), sample((2, 6, 3, 8)), sample((2, 4, 3, 8)))


# opgraph::rotary_embedding: transformers' apply_rotary_pos_emb for one tensor,
# which the Session puts in place of its seven nodes (test_optimize.py).
ROTARY = "opgraph::rotary_embedding"


def rotate_half(x):  # transformers' own
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def rotary(x, cos, sin):
    return x * cos + rotate_half(x) * sin


def llama_cos_sin(positions, features, dtype, base=10000.0):
    """Llama's cos and sin for `positions` [batch, sequence]: [batch, sequence, features]."""
    inv_freq = 1.0 / base ** (np.arange(0, features, 2) / features)
    angles = positions[..., None] * inv_freq
    angles = np.concatenate([angles, angles], axis=-1)
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


# (x, cos) shapes: Llama's q and its cos over heads; the same heads second;
# cos without batch dims; one position (decoding); no rows; a lone pair.
ROTARY_SHAPES = {
    "llama": ((2, 4, 9, 16), (2, 1, 9, 16)),
    "heads-second": ((2, 9, 4, 16), (2, 9, 1, 16)),
    "shared-positions": ((1, 3, 40, 64), (40, 64)),
    "decode": ((1, 3, 1, 8), (1, 1, 1, 8)),
    "no-rows": ((2, 3, 0, 8), (1, 1, 0, 8)),
    "pair": ((2,), (2,)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shapes", ROTARY_SHAPES)
def test_rotary_embedding_matches_transformers(shapes, dtype):
    x_shape, trig_shape = ROTARY_SHAPES[shapes]
    x = sample(x_shape, dtype)
    cos, sin = sample(trig_shape, dtype, seed=1), sample(trig_shape, dtype, seed=2)
    check_op(ROTARY, rotary, x, cos, sin, tolerance=TOLERANCE[dtype])


def test_rotary_embedding_of_llama_positions():
    x = sample((2, 4, 9, 16))
    cos, sin = llama_cos_sin(np.stack([np.arange(9), np.arange(3, 12)]).astype(np.float64), 16, np.float32)
    check_op(ROTARY, rotary, x, cos[:, None], sin[:, None], tolerance=TOLERANCE[np.float32])


def test_rotary_embedding_bad_input_is_a_clear_error():
    x = sample((2, 3, 5, 8))
    with pytest.raises(opgraph.Error, match=r"input: expected an even number of features in the last dim"):
        opgraph.ops.call(ROTARY, sample((2, 3, 5, 7)), sample((5, 7)), sample((5, 7)))
    with pytest.raises(opgraph.Error, match=r"cos: expected a shape that broadcasts to input float32\[2, 3, 5, 8\]"):
        opgraph.ops.call(ROTARY, x, sample((3, 3, 5, 8)), sample((3, 3, 5, 8)))
    with pytest.raises(opgraph.Error, match=r"sin: expected float32 with input's 8 features in the last dim"):
        opgraph.ops.call(ROTARY, x, sample((5, 8)), sample((5, 4)))
