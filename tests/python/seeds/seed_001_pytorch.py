"""Seed 001 (from MAX Graph to PyTorch custom ops): the seed's
conv1d_pytorch with its solution line, imports changed
(max.torch -> opgraph.torch). The seed shows the printed output of its full
script (problems/p20/p20.py) but not the rest of its code; the lines after
conv1d_pytorch print that output, comparing with the graph of seed 000 as
the seed's script compares with its MAX Graph puzzle. The conv1d package has
CPU kernels, so the tensors are on the CPU where the seed's are on CUDA.
"""
from pathlib import Path

import numpy as np
import torch

from opgraph.graph import CPU, DType, Graph, InferenceSession, TensorType
from opgraph.graph import ops as graph_ops
from opgraph.torch import CustomOpLibrary


# ---- the seed's code -------------------------------------------------------
def conv1d_pytorch(
    input_tensor: torch.Tensor, kernel_tensor: torch.Tensor
) -> torch.Tensor:
    """
    1D convolution using our custom PyTorch operation.
    This demonstrates the transition from MAX Graph (p15) to PyTorch CustomOpLibrary.
    Uses the EXACT same Mojo kernel, but different Python integration!
    """
    # Load our custom operations
    mojo_kernels = Path(__file__).parent / "op"
    ops = CustomOpLibrary(mojo_kernels)
    # Create output tensor with same shape as input
    output_tensor = torch.empty_like(input_tensor)
    # Call our custom conv1d operation with explicit output tensor
    # The Mojo signature expects: (out, input, kernel)
    conv1d = ops.conv1d[
        {
            "input_size": input_tensor.shape[0],
            "conv_size": kernel_tensor.shape[0],
        }
    ]
    torch.compile(conv1d)(output_tensor, input_tensor, kernel_tensor)
    return output_tensor
# ---- end of the seed's code ------------------------------------------------


def conv1d_max_graph(input_array: np.ndarray, kernel_array: np.ndarray) -> np.ndarray:
    types = [TensorType(DType.float32, input_array.shape), TensorType(DType.float32, kernel_array.shape)]
    with Graph("conv_1d_graph", input_types=types, custom_extensions=[Path(__file__).parent / "op"]) as graph:
        input_value, kernel_value = graph.inputs
        output = graph_ops.custom(name="conv1d", values=[input_value, kernel_value], out_types=[types[0]],
                                  parameters={"input_size": len(input_array), "conv_size": len(kernel_array)})
        graph.output(output[0].tensor)
    return InferenceSession(devices=[CPU()]).load(graph).execute(input_array, kernel_array)[0]


def main():
    print("Puzzle 20: From MAX Graph to PyTorch Custom Ops")
    print("=" * 60)
    input_array = np.arange(15, dtype=np.float32)
    kernel_array = np.arange(4, dtype=np.float32)
    expected = np.correlate(np.pad(input_array, (0, len(kernel_array) - 1)), kernel_array, mode="valid")
    print("Input array:", input_array)
    print("Convolution kernel:", kernel_array)
    print("NumPy reference result:", expected)
    device = "cpu"
    print(f"Testing PyTorch Custom Op (device: {device})")
    print("-" * 40)
    result = conv1d_pytorch(torch.from_numpy(input_array).to(device), torch.from_numpy(kernel_array).to(device))
    result = result.cpu().numpy()
    print("PyTorch custom op result:", result)
    np.testing.assert_allclose(result, expected)
    print("✅ PyTorch custom op verification PASSED")
    print("Comparing with MAX Graph approach (like p15)")
    print("-" * 44)
    graph_result = conv1d_max_graph(input_array, kernel_array)
    print("MAX Graph result:", graph_result)
    np.testing.assert_allclose(graph_result, expected)
    print("✅ MAX Graph verification PASSED")
    np.testing.assert_array_equal(result, graph_result)
    print("✅ PyTorch and MAX Graph results MATCH")


if __name__ == "__main__":
    main()
