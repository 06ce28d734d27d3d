"""Seed 000 (MAX Graph custom op): the seed's Python integration code with
only the imports changed (max.graph -> opgraph.graph). The seed elides the
types (``[...]``) and the lines around its fragment; they are filled in
here as in the seed's puzzle (a 15-element input, a 4-element kernel).
``Path(__file__).parent / "op"`` is the folder of the kernel's C++ sources
(a link to examples/conv1d/op), as the seed's is the folder of Mojo sources.
"""
from pathlib import Path

import numpy as np

from opgraph.graph import CPU, DeviceRef, DType, Graph, InferenceSession, TensorType, ops

input_tensor = np.arange(15, dtype=np.float32)
kernel_tensor = np.arange(4, dtype=np.float32)
dtype = DType.float32

# ---- the seed's code -------------------------------------------------------
# Mojo 연산이 포함된 디렉토리 경로
mojo_kernels = Path(__file__).parent / "op"

# 사용자 정의 conv1d 연산으로 그래프 구성
with Graph(
    "conv_1d_graph",
    input_types=[
        TensorType(dtype, shape=input_tensor.shape, device=DeviceRef.CPU()),
        TensorType(dtype, shape=kernel_tensor.shape, device=DeviceRef.CPU()),
    ],
    custom_extensions=[mojo_kernels],  # 사용자 정의 연산 패키지 로드
) as graph:
    # 그래프에 대한 입력 정의
    input_value, kernel_value = graph.inputs

    # 이름으로 사용자 정의 연산 사용
    output = ops.custom(
        name="conv1d",  # @compiler.register의 이름과 일치해야 함
        values=[input_value, kernel_value],
        out_types=[TensorType(dtype, shape=input_value.tensor.shape, device=DeviceRef.CPU())],
        parameters={
            "input_size": input_tensor.shape[0],
            "conv_size": kernel_tensor.shape[0],
            "dtype": dtype,
        },
    )[0].tensor
    # ---- end of the seed's code --------------------------------------------
    graph.output(output)

session = InferenceSession(devices=[CPU()])
model = session.load(graph)
result = model.execute(input_tensor, kernel_tensor)[0]
expected = np.correlate(np.pad(input_tensor, (0, len(kernel_tensor) - 1)), kernel_tensor, mode="valid")
print("Input array:", input_tensor)
print("Convolution kernel:", kernel_tensor)
print("NumPy reference result:", expected)
print("MAX Graph result:", result)
np.testing.assert_allclose(result, expected)
print("MAX Graph verification PASSED")
