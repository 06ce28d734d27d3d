"""Where an op package comes from: the one place that turns what a user
passes as a package (Graph's custom_extensions, InferenceSession,
CustomOpLibrary, load_package) into a loaded package.

A package location is one of
- a built package library (a ``.so`` file),
- a CMake project folder (with a CMakeLists.txt using find_package(opgraph)
  and opgraph_add_op_library), built with build_package,
- a folder of C++ sources (``*.cpp``, ``*.cc``, ``*.cxx``), built with
  opgraph.cpp_extension under the folder's name.
"""

from pathlib import Path

from ._C import Error, LoadedLibrary, load_library

SOURCE_SUFFIXES = (".cpp", ".cc", ".cxx")


def _sources(folder: Path):
    return sorted(p for p in folder.iterdir() if p.suffix in SOURCE_SUFFIXES and p.is_file())


def _is_package_location(path: Path) -> bool:
    return path.is_file() or (path.is_dir() and ((path / "CMakeLists.txt").is_file() or bool(_sources(path))))


def resolve_package(source, caller="load_package") -> Path:
    """The package library for ``source`` (see the module docstring), built
    first where it is a folder; builds are cached, so resolving again only
    checks timestamps. ``caller`` names the front end in errors."""
    path = Path(source)
    if path.is_file():
        return path
    if not path.is_dir():
        raise Error(
            f"{caller}: op package '{path}' does not exist; expected a package library (.so), "
            "a CMake project folder or a folder of C++ sources"
        )
    if (path / "CMakeLists.txt").is_file():
        from .build import build_package

        return build_package(path)
    sources = _sources(path)
    if not sources:
        raise Error(
            f"{caller}: '{path}' is neither an op package library, a CMake project folder (no "
            f"CMakeLists.txt) nor a folder of C++ sources (no {', '.join('*' + s for s in SOURCE_SUFFIXES)} "
            "files)"
        )
    from . import cpp_extension

    return cpp_extension.build(path.resolve().name, sources)


def load_package(source, caller="load_package") -> LoadedLibrary:
    """Loads the op package at ``source`` (a LoadedLibrary is returned as it
    is; see resolve_package for the locations) and registers its ops."""
    if isinstance(source, LoadedLibrary):
        return source
    return load_library(resolve_package(source, caller))


def search_paths(package_paths, caller="package_paths") -> list:
    """``package_paths`` as the runtime takes them (folders in which a graph's
    packages are found as lib<name>.so), after loading every entry that is
    itself a package location: a library, a CMake project or a folder of
    sources. A graph then finds such a package among the loaded ones."""
    if isinstance(package_paths, (str, bytes)):
        raise Error(f"{caller}: expected a sequence of paths, not one str")
    paths = []
    for entry in map(Path, package_paths):
        if _is_package_location(entry):
            load_package(entry, caller)
        if not entry.is_file():
            paths.append(str(entry))  # a folder that does not exist stays listed in "not found" errors
    return paths
