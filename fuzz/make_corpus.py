"""Writes the .opg fuzzing corpus: one valid file and hand-made bad ones.

    python fuzz/make_corpus.py FOLDER

Each bad file breaks one rule the loader checks and is paired, in CASES,
with the text its opgraph.Error must contain; the tests load every file and
check the message, the fuzzer starts from them. Plain Python (no opgraph,
no NumPy), so the C++ build can run it too.
"""

import json
import struct
import sys
from pathlib import Path

BATCH = 3  # the batch the tests run VALID with

# x[N, 6] -> linear(8) -> relu -> linear(4) -> softmax(dim=1)
GRAPH = {
    "name": "mlp",
    "inputs": [{"name": "x", "dtype": "float32", "shape": ["N", 6]}],
    "outputs": [{"name": "y"}],
    "constants": [
        {"name": "w1", "dtype": "float32", "shape": [8, 6]},
        {"name": "b1", "dtype": "float32", "shape": [8]},
        {"name": "w2", "dtype": "float32", "shape": [4, 8]},
        {"name": "b2", "dtype": "float32", "shape": [4]},
    ],
    "nodes": [
        {"name": "fc1", "op_type": "aten::linear", "inputs": ["x", "w1", "b1"], "outputs": ["h"]},
        {"name": "relu", "op_type": "aten::relu", "inputs": ["h"], "outputs": ["r"]},
        {"name": "fc2", "op_type": "aten::linear", "inputs": ["r", "w2", "b2"], "outputs": ["z"]},
        {
            "name": "softmax",
            "op_type": "aten::softmax.int",
            "inputs": ["z"],
            "outputs": ["y"],
            "attrs": {"dim": {"type": "int", "value": 1}},
        },
    ],
    "packages": [],
}


def weight_values(shape, seed):
    """Small float32-exact values, the same on every run."""
    count = 1
    for extent in shape:
        count *= extent
    return [((seed * 31 + i * 17) % 23 - 11) / 16 for i in range(count)]


def weights_of(graph):
    return {c["name"]: weight_values(c["shape"], seed) for seed, c in enumerate(graph.get("constants", []))}


WEIGHTS = weights_of(GRAPH)


# How each dtype of the graphs' constants is stored: safetensors' name, the
# struct code, and what its values become (integers: their small levels).
STORED = {
    "float32": ("F32", "f", lambda v: v),
    "int8": ("I8", "b", lambda v: int(v * 16)),
    "uint8": ("U8", "B", lambda v: int(v * 16) + 11),
}


def tensor_entries(graph=GRAPH):
    """The header entries and data of the graph's constants, back to back."""
    entries, data = {}, b""
    for constant, values in zip(graph.get("constants", []), weights_of(graph).values()):
        name, code, stored = STORED[constant["dtype"]]
        packed = struct.pack(f"<{len(values)}{code}", *map(stored, values))
        entries[constant["name"]] = {
            "dtype": name,
            "shape": constant["shape"],
            "data_offsets": [len(data), len(data) + len(packed)],
        }
        data += packed
    return entries, data


def metadata(graph=GRAPH, **changes):
    fields = {
        "opgraph.version": "1",
        "opgraph.graph": json.dumps(graph),
        "opgraph.packages": json.dumps(graph.get("packages", [])),
    }
    fields.update(changes)
    return {key: value for key, value in fields.items() if value is not None}


def safetensors(header, data, length=None):
    """The length prefix, the header (padded with spaces to 8 bytes, as
    safetensors writes it) and the data."""
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def opg(graph=GRAPH, entries=None, data=None, **metadata_changes):
    """An .opg file of `graph`, with its tensors' entries and data replaced
    where given, and metadata fields changed (None removes one)."""
    default_entries, default_data = tensor_entries(graph)
    entries = default_entries if entries is None else entries
    data = default_data if data is None else data
    return safetensors({"__metadata__": metadata(graph, **metadata_changes), **entries}, data)


def with_entry(name, **changes):
    entries, _ = tensor_entries()
    entries[name] = dict(entries[name], **changes)
    return entries


