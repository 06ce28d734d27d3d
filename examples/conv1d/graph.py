"""Seed 000's conv1d example in opgraph's Graph API: the conv1d op package is
a custom extension of a graph, which runs on the C++ executor; the graph is
then saved as .opg and run again by the `opgraph` command line tool.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from opgraph.graph import CPU, DeviceRef, DType, Graph, InferenceSession, TensorType, ops

HERE = Path(__file__).resolve().parent
OUT = HERE.parents[1] / "out" / "conv1d"


def numpy_conv1d(x, kernel):
    return np.correlate(np.pad(x, (0, len(kernel) - 1)), kernel, mode="valid")


def main() -> int:
    input_size, conv_size = 15, 4
    dtype = DType.float32
    input_tensor = np.arange(input_size, dtype=np.float32)
    kernel_tensor = np.arange(conv_size, dtype=np.float32)

    # The folder of the kernel's C++ sources, as seed 000 passes its folder of
    # Mojo kernels (built on first use, then cached).
    kernels = HERE / "op"
    with Graph(
        "conv_1d_graph",
        input_types=[
            TensorType(dtype, shape=input_tensor.shape, device=DeviceRef.CPU()),
            TensorType(dtype, shape=kernel_tensor.shape, device=DeviceRef.CPU()),
        ],
        custom_extensions=[kernels],
    ) as graph:
        input_value, kernel_value = graph.inputs
        output = ops.custom(
            name="conv1d",
            values=[input_value, kernel_value],
            out_types=[TensorType(dtype, shape=input_value.tensor.shape, device=DeviceRef.CPU())],
            parameters={
                "input_size": input_tensor.shape[0],
                "conv_size": kernel_tensor.shape[0],
                "dtype": dtype,
            },
        )[0].tensor
        graph.output(output)

    session = InferenceSession(devices=[CPU()])
    model = session.load(graph)
    result = model.execute(input_tensor, kernel_tensor)[0]
    expected = numpy_conv1d(input_tensor, kernel_tensor)
    print("Input array:", input_tensor)
    print("Convolution kernel:", kernel_tensor)
    print("NumPy reference result:", expected)
    print("Graph API result:", result)
    passed = np.allclose(result, expected)
    print(f"Graph API verification {'PASSED' if passed else 'FAILED'}")

    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / "conv1d.opg"
    graph.save(path)
    print(f"Saved the graph to {path}")
    cli = shutil.which("opgraph") or str(Path(sys.executable).with_name("opgraph"))
    np.save(OUT / "input.npy", input_tensor)
    np.save(OUT / "kernel.npy", kernel_tensor)
    command = [
        cli,
        "run",
        str(path),
        "--input",
        f"input0={OUT / 'input.npy'}",
        "--input",
        f"input1={OUT / 'kernel.npy'}",
        "--output-dir",
        str(OUT / "result"),
    ]
    print("$", " ".join(command))
    subprocess.run(command, check=True)
    from_cli = np.load(OUT / "result" / f"{graph.outputs[0].name}.npy")
    print("opgraph run result:", from_cli)
    cli_passed = np.allclose(from_cli, expected)
    print(f"command line verification {'PASSED' if cli_passed else 'FAILED'}")
    return 0 if passed and cli_passed else 1


if __name__ == "__main__":
    sys.exit(main())
