"""The conv1d op package end to end: build it, load it, run it from NumPy.

output[i] = sum_j input[i + j] * kernel[j], zero past the end of the input.
"""

import sys
from pathlib import Path

import numpy as np

import opgraph

HERE = Path(__file__).resolve().parent


def numpy_conv1d(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    return np.correlate(np.pad(x, (0, len(kernel) - 1)), kernel, mode="valid")


def main() -> int:
    package = opgraph.build_package(HERE, target="conv1d")
    library = opgraph.load_library(package)
    print(f"Loaded {library.path}: {', '.join(library.ops)}")
    print(f"Schema: {opgraph.op_schema('examples::conv1d')}")

    input_size, conv_size = 15, 4
    x = np.arange(input_size, dtype=np.float32)
    kernel = np.arange(conv_size, dtype=np.float32)
    expected = numpy_conv1d(x, kernel)
    print("Input array:", x)
    print("Convolution kernel:", kernel)
    print("NumPy reference result:", expected)

    # Destination-passing, as a MAX or CustomOpLibrary kernel is called:
    # the caller allocates the output and the op writes it.
    output = np.empty_like(x)
    opgraph.ops.call("examples::conv1d", x, kernel, input_size=input_size, conv_size=conv_size, out=output)
    print("opgraph conv1d result:", output)

    passed = True
    for dtype in (np.float32, np.float64):
        result = opgraph.ops.call(
            "examples::conv1d", x.astype(dtype), kernel.astype(dtype), input_size=input_size, conv_size=conv_size
        )
        ok = result.dtype == dtype and np.allclose(result, expected)
        print(f"{np.dtype(dtype).name} verification {'PASSED' if ok else 'FAILED'}")
        passed &= ok
    ok = np.allclose(output, expected)
    print(f"destination-passing verification {'PASSED' if ok else 'FAILED'}")
    return 0 if passed and ok else 1


if __name__ == "__main__":
    sys.exit(main())
