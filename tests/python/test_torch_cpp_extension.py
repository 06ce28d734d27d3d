"""opgraph.cpp_extension: op packages compiled from C++ sources, cached, and
used from PyTorch."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import opgraph
from opgraph import cpp_extension
from opgraph.torch import CustomOpLibrary

ROOT = Path(__file__).resolve().parents[2]
BUILDS = ROOT / "build" / "extensions"

SCALE_SOURCE = """
#include "factor.h"
namespace sdk = opgraph::sdk;
static sdk::Meta shape(sdk::Meta x) { return x; }
static void scale(sdk::OutputTensor out, sdk::InputTensor x) {
  for (int64_t i = 0; i < x.numel(); ++i) out.data<float>()[i] = FACTOR * x.data<float>()[i] + OFFSET;
}
OPGRAPH_LIBRARY(ext_files, m) {
  m.def("scale(Tensor x) -> Tensor", shape);
  m.impl("scale", sdk::Device::CPU, scale);
}
"""


def write_sources(folder: Path, offset=1):
    (folder / "include").mkdir(parents=True, exist_ok=True)
    (folder / "include" / "factor.h").write_text(f"#include <opgraph/sdk.h>\n#define OFFSET {offset}\n")
    (folder / "scale.cpp").write_text(SCALE_SOURCE)
    return [folder / "scale.cpp"], [str(folder / "include")]


def test_load_inline_registers_a_torch_op():
    library = cpp_extension.load_inline(
        "ext_inline",
        """
        namespace sdk = opgraph::sdk;
        static sdk::Meta shape(sdk::Meta x) { return x; }
        static void negate(sdk::OutputTensor out, sdk::InputTensor x) {
          for (int64_t i = 0; i < x.numel(); ++i) out.data<double>()[i] = -x.data<double>()[i];
        }
        OPGRAPH_LIBRARY(ext_inline, m) {
          m.def("negate(Tensor x) -> Tensor", shape);
          m.impl("negate", sdk::Device::CPU, negate);
        }
    """,
        build_directory=BUILDS / "ext_inline",
    )
    assert library.ops == ["ext_inline::negate"]
    CustomOpLibrary(library)
    x = torch.randn(5, dtype=torch.float64)
    torch.testing.assert_close(torch.ops.ext_inline.negate(x), -x)


def test_load_with_flags_and_include_paths(tmp_path):
    sources, include = write_sources(tmp_path, offset=1)
    library = cpp_extension.load(
        "ext_files",
        sources,
        extra_cflags=["-DFACTOR=3"],
        extra_include_paths=include,
        build_directory=BUILDS / "ext_files",
    )
    ops = CustomOpLibrary(library)
    x = torch.arange(4, dtype=torch.float32)
    torch.testing.assert_close(ops.scale(x), 3 * x + 1)


def test_builds_are_cached_and_redone_when_sources_or_flags_change(tmp_path, monkeypatch):
    monkeypatch.setenv("OPGRAPH_CACHE_DIR", str(tmp_path / "cache"))
    sources, include = write_sources(tmp_path / "src")
    first = cpp_extension.build("ext_cache", sources, extra_cflags=["-DFACTOR=2"], extra_include_paths=include)
    assert first.is_relative_to(tmp_path / "cache" / "extensions")
    built = first.stat().st_mtime_ns
    assert cpp_extension.build("ext_cache", sources, extra_cflags=["-DFACTOR=2"], extra_include_paths=include) == first
    assert first.stat().st_mtime_ns == built  # nothing changed: nothing rebuilt
    other_flags = cpp_extension.build("ext_cache", sources, extra_cflags=["-DFACTOR=5"], extra_include_paths=include)
    assert other_flags != first
    header = tmp_path / "src" / "include" / "factor.h"
    header.write_text(header.read_text().replace("OFFSET 1", "OFFSET 7"))
    os.utime(header, ns=(built + 10**9, built + 10**9))
    assert cpp_extension.build("ext_cache", sources, extra_cflags=["-DFACTOR=2"], extra_include_paths=include) == first
    assert first.stat().st_mtime_ns != built  # an included header changed: rebuilt


def test_compiler_errors_name_the_file_and_line(tmp_path):
    with pytest.raises(
        opgraph.Error,
        match=r"(?s)compiling .*broken\.cpp failed.*broken\.cpp:3:\d+: error: "
        r".not_declared. was not declared",
    ):
        cpp_extension.load_inline("broken", "\n\nint f() { return not_declared; }\n", build_directory=tmp_path)


def test_missing_sources_are_an_error(tmp_path):
    with pytest.raises(opgraph.Error, match="source files not found: .*nothing.cpp"):
        cpp_extension.load("missing", [tmp_path / "nothing.cpp"])


def test_warp_perspective_built_with_load_runs_from_torch(tmp_path):
    # The seed's JIT route: the example's source and OpenCV's flags, no CMake.
    # In its own process, as this one holds the CMake-built package's ops.
    folder = ROOT / "examples" / "warp_perspective"
    script = textwrap.dedent(f"""
        import cv2, numpy as np, torch
        from opgraph import cpp_extension
        from opgraph.torch import CustomOpLibrary
        library = cpp_extension.load("warp_perspective", [{str(folder / "warp_perspective.cpp")!r}],
                                     extra_include_paths=["/usr/include/opencv4"],
                                     extra_ldflags=["-lopencv_core", "-lopencv_imgproc"],
                                     build_directory={str(BUILDS / "warp_perspective")!r})
        ops = CustomOpLibrary(library)
        image, warp = torch.ones(6, 7), torch.eye(3)
        warp[0, 2] = 2
        result = ops.warp_perspective(image, warp, height=5, width=9).numpy()
        assert np.array_equal(result, cv2.warpPerspective(image.numpy(), warp.numpy(), (9, 5))), result
        print(ops.ops)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "['my_ops::warp_perspective']"
