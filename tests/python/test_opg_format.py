""".opg files are safetensors files: written by opgraph, read by the
safetensors package, and the other way round; corrupt files are errors,
among them the fuzzer's hand-made bad files (fuzz/make_corpus.py)."""

import json
import re
import struct

import numpy as np
import pytest
import repo_modules
import torch
import torch.nn.functional as F
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

import opgraph

GRAPH = {
    "name": "affine",
    "inputs": [{"name": "x", "dtype": "float32", "shape": ["N", 5]}],
    "outputs": [{"name": "y"}],
    "constants": [
        {"name": "w", "dtype": "float32", "shape": [3, 5]},
        {"name": "b", "dtype": "float64", "shape": [3]},
        {"name": "steps", "dtype": "int64", "shape": [2]},
    ],
    "nodes": [{"name": "fc", "op_type": "aten::linear", "inputs": ["x", "w", None], "outputs": ["y"]}],
}


def weights():
    rng = np.random.default_rng(0)
    return {
        "w": rng.standard_normal((3, 5)).astype(np.float32),
        "b": rng.standard_normal(3),
        "steps": np.array([7, -1], dtype=np.int64),
    }


def test_round_trip(tmp_path):
    path = tmp_path / "affine.opg"
    opgraph.save_opg(path, json.dumps(GRAPH), weights())
    graph, loaded = opgraph.load_opg(path)
    assert graph == opgraph.Graph.from_json(json.dumps(GRAPH))
    assert sorted(loaded) == ["b", "steps", "w"]
    for name, value in weights().items():
        assert loaded[name].dtype == value.dtype
        np.testing.assert_array_equal(loaded[name], value)


def test_safetensors_reads_the_weights_and_metadata(tmp_path):
    path = tmp_path / "affine.opg"
    opgraph.save_opg(path, opgraph.Graph.from_json(json.dumps(GRAPH)), weights())
    tensors = load_file(path)
    assert sorted(tensors) == ["b", "steps", "w"]
    for name, value in weights().items():
        np.testing.assert_array_equal(tensors[name], value)
    with safe_open(path, framework="numpy") as f:
        metadata = f.metadata()
    assert metadata["opgraph.version"] == "1"
    assert json.loads(metadata["opgraph.packages"]) == []
    assert opgraph.Graph.from_json(metadata["opgraph.graph"]) == opgraph.Graph.from_json(json.dumps(GRAPH))


def test_a_file_written_by_safetensors_runs(tmp_path):
    path = tmp_path / "affine.opg"
    graph = dict(GRAPH, constants=GRAPH["constants"][:1])
    w = weights()["w"]
    save_file(
        {"w": w}, path, metadata={"opgraph.version": "1", "opgraph.graph": json.dumps(graph), "opgraph.packages": "[]"}
    )
    x = np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_allclose(opgraph.Session(path).run(x)[0], x @ w.T, rtol=1e-5, atol=1e-6)


def test_save_checks_weights_against_the_constants(tmp_path):
    path = tmp_path / "affine.opg"
    bad = weights()
    bad["w"] = bad["w"].T
    with pytest.raises(opgraph.Error, match=r"weight 'w' is float32\[5, 3\]; the graph declares float32\[3, 5\]"):
        opgraph.save_opg(path, json.dumps(GRAPH), bad)
    with pytest.raises(opgraph.Error, match=r"no weight given for constant 'w'"):
        opgraph.save_opg(path, json.dumps(GRAPH), {})
    assert not path.exists()


def write(path, header, data=b""):
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


def header(**tensors):
    metadata = {
        "opgraph.version": "1",
        "opgraph.packages": "[]",
        "opgraph.graph": json.dumps(dict(GRAPH, constants=GRAPH["constants"][:1])),
    }
    return {"__metadata__": metadata, **tensors}