def with_node(index, **changes):
    nodes = [dict(node) for node in GRAPH["nodes"]]
    nodes[index].update(changes)
    return dict(GRAPH, nodes=nodes)


def with_input_shape(shape):
    return dict(GRAPH, inputs=[dict(GRAPH["inputs"][0], shape=shape)])


# x[N, 2, 6, 6] -> conv2d(3, 3x3) -> max_pool2d(2) -> flatten -> cat with
# itself -> reshape: the shape functions with the most arithmetic, for the
# fuzzer to start from (its files break one attribute each).
CNN = {
    "inputs": [{"name": "x", "dtype": "float32", "shape": ["N", 2, 6, 6]}],
    "outputs": [{"name": "y"}],
    "constants": [
        {"name": "w", "dtype": "float32", "shape": [3, 2, 3, 3]},
        {"name": "b", "dtype": "float32", "shape": [3]},
    ],
    "nodes": [
        {
            "name": "conv",
            "op_type": "aten::conv2d",
            "inputs": ["x", "w", "b"],
            "outputs": ["c"],
            "attrs": {
                "stride": {"type": "ints", "value": [1, 1]},
                "padding": {"type": "ints", "value": [1, 1]},
                "dilation": {"type": "ints", "value": [1, 1]},
                "groups": {"type": "int", "value": 1},
            },
        },
        {
            "name": "pool",
            "op_type": "aten::max_pool2d",
            "inputs": ["c"],
            "outputs": ["p"],
            "attrs": {"kernel_size": {"type": "ints", "value": [2, 2]}, "stride": {"type": "ints", "value": [2, 2]}},
        },
        {
            "name": "flatten",
            "op_type": "aten::flatten.using_ints",
            "inputs": ["p"],
            "outputs": ["f"],
            "attrs": {"start_dim": {"type": "int", "value": 1}},
        },
        {
            "name": "cat",
            "op_type": "aten::cat",
            "inputs": [["f", "f"]],
            "outputs": ["j"],
            "attrs": {"dim": {"type": "int", "value": 1}},
        },
        {
            "name": "reshape",
            "op_type": "aten::reshape",
            "inputs": ["j"],
            "outputs": ["y"],
            "attrs": {"shape": {"type": "ints", "value": [-1, 6, 3, 3]}},
        },
    ],
}


def cnn_with(node_name, **attrs):
    nodes = [
        dict(node, attrs=dict(node["attrs"], **attrs)) if node["name"] == node_name else node for node in CNN["nodes"]
    ]
    return dict(CNN, nodes=nodes)


VALID = opg()
HUGE = 1 << 62

# x[N, 64] -> quantized_linear(4 outputs, int8 levels, a scale per 32
# inputs), as `opgraph quantize` writes a linear layer.
QUANTIZED = {
    "name": "quantized",
    "inputs": [{"name": "x", "dtype": "float32", "shape": ["N", 64]}],
    "outputs": [{"name": "y"}],
    "constants": [
        {"name": "levels", "dtype": "int8", "shape": [4, 64]},
        {"name": "scales", "dtype": "float32", "shape": [4, 2]},
    ],
    "nodes": [
        {
            "name": "fc",
            "op_type": "opgraph::quantized_linear",
            "inputs": ["x", "levels", "scales", None],
            "outputs": ["y"],
            "attrs": {"bits": {"type": "int", "value": 8}, "group_size": {"type": "int", "value": 32}},
        }
    ],
    "packages": [],
}


def quantized_with(bits=8, group_size=32, levels=("int8", (4, 64)), scales=(4, 2), zero_points=None):
    """QUANTIZED with its node's attributes and its constants' declarations
    changed; with `zero_points` (dtype, shape), a zero point input too."""
    attrs = {"bits": {"type": "int", "value": bits}, "group_size": {"type": "int", "value": group_size}}
    constants = [
        {"name": "levels", "dtype": levels[0], "shape": list(levels[1])},
        {"name": "scales", "dtype": "float32", "shape": list(scales)},
    ]
    node = dict(QUANTIZED["nodes"][0], attrs=attrs)
    if zero_points:
        constants.append({"name": "zero_points", "dtype": zero_points[0], "shape": list(zero_points[1])})
        node["inputs"] = [*node["inputs"], "zero_points"]
    return dict(QUANTIZED, constants=constants, nodes=[node])


