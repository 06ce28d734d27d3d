"""The `opgraph` command-line tool, run as the installed executable."""

import json
import re
import subprocess

import numpy as np
import pytest
from torch_models import cnn, save_cnn, torch_forward

import opgraph

FLOAT32_SUMS = dict(rtol=1e-4, atol=1e-5)


def random(shape, seed, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """cnn.opg (batch "N") and its torch module, in a folder of their own."""
    folder = tmp_path_factory.mktemp("cli")
    return folder / "cnn.opg", save_cnn(folder / "cnn.opg")


@pytest.fixture
def tool(opgraph_cli, tmp_path):
    """Runs `opgraph *args` in tmp_path."""

    def run(*args):
        return subprocess.run(
            [str(opgraph_cli), *map(str, args)], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )

    return run


def succeeds(result):
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout


@pytest.mark.parametrize("batch", [1, 5])
def test_run_writes_outputs_that_match_torch(tool, model, tmp_path, batch):
    path, module = model
    x = random((batch, 3, 12, 12), batch)
    np.save(tmp_path / "x.npy", x)
    stdout = succeeds(tool("run", path, "--input", "x=x.npy", "--output-dir", "out", "--threads", 1))
    assert stdout == f"logits: float32[{batch}, 10] -> out/logits.npy\n"
    logits = np.load(tmp_path / "out" / "logits.npy")
    assert logits.dtype == np.float32 and logits.shape == (batch, 10)
    np.testing.assert_allclose(logits, torch_forward(module, x), **FLOAT32_SUMS)


@pytest.mark.skipif(not opgraph.cpu_has_bf16(), reason="this CPU does not multiply bfloat16 (AVX-512 BF16 or AMX)")
def test_run_in_bf16_gives_the_sessions_outputs(tool, model, tmp_path):
    path, _ = model
    x = random((2, 3, 12, 12), 0)
    np.save(tmp_path / "x.npy", x)
    succeeds(tool("run", path, "--input", "x=x.npy", "--output-dir", "out", "--threads", 1, "--precision", "bf16"))
    expected = opgraph.Session(path, threads=1, precision="bf16").run(x)[0]
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "logits.npy"), expected)
    assert np.abs(expected - opgraph.Session(path, threads=1).run(x)[0]).max() > 0


def test_run_with_several_inputs_dtypes_and_outputs(tool, tmp_path):
    # A Tensor[] argument fed from two files of a dtype other than float32;
    # one output's name is no file name, another output is listed twice and
    # written once.
    graph = opgraph.Graph.from_json(
        json.dumps(
            {
                "inputs": [
                    {"name": "a", "dtype": "int64", "shape": ["N", 2]},
                    {"name": "b", "dtype": "int64", "shape": [3, 2]},
                ],
                "outputs": [{"name": "joined/all"}, {"name": "a"}, {"name": "joined/all"}],
                "nodes": [
                    {"name": "cat", "op_type": "aten::cat", "inputs": [["a", "b", "a"]], "outputs": ["joined/all"]}
                ],
            }
        )
    )
    opgraph.save_opg(tmp_path / "cat.opg", graph)
    a = np.arange(8).reshape(4, 2)
    b = -np.arange(6).reshape(3, 2)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    stdout = succeeds(tool("run", "cat.opg", "--input=b=b.npy", "--input", "a=a.npy", "--output-dir=out"))
    assert stdout.splitlines() == ["joined/all: int64[11, 2] -> out/joined_all.npy", "a: int64[4, 2] -> out/a.npy"]
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "joined_all.npy"), np.concatenate([a, b, a]))
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "a.npy"), a)
    # N + 3 + N rows: a size that is no plain symbol.
    assert "  0  cat   aten::cat  [a, b, a]  joined/all: int64[?, 2]\n" in succeeds(tool("inspect", "cat.opg"))


