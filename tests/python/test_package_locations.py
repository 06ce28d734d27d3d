"""One resolution of op package locations for every front end: a built
library, a CMake project folder, or a folder of C++ sources; and the
README's op source compiled as written through each build path."""

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import opgraph
from opgraph.graph import CPU, DType, Graph, InferenceSession, TensorType
from opgraph.graph import ops as graph_ops

ROOT = Path(__file__).resolve().parents[2]

SOURCE = """
#include <opgraph/sdk.h>
namespace sdk = opgraph::sdk;
static sdk::Meta shape(sdk::Meta x) { return x; }
static void twice(sdk::OutputTensor out, sdk::InputTensor x) {
  for (int64_t i = 0; i < x.numel(); ++i) out.data<float>()[i] = 2 * x.data<float>()[i];
}
OPGRAPH_LIBRARY(locations, m) {
  m.def("twice(Tensor x) -> Tensor", shape);
  m.impl("twice", sdk::Device::CPU, twice);
}
"""


@pytest.fixture(scope="module")
def source_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("locations") / "twice_op"
    folder.mkdir()
    (folder / "twice.cpp").write_text(SOURCE)
    (folder / "notes.txt").write_text("not a source")
    return folder


def test_a_library_resolves_to_itself(conv1d_package):
    assert opgraph.resolve_package(conv1d_package) == conv1d_package
    assert opgraph.load_package(conv1d_package).ops == ["examples::conv1d", "examples::conv1d_backward"]


def test_a_loaded_library_is_returned_as_it_is(conv1d_package):
    library = opgraph.load_library(conv1d_package)
    assert opgraph.load_package(library) is library


def test_a_folder_of_sources_is_built_and_every_front_end_takes_it(source_folder):
    library = opgraph.resolve_package(source_folder)
    assert library.name == "libtwice_op.so"
    assert opgraph.resolve_package(source_folder) == library  # cached
    assert opgraph.load_package(source_folder).ops == ["locations::twice"]
    x = np.arange(5, dtype=np.float32)
    with Graph("twice", input_types=[TensorType(DType.float32, [5])], custom_extensions=[source_folder]) as graph:
        graph.output(
            graph_ops.custom(name="twice", values=[graph.inputs[0]], out_types=[TensorType(DType.float32, [5])])[0]
        )
    model = InferenceSession(devices=[CPU()], custom_extensions=[source_folder]).load(graph)
    np.testing.assert_array_equal(model.execute(x)[0], 2 * x)


def test_a_cmake_project_is_built(tmp_path):
    (tmp_path / "CMakeLists.txt").write_text(
        textwrap.dedent("""
        cmake_minimum_required(VERSION 3.25)
        project(locations_cmake CXX)
        find_package(opgraph REQUIRED)
        opgraph_add_op_library(locations_cmake twice.cpp)
    """)
    )
    (tmp_path / "twice.cpp").write_text(SOURCE.replace("OPGRAPH_LIBRARY(locations,", "OPGRAPH_LIBRARY(cmake_ns,"))
    library = opgraph.resolve_package(tmp_path)
    assert library.name == "liblocations_cmake.so" and library.is_file()


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda tmp: tmp / "missing",
            r"load_package: op package '.*missing' does not exist; expected a package library",
        ),
        (
            lambda tmp: tmp,
            r"load_package: '.*' is neither an op package library, a CMake project folder \(no "
            r"CMakeLists.txt\) nor a folder of C\+\+ sources \(no \*.cpp, \*.cc, \*.cxx files\)",
        ),
    ],
)
def test_what_is_no_package_is_a_clear_error(tmp_path, make, message):
    with pytest.raises(opgraph.Error, match=message):
        opgraph.resolve_package(make(tmp_path))


@pytest.mark.parametrize(
    "front_end, message",
    [
        (lambda path: Graph("g", custom_extensions=[path]), r"^Graph: custom_extensions: op package"),
        (lambda path: InferenceSession(custom_extensions=[path]), r"^InferenceSession: custom_extensions: op package"),
    ],
)
def test_front_ends_name_themselves_in_the_error(tmp_path, front_end, message):
    with pytest.raises(opgraph.Error, match=message):
        front_end(tmp_path / "missing")


