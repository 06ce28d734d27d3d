"""Building op packages from C++ sources with the system compiler, the way
``torch.utils.cpp_extension`` builds PyTorch extensions:

    from opgraph import cpp_extension
    library = cpp_extension.load("warp", ["warp.cpp"], extra_ldflags=["-lopencv_core", "-lopencv_imgproc"],
                                 extra_include_paths=["/usr/include/opencv4"])
    ops = opgraph.torch.CustomOpLibrary(library)

Sources compile against this installation's headers (the header-only SDK; a
package links nothing from opgraph). Builds are cached: a build folder per
name, sources and flags, in which each source is recompiled only when it or a
header it includes changed. For a CMake project, use ``find_package(opgraph)``
and ``opgraph_add_op_library`` instead (see ``opgraph.build_package``).

One process can load a package only once per namespace: loading an edited
package again clashes with the ops already registered, so restart the process
to pick up a change (the build itself is redone as needed).
"""

import hashlib
import os
import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import Error, LoadedLibrary, __version__, load_library

_BASE_FLAGS = ["-std=c++20", "-O3", "-fPIC", "-fvisibility=hidden", "-fvisibility-inlines-hidden"]


def _include_dir() -> Path:
    return Path(__file__).resolve().parent / "include"


def _compiler() -> str:
    return os.environ.get("CXX", "c++")


def _cache_dir() -> Path:
    return Path(os.environ.get("OPGRAPH_CACHE_DIR", Path.home() / ".cache" / "opgraph")) / "extensions"


def _run(command, what, verbose):
    if verbose:
        print(shlex.join(command), flush=True)
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        raise Error(f"cpp_extension: {what} failed (exit {result.returncode}):\n{result.stdout}")
    if verbose and result.stdout:
        print(result.stdout, end="", flush=True)


def _dependencies(depfile: Path):
    """The files a make-style dependency file (from -MMD) lists, or None if it is missing."""
    if not depfile.is_file():
        return None
    text = depfile.read_text().replace("\\\n", " ")
    return [Path(p) for p in text.split(":", 1)[1].split()] if ":" in text else []


def _up_to_date(target: Path, dependencies) -> bool:
    if dependencies is None or not target.is_file():
        return False
    built = target.stat().st_mtime_ns
    return all(p.is_file() and p.stat().st_mtime_ns <= built for p in dependencies)


def build(
    name, sources, extra_cflags=(), extra_ldflags=(), extra_include_paths=(), build_directory=None, verbose=False
) -> Path:
    """Compiles `sources` into the op package library ``lib<name>.so`` and
    returns its path; redoes only what changed since the last build."""
    sources = [Path(s).resolve() for s in sources]
    if not sources:
        raise Error(f"cpp_extension: no sources given for '{name}'")
    missing = [str(s) for s in sources if not s.is_file()]
    if missing:
        raise Error(f"cpp_extension: source files not found: {', '.join(missing)}")
    compiler = _compiler()
    cflags = [*_BASE_FLAGS, f"-I{_include_dir()}", *(f"-I{p}" for p in extra_include_paths), *extra_cflags]
    ldflags = list(extra_ldflags)
    if build_directory is None:
        key = hashlib.sha1()
        for part in (name, compiler, __version__, *cflags, "--", *ldflags, "--", *map(str, sources)):
            key.update(part.encode() + b"\0")
        build_directory = _cache_dir() / f"{name}-{key.hexdigest()[:12]}"
    folder = Path(build_directory)
    folder.mkdir(parents=True, exist_ok=True)
    # A build folder given by the caller may hold objects built with other flags.
    command = folder / "command"
    command_text = shlex.join([compiler, *cflags, "--", *ldflags])
    same_command = command.is_file() and command.read_text() == command_text

    def compile_one(index_source):
        index, source = index_source
        obj = folder / f"{index}-{source.stem}.o"
        depfile = obj.with_suffix(".d")
        if same_command and _up_to_date(obj, _dependencies(depfile)):
            return obj, False
        _run(
            [compiler, *cflags, "-MMD", "-MF", str(depfile), "-c", str(source), "-o", str(obj)],
            f"compiling {source}",
            verbose,
        )
        return obj, True

    # Two jobs at most: as many as a small machine has cores.
    with ThreadPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1))) as pool:
        results = list(pool.map(compile_one, enumerate(sources)))
    library = folder / f"lib{name}.so"
    objects = [obj for obj, _ in results]
    if any(rebuilt for _, rebuilt in results) or not _up_to_date(library, objects):
        partial = library.with_suffix(".so.partial")
        _run(
            [compiler, "-shared", *map(str, objects), "-o", str(partial), *ldflags], f"linking {library.name}", verbose
        )
        os.replace(partial, library)
    command.write_text(command_text)
    return library


def _check_not_python_module(is_python_module):
    # Accepted for torch.utils.cpp_extension's call shape, where an op
    # library is loaded with is_python_module=False.
    if is_python_module:
        raise Error(
            "cpp_extension: an op package is a shared library, not a Python module; "
            "pass is_python_module=False (the default)"
        )


def load(
    name,
    sources,
    extra_cflags=(),
    extra_ldflags=(),
    extra_include_paths=(),
    build_directory=None,
    verbose=False,
    is_python_module=False,
) -> LoadedLibrary:
    """Builds the package (see build()) and loads it; the result is what
    opgraph.load_library returns, and what opgraph.torch.CustomOpLibrary takes."""
    _check_not_python_module(is_python_module)
    return load_library(
        build(name, sources, extra_cflags, extra_ldflags, extra_include_paths, build_directory, verbose)
    )


def load_inline(
    name,
    cpp_sources,
    extra_cflags=(),
    extra_ldflags=(),
    extra_include_paths=(),
    build_directory=None,
    verbose=False,
    is_python_module=False,
) -> LoadedLibrary:
    """Like load(), from source text: `cpp_sources` is a string or a list of
    strings, joined into one file that includes <opgraph/sdk.h> first and
    declares `namespace sdk = opgraph::sdk;` (the text may declare it again)."""
    _check_not_python_module(is_python_module)
    if isinstance(cpp_sources, str):
        cpp_sources = [cpp_sources]
    # `#line 1` keeps the compiler's line numbers those of the text given.
    text = "\n".join(["#include <opgraph/sdk.h>", "namespace sdk = opgraph::sdk;", "#line 1", *cpp_sources]) + "\n"
    if build_directory is None:
        build_directory = _cache_dir() / f"{name}-inline-{hashlib.sha1(text.encode()).hexdigest()[:12]}"
    folder = Path(build_directory)
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / f"{name}.cpp"
    if not source.is_file() or source.read_text() != text:
        source.write_text(text)
    return load(name, [source], extra_cflags, extra_ldflags, extra_include_paths, folder, verbose)