def test_run_loads_the_graphs_packages_from_package_paths(tool, tmp_path, test_packages):
    package = test_packages["ops"]
    graph = opgraph.Graph.from_json(
        json.dumps(
            {
                "inputs": [{"name": "x", "dtype": "float64", "shape": [7]}],
                "outputs": [{"name": "y"}],
                "nodes": [
                    {
                        "name": "scale",
                        "op_type": "test_ops::scale",
                        "inputs": ["x"],
                        "outputs": ["y"],
                        "attrs": {"factor": {"type": "float", "value": -1.5}},
                    }
                ],
                "packages": ["opgraph_test_ops"],
            }
        )
    )
    opgraph.save_opg(tmp_path / "scale.opg", graph)
    x = np.linspace(-3, 3, 7)
    np.save(tmp_path / "x.npy", x)
    result = tool("run", "scale.opg", "--input", "x=x.npy", "--output-dir", "out")
    assert result.returncode == 1
    assert re.fullmatch(
        r"opgraph run: 'scale.opg': op package 'opgraph_test_ops' not found: looked for "
        r"libopgraph_test_ops.so, opgraph_test_ops.so, opgraph_test_ops in \S+; .*\n",
        result.stderr,
    )
    succeeds(tool("run", "scale.opg", "--input", "x=x.npy", "--output-dir", "out", "--package-path", package.parent))
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "y.npy"), -1.5 * x)
    assert "packages: opgraph_test_ops\n" in succeeds(tool("inspect", "scale.opg", "--package-path", package))


def bench_figures(stdout):
    figures = dict(re.findall(r"^(p50|p90|p99): ([0-9.]+) ms$", stdout, re.M))
    assert sorted(figures) == ["p50", "p90", "p99"], stdout
    return {k: float(v) for k, v in figures.items()}


def test_bench_prints_percentiles_throughput_and_memory(tool, model):
    path, _ = model
    stdout = succeeds(tool("bench", path, "--dim", "N=3", "--threads", 2, "--warmup", 2, "--iters", 20))
    figures = bench_figures(stdout)
    assert 0 < figures["p50"] <= figures["p90"] <= figures["p99"]
    assert "inputs: x: float32[3, 3, 12, 12]\n" in stdout
    assert "threads: 2, warmup runs: 2, timed runs: 20\n" in stdout
    assert float(re.search(r"^throughput: ([0-9.]+) runs/s$", stdout, re.M).group(1)) > 0
    # The arena of this session's plan, and one run's outputs (3 x 10 floats).
    session = opgraph.Session(path)
    session.run(random((3, 3, 12, 12), 0))
    arena = session.planned_peak_bytes
    assert f"(planned arena {arena / 1024:.1f} KiB + outputs 120 B;" in stdout
    assert re.search(r"^max RSS: [0-9.]+ MiB$", stdout, re.M)


def test_bench_reads_inputs_from_files(tool, model, tmp_path):
    path, _ = model
    np.save(tmp_path / "x.npy", random((2, 3, 12, 12), 0))
    stdout = succeeds(tool("bench", path, "--input", "x=x.npy", "--iters", 3, "--warmup", 0))
    assert "inputs: x: float32[2, 3, 12, 12]\n" in stdout
    bench_figures(stdout)


def test_inspect_lists_inputs_outputs_nodes_and_weights(tool, model):
    path, _ = model
    stdout = succeeds(tool("inspect", path))
    lines = [line.split() for line in stdout.splitlines()]
    assert ["x", "float32[N,", "3,", "12,", "12]"] in lines
    assert ["logits", "float32[N,", "10]"] in lines
    assert "  #  name     op                        inputs" in stdout
    node_lines = {line[1]: " ".join(line[2:]) for line in lines if line and line[0].isdigit()}
    assert list(node_lines) == ["conv0", "relu0", "pool", "conv1", "relu1", "flatten", "fc"]
    assert node_lines["conv0"] == ("aten::conv2d x, conv0.weight, conv0.bias c0: float32[N, 8, 12, 12] padding=[1, 1]")
    assert node_lines["pool"] == "aten::max_pool2d r0 p: float32[N, 8, 6, 6] kernel_size=[2, 2]"
    assert node_lines["fc"] == "aten::linear f, fc.weight, fc.bias logits: float32[N, 10]"
    _, _, weights = cnn()
    size = sum(w.nbytes for w in weights.values())
    assert f"weights: 6 tensors, {size} bytes ({size / 1024:.1f} KiB)\n" in stdout
    assert stdout.endswith("packages: none\n")


