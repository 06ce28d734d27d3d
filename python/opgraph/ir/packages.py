"""The op packages a graph's nodes need, by name: a graph names packages, not
paths, so that an .opg runs on any machine that has them."""

from pathlib import Path

from .. import _C


def packages_of(graph):
    """The name of each loaded op package defining one of ``graph``'s ops."""
    op_names = {node.op_type for node in graph.nodes}
    return sorted(_package_name(library.path) for library in _C.loaded_libraries() if op_names & set(library.ops))


def _package_name(path):
    """``/x/libfused_gate.so`` -> ``fused_gate``, found again as lib<name>.so in a package path."""
    stem = Path(path).name.removesuffix(".so")
    return stem.removeprefix("lib")