def test_custom_op_library_takes_the_same_locations(tmp_path):
    from opgraph.torch import CustomOpLibrary

    with pytest.raises(opgraph.Error, match=r"^CustomOpLibrary: op package '.*missing' does not exist"):
        CustomOpLibrary(tmp_path / "missing")


def readme_op_source() -> str:
    """The C++ op of README.md's "Writing an op", verbatim."""
    text = (ROOT / "README.md").read_text()
    return re.search(r"## Writing an op\n.*?```cpp\n(.*?)```", text, re.S).group(1)


# Each build path in its own process: a process loads one package per namespace.
README_BUILDS = {
    "load_inline": "from opgraph import cpp_extension\nlibrary = cpp_extension.load_inline('readme_inline', SOURCE)",
    "source folder": "(FOLDER / 'mylib.cpp').write_text(SOURCE)\nlibrary = opgraph.load_package(FOLDER)",
    "CMake project": "(FOLDER / 'mylib.cpp').write_text(SOURCE)\n"
    "(FOLDER / 'CMakeLists.txt').write_text(CMAKE)\n"
    "library = opgraph.load_package(FOLDER)",
}


def readme_cmake() -> str:
    text = (ROOT / "README.md").read_text()
    return re.search(r"```cmake\n(.*?)```", text, re.S).group(1)


@pytest.mark.parametrize("build", list(README_BUILDS))
def test_readme_op_compiles_as_written(tmp_path, build):
    folder = tmp_path / "mylib"
    folder.mkdir()
    script = "\n".join(
        [
            "from pathlib import Path",
            "import numpy as np",
            "import opgraph",
            f"SOURCE = {readme_op_source()!r}",
            f"CMAKE = {readme_cmake()!r}",
            f"FOLDER = Path({str(folder)!r})",
            README_BUILDS[build],
            "print(library.ops)",
            "print(opgraph.ops.call('mylib::scale', np.arange(4, dtype=np.float32), factor=3.0).tolist())",
        ]
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split("\n")[:2] == ["['mylib::scale']", "[0.0, 3.0, 6.0, 9.0]"]


def test_session_package_paths_load_package_locations_and_keep_folders(tmp_path):
    folder = tmp_path / "session_op"
    folder.mkdir()
    (folder / "op.cc").write_text(SOURCE.replace("OPGRAPH_LIBRARY(locations,", "OPGRAPH_LIBRARY(session_ns,"))
    graph = opgraph.Graph.from_json(
        '{"name": "g", "inputs": [{"name": "x", "dtype": "float32", "shape": [2]}], '
        '"outputs": [{"name": "y"}], "nodes": [{"name": "n", "op_type": '
        '"session_ns::twice", "inputs": ["x"], "outputs": ["y"]}]}'
    )
    session = opgraph.Session(graph, weights={}, package_paths=[tmp_path / "no_such_folder", folder])
    np.testing.assert_array_equal(session.run(np.ones(2, np.float32))[0], [2.0, 2.0])
    with pytest.raises(opgraph.Error, match="package_paths must be a sequence of paths, not one str"):
        opgraph.Session(graph, weights={}, package_paths=str(folder))


def test_load_inline_declares_the_sdk_alias_itself(tmp_path):
    from opgraph import cpp_extension

    body = SOURCE.replace("#include <opgraph/sdk.h>\nnamespace sdk = opgraph::sdk;\n", "")
    body = body.replace("OPGRAPH_LIBRARY(locations,", "OPGRAPH_LIBRARY(alias_ns,")
    assert "namespace sdk" not in body
    library = cpp_extension.load_inline("alias_ns", body, build_directory=tmp_path / "build")
    assert library.ops == ["alias_ns::twice"]


@pytest.mark.parametrize("build", ["load", "load_inline"])
def test_cpp_extension_builds_no_python_module(build):
    from opgraph import cpp_extension

    with pytest.raises(opgraph.Error, match="an op package is a shared library, not a Python module"):
        getattr(cpp_extension, build)("never_built", ["x.cpp"] if build == "load" else "", is_python_module=True)