def test_ops_lists_every_op_with_its_schema(tool, test_packages):
    lines = succeeds(tool("ops")).splitlines()
    assert str(opgraph.op_schema("aten::conv2d")) in lines
    assert (
        "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], "
        "SymInt[2] padding=[0, 0], SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor"
    ) in lines
    assert "aten::cat(Tensor[] tensors, int dim=0) -> Tensor" in lines
    # The built-in ops, those of PyTorch's quantization tools among them (this process may have loaded packages too).
    built_in = ("aten", "opgraph", "torchao", "quantized_decomposed")
    assert [line.split("(")[0] for line in lines] == sorted(
        name for name in opgraph.list_ops() if name.split("::")[0] in built_in
    )
    loaded = succeeds(tool("ops", "--load", test_packages["ops"])).splitlines()
    assert set(lines) < set(loaded)
    assert any(line.startswith("test_ops::scale(") for line in loaded)


# The graph as it runs: each relu is applied by the convolution before it, and on CPUs with AVX2 or AVX-512 the
# convolutions and the pooling between them keep channel blocks (test_nchwc_layout.py).
BLOCKED = opgraph.get_cpu_capability() != "default"
RUN_NODES = ["conv0", "pool", "conv1"] + (["r1.to_nchw"] if BLOCKED else []) + ["flatten", "fc"]
CONV = "opgraph::conv2d_nchwc" if BLOCKED else "opgraph::conv2d"


def test_profile_writes_one_event_per_node_per_run(tool, model, tmp_path):
    path, _ = model
    stdout = succeeds(tool("profile", path, "--trace", "trace.json", "--iters", 3, "--dim", "N=2"))
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    nodes = len(RUN_NODES)
    assert [e["name"] for e in events] == RUN_NODES * 3
    # Run 0 is the warm-up, not recorded.
    assert [e["args"]["run"] for e in events] == [1] * nodes + [2] * nodes + [3] * nodes
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in events)
    assert events[0]["args"]["op"] == CONV
    assert events[0]["args"]["shapes"].startswith("float32[2, 3, 12, 12], float32[8, 3, 3, 3], float32[8]")
    assert f"wrote trace.json: {3 * nodes} events ({nodes} nodes x 3 runs after 1 warm-up)" in stdout
    assert re.search(rf"^  2  conv1 +{CONV}  +[0-9.]+  +[0-9.]+%$", stdout, re.M), stdout
    # The by-op table: the two convolutions in one row.
    assert re.search(rf"^  {CONV} +2  +[0-9.]+  +[0-9.]+%$", stdout, re.M), stdout


def test_profile_records_no_run_after_warmup_only_when_asked(tool, model, tmp_path):
    path, _ = model
    succeeds(tool("profile", path, "--trace", "trace.json", "--iters", 2, "--warmup", 0, "--dim", "N=2"))
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    assert [e["args"]["run"] for e in events] == [0] * len(RUN_NODES) + [1] * len(RUN_NODES)


def test_help_describes_the_tool_and_each_command(tool):
    stdout = succeeds(tool("--help"))
    for command in ["run", "bench", "inspect", "ops", "profile"]:
        assert re.search(rf"^  {command} +\S", stdout, re.M)
        help_text = succeeds(tool(command, "--help"))
        assert help_text.startswith(f"usage: opgraph {command}")
        assert "  --help " in help_text
    assert "--output-dir DIR" in succeeds(tool("run", "-h"))
    assert "--package-path DIR" in succeeds(tool("bench", "--help"))


@pytest.fixture(scope="module")
def bad_files(model):
    """Input files that are wrong in one way each, beside the model."""
    path, _ = model
    folder = path.parent
    np.save(folder / "x.npy", random((2, 3, 12, 12), 0))
    np.save(folder / "x64.npy", random((2, 3, 12, 12), 0, np.float64))
    np.save(folder / "channels.npy", random((2, 4, 12, 12), 0))
    np.save(folder / "fortran.npy", np.asfortranarray(random((2, 3, 12, 12), 0)))
    np.save(folder / "big_endian.npy", random((2, 3, 12, 12), 0, ">f4"))
    (folder / "text.npy").write_text("not an array")
    (folder / "garbage.opg").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}      ")
    clash = opgraph.Graph.from_json(
        json.dumps(
            {
                "inputs": [{"name": "x", "dtype": "float32", "shape": [2]}],
                "outputs": [{"name": "a/b"}, {"name": "a_b"}],
                "nodes": [
                    {"name": "relu", "op_type": "aten::relu", "inputs": ["x"], "outputs": ["a/b"]},
                    {"name": "tanh", "op_type": "aten::tanh", "inputs": ["x"], "outputs": ["a_b"]},
                ],
            }
        )
    )
    opgraph.save_opg(folder / "clash.opg", clash)
    return folder