# Four float32[2^30, 2^30] values (2^62 bytes each) alive at once: each one
# fits in memory's address range, the arena holding them all does not.
TOO_LARGE_TOGETHER = {
    "inputs": [{"name": "x", "dtype": "float32", "shape": [1 << 30, 1 << 30]}],
    "outputs": [{"name": "y"}],
    "nodes": [{"name": f"relu_{v}", "op_type": "aten::relu", "inputs": ["x"], "outputs": [v]} for v in "abcd"]
    + [
        {"name": "add_ab", "op_type": "aten::add.Tensor", "inputs": ["a", "b"], "outputs": ["ab"]},
        {"name": "add_cd", "op_type": "aten::add.Tensor", "inputs": ["c", "d"], "outputs": ["cd"]},
        {"name": "add", "op_type": "aten::add.Tensor", "inputs": ["ab", "cd"], "outputs": ["y"]},
    ],
}

# (file name, its bytes, text its error must contain); the first three are valid.
CASES = [
    ("valid.opg", VALID, None),
    ("valid_quantized.opg", opg(QUANTIZED), None),
    ("valid_quantized_zero_points.opg", opg(quantized_with(zero_points=("int8", (4, 2)))), None),
    (
        "quantized_zero_points_float.opg",
        opg(quantized_with(zero_points=("float32", (4, 2)))),
        "zero_point: expected int8[4, 2] (one per scale), got float32[4, 2]",
    ),
    (
        "quantized_scales_of_another_group.opg",
        opg(quantized_with(scales=(4, 1))),
        "scale: expected float32[4, 2] (a scale per output and group of 32 features), got float32[4, 1]",
    ),
    (
        "quantized_group_past_inputs.opg",
        opg(quantized_with(group_size=48)),
        "group_size: expected input's 64 features, or a multiple of 32 that divides them, got 48",
    ),
    (
        "quantized_int4_unpacked.opg",
        opg(quantized_with(bits=4, levels=("uint8", (4, 64)))),
        "weight: expected uint8[N, 32] (4-bit levels of input's 64 features for each output), got uint8[4, 64]",
    ),
    (
        "quantized_levels_short.opg",
        opg(
            QUANTIZED,
            entries=dict(
                tensor_entries(QUANTIZED)[0], levels=dict(tensor_entries(QUANTIZED)[0]["levels"], data_offsets=[0, 128])
            ),
        ),
        "tensor 'levels': data_offsets [0, 128] hold 128 bytes; int8[4, 64] needs 256",
    ),
    ("empty.opg", b"", "the file is 0 bytes; a safetensors file starts with an 8-byte header length"),
    ("truncated_length.opg", VALID[:5], "the file is 5 bytes"),
    ("truncated_header.opg", VALID[:100], "runs past the end of the file (100 bytes, so at most 92)"),
    ("truncated_data.opg", VALID[:-4], "tensor 'b2': data_offsets [352, 368] run past the end of the data (364 bytes)"),
    (
        "header_length_past_eof.opg",
        safetensors({"__metadata__": {}}, b"", length=4096),
        "header length 4096 runs past the end of the file",
    ),
    (
        "huge_header_length.opg",
        struct.pack("<Q", (1 << 64) - 1) + b"{}",
        "header length 18446744073709551615 runs past the end of the file (10 bytes, so at most 2)",
    ),
    ("bad_header_json.opg", safetensors(b'{"__metadata__": {', b""), "is not valid JSON"),
    ("header_not_object.opg", safetensors([1, 2], b""), "header must be a JSON object, got array"),
    (
        "no_metadata.opg",
        safetensors(tensor_entries()[0], tensor_entries()[1]),
        "header has no __metadata__ object: not an .opg file",
    ),
    ("missing_version.opg", opg(**{"opgraph.version": None}), "__metadata__ has no 'opgraph.version'"),
    (
        "unsupported_version.opg",
        opg(**{"opgraph.version": "2"}),
        "unsupported .opg version '2'; this opgraph reads version 1",
    ),
    ("version_not_string.opg", opg(**{"opgraph.version": 1}), "__metadata__['opgraph.version'] must be a string"),
    ("bad_graph_json.opg", opg(**{"opgraph.graph": '{"inputs": ['}), "graph JSON: not valid JSON"),
    (
        "offsets_out_of_range.opg",
        opg(entries=with_entry("b2", data_offsets=[352, 1 << 40])),
        "tensor 'b2': data_offsets [352, 1099511627776] run past the end of the data (368 bytes)",
    ),
    (
        "offsets_reversed.opg",
        opg(entries=with_entry("b2", data_offsets=[352, 336])),
        "tensor 'b2': data_offsets [352, 336] end before they begin",
    ),
    (
        "offsets_overlap.opg",
        opg(entries=with_entry("b1", data_offsets=[184, 216])),
        "tensors 'w1' (data_offsets [0, 192]) and 'b1' (data_offsets [184, 216]) overlap",
    ),
    (
        "bytes_do_not_match_shape.opg",
        opg(entries=with_entry("w1", shape=[8, 5])),
        "tensor 'w1': data_offsets [0, 192] hold 192 bytes; float32[8, 5] needs 160",
    ),
    (
        "unsupported_dtype.opg",
        opg(entries=with_entry("w1", dtype="F8_E4M3")),
        "tensor 'w1': dtype 'F8_E4M3' is not supported",
    ),
    (
        "negative_tensor_dim.opg",
        opg(entries=with_entry("w1", shape=[-8, -6])),
        "tensor 'w1': shape extent must be a non-negative integer, got -8",
    ),
    (
        "overflowing_tensor_dims.opg",
        opg(entries=with_entry("w1", shape=[HUGE, HUGE])),
        "tensor 'w1': shape [4611686018427387904,4611686018427387904] of F32 overflows",
    ),
    (
        "tensor_differs_from_constant.opg",
        opg(entries=with_entry("b1", dtype="I32")),
        "tensor 'b1' is int32[8]; the graph declares constant 'b1' as float32[8]",
    ),
    (
        "constant_without_tensor.opg",
        opg(entries={k: v for k, v in tensor_entries()[0].items() if k != "b2"}),
        "constant 'b2' (float32[4]) has no tensor in the file",
    ),
    (
        "packages_disagree.opg",
        opg(**{"opgraph.packages": '["mylib"]'}),
        "__metadata__['opgraph.packages'] lists [\"mylib\"] but the graph lists []",
    ),
    ("negative_input_dim.opg", opg(with_input_shape(["N", -6])), "inputs[0] ('x').shape[1]: dimension -6 is negative"),
    (
        "overflowing_input_dims.opg",
        opg(with_input_shape([HUGE, HUGE, 6])),
        "input 'x': float32[4611686018427387904, 4611686018427387904, 6] takes more bytes than memory can address",
    ),
    # 2^63 bytes: the element count fits in int64, the bytes in no allocation.
    (
        "value_too_large.opg",
        opg(with_input_shape([1 << 61])),
        "input 'x': float32[2305843009213693952] takes more bytes than memory can address",
    ),
    ("arena_too_large.opg", opg(TOO_LARGE_TOGETHER), "the memory plan needs more bytes than memory can address"),
    (
        "cycle.opg",
        opg(with_node(0, inputs=["z", "w1", "b1"])),
        "node 'fc1' (aten::linear): input 0 uses value 'z' before node 'fc2' defines it; "
        "nodes must be in topological order and form no cycle",
    ),
    (
        "used_before_defined.opg",
        opg(dict(GRAPH, nodes=[GRAPH["nodes"][1], GRAPH["nodes"][0], *GRAPH["nodes"][2:]])),
        "node 'relu' (aten::relu): input 0 uses value 'h' before node 'fc1' defines it",
    ),
    (
        "undefined_value.opg",
        opg(with_node(1, inputs=["nowhere"])),
        "input 0 uses value 'nowhere', which no graph input, constant or node defines",
    ),
    (
        "defined_twice.opg",
        opg(with_node(1, outputs=["h"])),
        "value 'h' is defined twice: by output 0 of node 'fc1' (aten::linear) and by output 0 of node 'relu'",
    ),
    (
        "undefined_output.opg",
        opg(dict(GRAPH, outputs=[{"name": "nowhere"}])),
        "graph output 'nowhere' is not a graph input, constant or node output",
    ),
    ("unknown_op.opg", opg(with_node(1, op_type="aten::frobnicate")), "missing ops: [1] aten::frobnicate (node relu)"),
    (
        "wrong_attribute_type.opg",
        opg(with_node(3, attrs={"dim": {"type": "str", "value": "1"}})),
        "node 'softmax' (aten::softmax.int): attribute 'dim' expects int, got str",
    ),
    (
        "unknown_attribute_type.opg",
        opg(with_node(3, attrs={"dim": {"type": "complex", "value": 1}})),
        "unknown attribute type 'complex'",
    ),
    (
        "wrong_input_count.opg",
        opg(with_node(1, inputs=["h", "h"])),
        "node 'relu' (aten::relu): expected 1 tensor inputs (self), got 2",
    ),
    ("shapes_disagree.opg", opg(with_input_shape(["N", 7])), "node 'fc1' (aten::linear)"),
    (
        "conv_stride_zero.opg",
        opg(cnn_with("conv", stride={"type": "ints", "value": [0, 0]})),
        "node 'conv' (aten::conv2d): stride: expected values of at least 1, got [0, 0]",
    ),
    (
        "pool_kernel_too_large.opg",
        opg(cnn_with("pool", kernel_size={"type": "ints", "value": [9, 9]})),
        "node 'pool' (aten::max_pool2d): self: input size 6 (padded to 6) is smaller than the kernel (9)",
    ),
    (
        "cat_dim_out_of_range.opg",
        opg(cnn_with("cat", dim={"type": "int", "value": 2})),
        "node 'cat' (aten::cat): dim: expected a dim in [-2, 1] for a tensor of rank 2, got 2",
    ),
    (
        "conv_padding_overflows.opg",
        opg(cnn_with("conv", padding={"type": "ints", "value": [HUGE, 1]})),
        "node 'conv' (aten::conv2d): padding: 4611686018427387904 + 4611686018427387904 overflows int64",
    ),
    (
        "conv_dilation_overflows.opg",
        opg(cnn_with("conv", dilation={"type": "ints", "value": [HUGE, 1]})),
        "node 'conv' (aten::conv2d): dilation: 4611686018427387904 * 2 overflows int64",
    ),
    (
        "pool_padding_overflows.opg",
        opg(cnn_with("pool", padding={"type": "ints", "value": [HUGE, 0]})),
        "node 'pool' (aten::max_pool2d): padding: 4611686018427387904 * 2 overflows int64",
    ),
    (
        "reshape_overflows.opg",
        opg(cnn_with("reshape", shape={"type": "ints", "value": [HUGE, 4, -1]})),
        "node 'reshape' (aten::reshape): shape: 4611686018427387904 * 4 overflows int64",
    ),
    (
        "reshape_changes_size.opg",
        opg(cnn_with("reshape", shape={"type": "ints", "value": [-1, 5, 3, 3]})),
        "node 'reshape' (aten::reshape): shape: cannot infer -1 in [-1, 5, 3, 3] for 10368 elements "
        "(shapes inferred with trial sizes N=192 for the symbolic dimensions)",
    ),
]


def write_corpus(folder):
    """Writes every case into `folder`; returns {file name: expected error text or None}."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data, _ in CASES:
        (folder / name).write_bytes(data)
    return {name: message for name, _, message in CASES}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_corpus.py FOLDER")
    write_corpus(sys.argv[1])