W = {"dtype": "F32", "shape": [3, 5], "data_offsets": [0, 60]}


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: p.write_bytes(b"\x01\x02"), r"the file is 2 bytes; a safetensors file starts with an 8-byte header"),
        (
            lambda p: p.write_bytes(struct.pack("<Q", 1 << 40) + b"{}"),
            r"header length 1099511627776 runs past the end of the file \(10 bytes",
        ),
        (
            lambda p: write(p, header(w=W), bytes(59)),
            r"tensor 'w': data_offsets \[0, 60\] run past the end of the data",
        ),
        (
            lambda p: write(p, header(w=dict(W, dtype="F8_E4M3")), bytes(60)),
            r"tensor 'w': dtype 'F8_E4M3' is not supported",
        ),
        (
            lambda p: write(p, header(w=W, v=dict(W, data_offsets=[56, 116])), bytes(116)),
            r"tensors 'w' \(data_offsets \[0, 60\]\) and 'v' \(data_offsets \[56, 116\]\) overlap",
        ),
        (lambda p: write(p, header(w=dict(W, shape=[1 << 62, 8])), bytes(60)), r"tensor 'w': shape .* overflows"),
        (
            lambda p: write(
                p, {**header(w=W), "__metadata__": {**header()["__metadata__"], "opgraph.version": "7"}}, bytes(60)
            ),
            r"unsupported .opg version '7'; this opgraph reads version 1",
        ),
        (lambda p: write(p, header(), b""), r"constant 'w' \(float32\[3, 5\]\) has no tensor in the file"),
        (lambda p: p.write_bytes(struct.pack("<Q", 5) + b"{oops"), r"header \(bytes 8 to 13\) is not valid JSON"),
    ],
)
def test_corrupt_files_are_errors(tmp_path, make, message):
    path = tmp_path / "bad.opg"
    make(path)
    with pytest.raises(opgraph.Error, match=message):
        opgraph.load_opg(path)
    with pytest.raises(opgraph.Error, match=message):
        opgraph.Session(path)


make_corpus = repo_modules.load("fuzz/make_corpus.py")
BAD_FILES = [(name, message) for name, _, message in make_corpus.CASES if message is not None]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus")
    make_corpus.write_corpus(folder)
    return folder


def test_the_corpus_has_its_valid_files_and_every_kind_of_bad_one():
    assert [name for name, _, message in make_corpus.CASES if message is None] == [
        "valid.opg",
        "valid_quantized.opg",
        "valid_quantized_zero_points.opg",
    ]
    assert len(BAD_FILES) >= 25
    assert len({name for name, _ in BAD_FILES}) == len(BAD_FILES)


def test_the_valid_corpus_file_runs(corpus):
    session = opgraph.Session(corpus / "valid.opg", threads=2)
    w = {
        c["name"]: np.array(make_corpus.WEIGHTS[c["name"]], dtype=np.float32).reshape(c["shape"])
        for c in make_corpus.GRAPH["constants"]
    }
    with safe_open(corpus / "valid.opg", framework="numpy") as f:
        for name, value in w.items():
            np.testing.assert_array_equal(f.get_tensor(name), value)
    x = np.random.default_rng(2).standard_normal((make_corpus.BATCH, 6)).astype(np.float32)
    (y,) = session.run(x)

    z = np.maximum(x @ w["w1"].T + w["b1"], 0) @ w["w2"].T + w["b2"]
    reference = np.exp(z - z.max(axis=1, keepdims=True))
    reference /= reference.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(y, reference, rtol=1e-5, atol=1e-6)
    t = {name: torch.from_numpy(value) for name, value in w.items()}
    by_torch = torch.softmax(F.linear(F.relu(F.linear(torch.from_numpy(x), t["w1"], t["b1"])), t["w2"], t["b2"]), 1)
    np.testing.assert_allclose(y, by_torch.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["valid_quantized.opg", "valid_quantized_zero_points.opg"])
def test_the_valid_quantized_corpus_files_run(corpus, name):
    """Their levels (less their zero points) times their scales, a scale per output and 32 inputs."""
    session = opgraph.Session(corpus / name, threads=2)
    with safe_open(corpus / name, framework="numpy") as f:
        levels, scales = f.get_tensor("levels"), f.get_tensor("scales")
        zero_points = f.get_tensor("zero_points") if "zero_points" in f.keys() else np.zeros_like(scales)
    assert levels.dtype == np.int8 and np.abs(levels).max() > 1
    assert ("zero_points" in name) == bool(np.abs(zero_points).max() > 0)
    weight = (levels.astype(np.float64) - np.repeat(zero_points, 32, axis=1)) * np.repeat(scales, 32, axis=1)
    x = np.random.default_rng(3).standard_normal((make_corpus.BATCH, 64)).astype(np.float32)
    np.testing.assert_allclose(session.run(x)[0], x @ weight.T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name, message", BAD_FILES, ids=[name for name, _ in BAD_FILES])
def test_each_bad_corpus_file_gives_its_error(corpus, name, message):
    path = corpus / name
    with pytest.raises(opgraph.Error, match=re.escape(message)) as error:
        opgraph.Session(path)
    assert str(path) in str(error.value)
