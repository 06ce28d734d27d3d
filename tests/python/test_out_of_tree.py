"""An op package built from scratch out of tree with find_package(opgraph)."""

import subprocess
import sys
import textwrap

import numpy as np

import opgraph


def test_package_builds_with_find_package_and_loads(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(
        textwrap.dedent("""\
        cmake_minimum_required(VERSION 3.25)
        project(out_of_tree CXX)
        find_package(opgraph REQUIRED)
        opgraph_add_op_library(cube cube.cpp)
    """)
    )
    (source / "cube.cpp").write_text(
        textwrap.dedent("""\
        #include <opgraph/sdk.h>
        namespace sdk = opgraph::sdk;
        static sdk::Meta shape(sdk::Meta x) { return x; }
        static void cube(sdk::OutputTensor out, sdk::InputTensor x) {
          for (int64_t i = 0; i < x.numel(); ++i) {
            float v = x.data<float>()[i];
            out.data<float>()[i] = v * v * v;
          }
        }
        OPGRAPH_LIBRARY(out_of_tree, m) {
          m.def("cube(Tensor x) -> Tensor", shape);
          m.impl("cube", sdk::Device::CPU, cube);
        }
    """)
    )
    library = opgraph.build_package(source, build_dir=tmp_path / "build")
    assert library.name == "libcube.so"
    # The package links nothing from opgraph: it only uses the C ABI.
    needed = subprocess.run(["ldd", str(library)], capture_output=True, text=True).stdout
    assert "libopgraph" not in needed
    loaded = opgraph.load_library(library)
    assert loaded.ops == ["out_of_tree::cube"]
    x = np.array([1, 2, -3], np.float32)
    np.testing.assert_array_equal(opgraph.ops.call("out_of_tree::cube", x), x**3)


def test_build_errors_show_the_compiler_output(tmp_path):
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(broken CXX)\nfind_package(opgraph REQUIRED)\n"
        "opgraph_add_op_library(broken broken.cpp)\n"
    )
    (tmp_path / "broken.cpp").write_text("#include <opgraph/sdk.h>\nint f() { return not_declared; }\n")
    try:
        opgraph.build_package(tmp_path, build_dir=tmp_path / "build")
    except opgraph.Error as error:
        assert "broken.cpp:2" in str(error) and "not_declared" in str(error)
    else:
        raise AssertionError("a broken package must not build")


def test_python_package_exposes_cmake_prefix():
    config = f"{opgraph.cmake_prefix_path}/lib/cmake/opgraph/opgraphConfig.cmake"
    assert subprocess.run([sys.executable, "-c", f"import os; assert os.path.isfile({config!r})"]).returncode == 0


def test_a_build_folder_configured_by_a_gone_environment_is_configured_again(tmp_path):
    # A build folder outlives the virtual environment whose cmake and ninja configured it.
    source = tmp_path / "src"
    source.mkdir()
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(rebuilt CXX)\nfind_package(opgraph REQUIRED)\n"
        "opgraph_add_op_library(rebuilt rebuilt.cpp)\n"
    )
    (source / "rebuilt.cpp").write_text(
        "#include <opgraph/sdk.h>\nnamespace sdk = opgraph::sdk;\n"
        "static sdk::Meta shape(sdk::Meta x) { return x; }\n"
        "static void copy(sdk::OutputTensor out, sdk::InputTensor x) {\n"
        "  for (int64_t i = 0; i < x.numel(); ++i) out.data<float>()[i] = x.data<float>()[i];\n}\n"
        'OPGRAPH_LIBRARY(rebuilt, m) {\n  m.def("copy(Tensor x) -> Tensor", shape);\n'
        '  m.impl("copy", sdk::Device::CPU, copy);\n}\n'
    )
    build = tmp_path / "build"
    library = opgraph.build_package(source, build_dir=build)
    cache = build / "CMakeCache.txt"
    configured = cache.stat().st_mtime_ns
    assert opgraph.build_package(source, build_dir=build) == library
    assert cache.stat().st_mtime_ns == configured, "an unchanged environment configures nothing again"

    gone = tmp_path / "gone-venv" / "bin"
    text = cache.read_text()
    for name in ["CMAKE_MAKE_PROGRAM", "CMAKE_COMMAND"]:
        line = next(line for line in text.splitlines() if line.startswith(name + ":"))
        text = text.replace(line, f"{line.split('=', 1)[0]}={gone / line.rsplit('/', 1)[-1]}")
    cache.write_text(text)
    (source / "rebuilt.cpp").touch()
    assert opgraph.build_package(source, build_dir=build) == library
    assert str(gone) not in cache.read_text()
