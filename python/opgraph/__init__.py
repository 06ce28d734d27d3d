"""opgraph: write a tensor operator once in C++, run it from NumPy, PyTorch and
a standalone graph executor."""

from pathlib import Path

from . import cuda, layers, llm, ops
from ._C import (
    Argument,
    Error,
    Graph,
    LoadedLibrary,
    Node,
    NodeInput,
    PassInfo,
    PassReport,
    Schema,
    Session,
    State,
    StateInfo,
    Tensor,
    ValueInfo,
    cpu_has_bf16,
    cpu_has_vnni,
    empty,
    from_dlpack,
    get_cpu_capability,
    get_num_threads,
    graph_passes,
    list_ops,
    load_library,
    load_opg,
    load_packages,
    loaded_libraries,
    manual_seed,
    op_backward,
    op_devices,
    op_schema,
    parse_schema,
    quantize,
    save_opg,
    set_num_threads,
)
from .build import build_package
from .package import load_package, resolve_package

#: Pass as CMAKE_PREFIX_PATH so that CMake's find_package(opgraph) finds this
#: installation (headers, libopgraph and opgraph_add_op_library).
cmake_prefix_path = str(Path(__file__).resolve().parent)

__version__ = "0.1.0"

__all__ = [
    "Argument",
    "Error",
    "Graph",
    "LoadedLibrary",
    "Node",
    "NodeInput",
    "PassInfo",
    "PassReport",
    "Schema",
    "Session",
    "State",
    "StateInfo",
    "Tensor",
    "ValueInfo",
    "build_package",
    "cmake_prefix_path",
    "cpu_has_bf16",
    "cpu_has_vnni",
    "cuda",
    "empty",
    "layers",
    "from_dlpack",
    "get_cpu_capability",
    "get_num_threads",
    "graph_passes",
    "list_ops",
    "llm",
    "load_library",
    "load_opg",
    "load_package",
    "load_packages",
    "loaded_libraries",
    "manual_seed",
    "op_backward",
    "op_devices",
    "op_schema",
    "ops",
    "parse_schema",
    "quantize",
    "resolve_package",
    "save_opg",
    "set_num_threads",
]
