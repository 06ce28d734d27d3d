"""``load``: an .opg file back into an IR. The types of the values between
nodes come from the runtime's shape functions, so the graph's op packages are
loaded first, and every op must be one the runtime has."""

from pathlib import Path

import torch

from .. import _C
from ..package import search_paths
from .ir import IR


def load(path, package_paths=()):
    """The IR saved in the .opg file ``path``; its packages are looked for in
    ``package_paths`` (folders, or package locations as opgraph.load_package
    takes them), then in the file's folder."""
    graph, weights = _C.load_opg(path)
    paths = search_paths(package_paths, "opgraph.ir.load: package_paths")
    _C.load_packages(graph.packages, [*paths, str(Path(path).resolve().parent)])
    graph.name = graph.name or Path(path).stem
    return IR(graph, {name: torch.from_numpy(array) for name, array in weights.items()})
