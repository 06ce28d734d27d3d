"""Building graphs in Python, in the shape of MAX's Graph API, and running
them on opgraph's C++ executor.

    with Graph("conv_1d_graph", input_types=[...], custom_extensions=[path]) as graph:
        x, kernel = graph.inputs
        y = ops.custom(name="conv1d", values=[x, kernel], out_types=[...], parameters={...})[0].tensor
        graph.output(y)
    model = InferenceSession(devices=[CPU()]).load(graph)
    result = model.execute(x_array, kernel_array)[0]
    graph.save("conv1d.opg")     # runs with `opgraph run conv1d.opg ...`, no Python
"""

from . import ops
from .builder import GraphBuilder
from .builder import GraphBuilder as Graph  # MAX's name
from .session import CPU, Accelerator, InferenceSession, Model
from .types import DeviceRef, DType, TensorType
from .values import Value

__all__ = [
    "Accelerator",
    "CPU",
    "DType",
    "DeviceRef",
    "Graph",
    "GraphBuilder",
    "InferenceSession",
    "Model",
    "TensorType",
    "Value",
    "ops",
]
