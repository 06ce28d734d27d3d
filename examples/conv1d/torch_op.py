"""The conv1d op package as a PyTorch custom op.

opgraph.torch.CustomOpLibrary builds the package from the sources in op/,
loads it and registers its ops with torch.library. The op is called
destination-passing: the caller allocates the output, the op writes it.
"""

import sys
from pathlib import Path

import numpy as np
import torch

import opgraph
from opgraph.graph import CPU, DType, Graph, InferenceSession, TensorType
from opgraph.graph import ops as graph_ops
from opgraph.torch import CustomOpLibrary

HERE = Path(__file__).resolve().parent


def numpy_conv1d(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    return np.correlate(np.pad(x, (0, len(kernel) - 1)), kernel, mode="valid")


def conv1d_pytorch(ops: CustomOpLibrary, input_tensor: torch.Tensor, kernel_tensor: torch.Tensor) -> torch.Tensor:
    output_tensor = torch.empty_like(input_tensor)
    conv1d = ops.conv1d[{"input_size": input_tensor.shape[0], "conv_size": kernel_tensor.shape[0]}]
    torch.compile(conv1d)(output_tensor, input_tensor, kernel_tensor)
    return output_tensor


def conv1d_graph(package: str, x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    types = [TensorType(DType.float32, x.shape), TensorType(DType.float32, kernel.shape)]
    with Graph("conv_1d_graph", input_types=types, custom_extensions=[package]) as graph:
        input_value, kernel_value = graph.inputs
        output = graph_ops.custom(
            name="conv1d",
            values=[input_value, kernel_value],
            out_types=[types[0]],
            parameters={"input_size": len(x), "conv_size": len(kernel)},
        )[0].tensor
        graph.output(output)
    return InferenceSession(devices=[CPU()]).load(graph).execute(x, kernel)[0]


def verify(what: str, result: np.ndarray, expected: np.ndarray) -> bool:
    ok = result.shape == expected.shape and np.allclose(result, expected)
    print(f"{what} verification {'PASSED' if ok else 'FAILED'}")
    return ok


def main() -> int:
    ops = CustomOpLibrary(HERE / "op")
    print(f"Registered {', '.join(ops.ops)} as torch.ops.{ops.namespace}.*")
    x = np.arange(15, dtype=np.float32)
    kernel = np.arange(4, dtype=np.float32)
    expected = numpy_conv1d(x, kernel)
    print("Input array:", x)
    print("Convolution kernel:", kernel)
    print("NumPy reference result:", expected)

    print("\nPyTorch custom op (torch.compile, destination-passing)")
    result = conv1d_pytorch(ops, torch.from_numpy(x), torch.from_numpy(kernel)).numpy()
    print("PyTorch custom op result:", result)
    passed = verify("PyTorch custom op", result, expected)

    print("\nopgraph's own API (NumPy in, NumPy out)")
    direct = opgraph.ops.call(f"{ops.namespace}::conv1d", x, kernel, input_size=len(x), conv_size=len(kernel))
    print("opgraph.ops.call result:", direct)
    passed &= verify("opgraph.ops.call", direct, expected)

    print("\nGraph API (the C++ graph executor)")
    from_graph = conv1d_graph(ops.path, x, kernel)
    print("Graph API result:", from_graph)
    passed &= verify("Graph API", from_graph, expected)
    same = np.array_equal(result, direct) and np.array_equal(result, from_graph)
    if same:
        print("PyTorch, opgraph.ops.call and Graph API results MATCH")
    return 0 if passed and same else 1


if __name__ == "__main__":
    sys.exit(main())