ERROR_CASES = [
    # (arguments, exit status, message after "opgraph <command>: ")
    (
        ["run", "cnn.opg", "--inptu", "x=x.npy"],
        2,
        r"unknown flag '--inptu'; the flags of 'run' are: --input, --output-dir, --threads, --precision, --weights, "
        r"--group-size, --activations, --products, --disable-pass, --package-path \(see 'opgraph run --help'\)",
    ),
    (
        ["run", "cnn.opg", "--input", "x=x.npy", "--output-dir", "out", "--weights", "int3"],
        2,
        r"--weights: expected f32, int8, int4, int8_asym or int4_asym, got 'int3'",
    ),
    (
        ["run", "cnn.opg", "--input", "x=x.npy", "--output-dir", "out", "--group-size", "32"],
        2,
        r"--group-size: given without --weights int8 or int4",
    ),
    (["run", "cnn.opg", "--input", "x=x.npy"], 2, r"--output-dir is required \(see 'opgraph run --help'\)"),
    (
        ["run", "cnn.opg", "--input", "x=x.npy", "--output-dir", "out", "--precision", "fp16"],
        2,
        r"--precision: expected f32 or bf16, got 'fp16'",
    ),
    (["run", "--output-dir", "out"], 2, r"missing the model.opg argument"),
    (["run", "cnn.opg", "other.opg"], 2, r"unexpected argument 'other.opg' after model.opg 'cnn.opg'"),
    (
        ["run", "cnn.opg", "--input", "x=x.npy", "--output-dir", "out", "--activations", "int4"],
        2,
        r"--activations: expected f32 or int8, got 'int4'",
    ),
    (
        ["run", "cnn.opg", "--input", "x=x.npy", "--output-dir", "out", "--products", "gpu"],
        2,
        r"--products: expected auto, onednn, mkl or panels, got 'gpu'",
    ),
    (["quantize", "cnn.opg", "--weights", "int8"], 2, r"missing the OUT.opg argument"),
    (["quantize", "cnn.opg", "out.opg"], 2, r"--weights is required"),
    (
        ["quantize", "cnn.opg", "out.opg", "--weights", "f32"],
        2,
        r"--weights: expected int8, int4, int8_asym or int4_asym, got 'f32'",
    ),
    (
        ["quantize", "cnn.opg", "a.opg", "b.opg", "--weights", "int8"],
        2,
        r"unexpected argument 'b.opg' after IN.opg OUT.opg 'cnn.opg' 'a.opg'",
    ),
    (["run", "cnn.opg", "--input", "x.npy", "--output-dir", "out"], 2, r"--input expects NAME=FILE, got 'x.npy'"),
    (
        ["run", "missing.opg", "--input", "x=x.npy", "--output-dir", "out"],
        1,
        r"load_opg 'missing.opg': cannot open 'missing.opg': No such file or directory",
    ),
    (["run", "garbage.opg", "--input", "x=x.npy", "--output-dir", "out"], 1, r"load_opg 'garbage.opg': .*JSON"),
    (
        ["run", "cnn.opg", "--input", "x=missing.npy", "--output-dir", "out"],
        1,
        r"cannot open 'missing.npy': No such file or directory",
    ),
    (
        ["run", "cnn.opg", "--input", "x=text.npy", "--output-dir", "out"],
        1,
        r"text.npy: not a .npy file \(it does not start with \\x93NUMPY\)",
    ),
    (
        ["run", "cnn.opg", "--input", "x=fortran.npy", "--output-dir", "out"],
        1,
        r"fortran.npy: the array is in Fortran order",
    ),
    (
        ["run", "cnn.opg", "--input", "x=big_endian.npy", "--output-dir", "out"],
        1,
        r"big_endian.npy: the array is big-endian \('>f4'\)",
    ),
    (
        ["run", "cnn.opg", "--input", "y=x.npy", "--output-dir", "out"],
        1,
        r"--input y=...: no input named 'y'; the graph's inputs are: x",
    ),
    (
        ["run", "cnn.opg", "--input", "x=x.npy", "--input", "x=x.npy", "--output-dir", "out"],
        1,
        r"--input: input 'x' is given twice",
    ),
    (
        ["run", "cnn.opg", "--output-dir", "out"],
        1,
        r"input 'x' \(float32\[N, 3, 12, 12\]\) is missing; give it with --input x=FILE",
    ),
    (
        ["run", "cnn.opg", "--input", "x=channels.npy", "--output-dir", "out"],
        1,
        r"input 'x': expected float32\[N, 3, 12, 12\], got float32\[2, 4, 12, 12\]",
    ),
    (
        ["run", "cnn.opg", "--input", "x=x64.npy", "--output-dir", "out"],
        1,
        r"input 'x': expected float32\[N, 3, 12, 12\], got float64\[2, 3, 12, 12\]",
    ),
    (
        ["run", "clash.opg", "--input", "x=x.npy", "--output-dir", "out"],
        1,
        r"outputs 'a/b' and 'a_b' would both be written to a_b.npy",
    ),
    (
        ["run", "cnn.opg", "--input", "x=x.npy", "--output-dir", "x.npy"],
        1,
        r"cannot create the output folder 'x.npy': Not a directory",
    ),
    (
        ["bench", "cnn.opg"],
        1,
        r"input 'x' \(float32\[N, 3, 12, 12\]\) has the symbolic dimension 'N'; give its size with --dim N=SIZE",
    ),
    (["bench", "cnn.opg", "--dim", "N=2", "--iters", "0"], 2, r"--iters: expected an integer of at least 1, got '0'"),
    (
        ["bench", "cnn.opg", "--dim", "N=2", "--threads", "two"],
        2,
        r"--threads: expected an integer of at least 1, got 'two'",
    ),
    (["bench", "cnn.opg", "--dim", "N"], 2, r"--dim expects SYMBOL=SIZE, got 'N'"),
    (
        ["bench", "cnn.opg", "--dim", "M=2"],
        1,
        r"--dim M=2: no input or state has the dimension 'M'; their symbols are: N",
    ),
    (
        ["bench", "cnn.opg", "--input", "x=x.npy", "--dim", "N=3"],
        1,
        r"input 'x' \(x.npy, float32\[2, 3, 12, 12\]\) has N = 2, but N is 3",
    ),
    (["bench", "cnn.opg", "--warmup"], 2, r"--warmup needs a value \(--warmup W\)"),
    (["profile", "cnn.opg", "--dim", "N=1"], 2, r"--trace is required"),
    (
        ["inspect", "cnn.opg", "--threads", "2"],
        2,
        r"unknown flag '--threads'; the flags of 'inspect' are: "
        r"--package-path",
    ),
    (["ops", "--load", "missing.so"], 1, r"load_library: no such file: 'missing.so'"),
    (["ops", "extra"], 2, r"unexpected argument 'extra'; 'ops' takes only flags"),
]


@pytest.mark.parametrize("args, status, message", ERROR_CASES, ids=[" ".join(c[0]) for c in ERROR_CASES])
def test_errors_are_one_line_and_a_non_zero_exit(opgraph_cli, bad_files, args, status, message):
    result = subprocess.run([str(opgraph_cli), *args], cwd=bad_files, capture_output=True, text=True, timeout=120)
    assert result.returncode == status, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert re.fullmatch(f"opgraph {args[0]}: {message}.*", lines[0]), lines[0]


@pytest.mark.parametrize(
    "args, message",
    [
        (
            [],
            r"opgraph: no command given; the commands are: run, bench, generate, inspect, ops, profile, quantize, test-package \(see 'opgraph --help'\)",
        ),
        (
            ["compile"],
            r"opgraph: unknown command 'compile'; the commands are: run, bench, generate, inspect, ops, profile, quantize, test-package .*",
        ),
    ],
)
def test_a_missing_or_unknown_command_is_one_line(opgraph_cli, args, message):
    result = subprocess.run([str(opgraph_cli), *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert re.fullmatch(message + "\n", result.stderr), result.stderr
