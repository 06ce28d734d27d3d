"""Building op packages, and other CMake projects that use find_package(opgraph),
from source against this installation."""

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ._C import Error


def _cmake(caller) -> str:
    # The cmake that came with this Python environment, else the system's.
    local = Path(sys.executable).with_name("cmake")
    found = str(local) if local.exists() else shutil.which("cmake")
    if found is None:
        raise Error(f"{caller}: cmake not found; install it (pip install cmake)")
    return found


def _run(command, what, caller):
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        raise Error(f"{caller}: {what} failed (exit {result.returncode}):\n{result.stdout}")


def _cache_entries(build: Path) -> dict:
    """NAME: value of each entry of build's CMakeCache.txt ("NAME:TYPE=value" lines)."""
    entries = {}
    for line in (build / "CMakeCache.txt").read_text(errors="replace").splitlines():
        name, typed, value = line.partition("=")
        if typed and not line.startswith(("#", "//")):
            entries[name.split(":", 1)[0]] = value
    return entries


def _configured_elsewhere(build: Path, source: Path, settings: dict) -> bool:
    """Whether build's cache was written for another source folder, other
    settings, or by a cmake that is gone: a build folder outlives the
    environment that configured it (a deleted virtual environment's cmake and
    ninja, another installation's opgraph)."""
    entries = _cache_entries(build)
    return (
        entries.get("CMAKE_HOME_DIRECTORY") != str(source)
        or not Path(entries.get("CMAKE_COMMAND", "")).is_file()
        or any(entries.get(name) != value for name, value in settings.items())
    )


def _configure_and_build(source_dir, build_dir, caller, prefix_paths=()) -> Path:
    from . import cmake_prefix_path

    source = Path(source_dir).resolve()
    if not (source / "CMakeLists.txt").is_file():
        raise Error(f"{caller}: no CMakeLists.txt in '{source}'")
    if build_dir is None:
        key = hashlib.sha1(f"{source}:{cmake_prefix_path}".encode()).hexdigest()[:12]
        cache = Path(os.environ.get("OPGRAPH_CACHE_DIR", Path.home() / ".cache" / "opgraph"))
        build_dir = cache / "packages" / f"{source.name}-{key}"
    build = Path(build_dir)
    cmake = _cmake(caller)
    ninja = Path(cmake).with_name("ninja")
    ninja = str(ninja) if ninja.exists() else shutil.which("ninja")
    settings = {
        "CMAKE_BUILD_TYPE": "Release",
        "CMAKE_PREFIX_PATH": ";".join([cmake_prefix_path, *map(str, prefix_paths)]),
    }
    if ninja:
        settings["CMAKE_MAKE_PROGRAM"] = ninja
    generator = "Ninja" if ninja else "Unix Makefiles"
    cache = build / "CMakeCache.txt"
    if cache.is_file() and _configured_elsewhere(build, source, {**settings, "CMAKE_GENERATOR": generator}):
        cache.unlink()
        shutil.rmtree(build / "CMakeFiles", ignore_errors=True)
    if not cache.is_file():
        defines = [f"-D{name}={value}" for name, value in settings.items()]
        _run([cmake, "-S", str(source), "-B", str(build), "-G", generator, *defines], f"configuring {source}", caller)
    _run([cmake, "--build", str(build)], f"building {source}", caller)
    return build


def build_cmake_project(source_dir, build_dir=None) -> Path:
    """Configures and builds the CMake project in ``source_dir``, in which
    ``find_package(opgraph)`` finds this installation, and returns its build
    folder.

    The build folder persists (by default in ~/.cache/opgraph, one per source
    folder and installation), so a second call with unchanged sources only
    checks timestamps."""
    return _configure_and_build(source_dir, build_dir, "build_cmake_project")


def build_package(source_dir, target=None, build_dir=None, prefix_paths=()) -> Path:
    """Configures and builds the CMake project in ``source_dir`` (which uses
    ``find_package(opgraph)`` and ``opgraph_add_op_library``) and returns the
    path of the package library ``target`` (default: the only one built).
    ``prefix_paths`` adds CMake prefixes for the project's other packages.

    The build folder persists, so a second call with unchanged sources only
    checks timestamps."""
    build = _configure_and_build(source_dir, build_dir, "build_package", prefix_paths)
    libraries = sorted(build.glob("*.so"))
    if target is not None:
        libraries = [p for p in libraries if p.name in (f"lib{target}.so", f"{target}.so")]
    if len(libraries) != 1:
        names = ", ".join(p.name for p in libraries) or "none"
        raise Error(
            f"build_package: expected one package library in '{build}' "
            f"{'named ' + repr(target) + ' ' if target else ''}but found {names}"
        )
    return libraries[0]
