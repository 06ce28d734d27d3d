from pathlib import Path

import pytest

import opgraph

ROOT = Path(__file__).resolve().parents[2]
# Kept between runs so that re-running the tests rebuilds nothing.
PACKAGE_BUILDS = ROOT / "build" / "packages"


def build(source: Path, target: str) -> Path:
    return opgraph.build_package(source, target=target, build_dir=PACKAGE_BUILDS / source.name)


@pytest.fixture(scope="session")
def test_packages():
    """The op packages of tests/packages, built against the installed opgraph."""
    source = ROOT / "tests" / "packages"
    names = ["ops", "clash", "bad_arity", "future_abi", "not_a_package"]
    return {name: build(source, f"opgraph_test_{name}") for name in names}


@pytest.fixture(scope="session")
def test_ops(test_packages):
    opgraph.load_library(test_packages["ops"])
    return test_packages["ops"]


@pytest.fixture(scope="session")
def conv1d_package():
    path = build(ROOT / "examples" / "conv1d", "conv1d")
    opgraph.load_library(path)
    return path


@pytest.fixture(scope="session")
def warp_perspective_package():
    path = build(ROOT / "examples" / "warp_perspective", "warp_perspective")
    opgraph.load_library(path)
    return path


@pytest.fixture(scope="session")
def conv1d_torch_ops(conv1d_package):
    """examples::conv1d registered with torch.library (a CustomOpLibrary); needs no OpenCV, as the GPU tests don't."""
    from opgraph.torch import CustomOpLibrary

    return CustomOpLibrary(conv1d_package)


@pytest.fixture(scope="session")
def torch_examples(conv1d_torch_ops, warp_perspective_package):
    """The example packages' ops registered with torch.library: {name: CustomOpLibrary}."""
    from opgraph.torch import CustomOpLibrary

    return {"conv1d": conv1d_torch_ops, "warp_perspective": CustomOpLibrary(warp_perspective_package)}


@pytest.fixture(scope="session")
def opgraph_cli() -> Path:
    from opgraph.cli import executable

    return executable()
