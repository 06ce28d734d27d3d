"""``verify``: runs a model in PyTorch, its IR in the ``IRExecutor`` and on the
C++ ``Session``, and reports each path's largest error per output; with
``per_node=True`` it also finds the first node whose output on the Session
differs from the same node run in PyTorch (``first_divergence``)."""

import json
from dataclasses import dataclass, field

import numpy as np
import torch

from .. import _C
from .convert import extract_ir
from .executor import IRExecutor
from .ir import IR


@dataclass
class PathResult:
    path: str  # "IRExecutor", "Session"
    errors: list[float] = field(default_factory=list)  # max absolute error per output
    failure: str | None = None  # why the path did not run, or which outputs are off

    @property
    def ok(self):
        return self.failure is None


@dataclass
class Divergence:
    """The first node whose output on the Session is off from the IRExecutor's beyond tolerance."""

    node: str
    op_type: str
    output: str
    inputs: list[str]  # "name: float32[2, 8]"
    max_abs_error: float
    max_rel_error: float
    source: str

    def __str__(self):
        return (
            f"first divergent node '{self.node}' ({self.op_type}), output '{self.output}': max abs error "
            f"{self.max_abs_error:.3g}, max rel error {self.max_rel_error:.3g}; inputs "
            f"{', '.join(self.inputs) or '-'}" + (f"; model line: {self.source}" if self.source else "")
        )


@dataclass
class VerifyReport:
    model: str
    paths: list[PathResult]
    first_divergence: Divergence | None = None  # with per_node=True, where the Session first goes wrong

    @property
    def ok(self):
        return all(p.ok for p in self.paths) and self.first_divergence is None

    def __getitem__(self, path):
        return next(p for p in self.paths if p.path == path)

    def __str__(self):
        lines = [f"verify {self.model}: {'ok' if self.ok else 'FAILED'}"]
        for p in self.paths:
            errors = ", ".join(f"{e:.3g}" for e in p.errors) or "-"
            lines.append(
                f"  {p.path:<11} max abs error per output: {errors}" + ("" if p.ok else f"  FAILED: {p.failure}")
            )
        if self.first_divergence is not None:
            lines.append(f"  {self.first_divergence}")
        return "\n".join(lines)


def verify(
    model, inputs, rtol=1e-4, atol=1e-4, *, ir=None, dynamic_shapes=None, package_paths=(), threads=None, per_node=False
):
    """A ``VerifyReport`` comparing the IR paths with ``model(*inputs)``.
    ``ir`` defaults to ``extract_ir(model, inputs, dynamic_shapes=...)``. With
    ``per_node``, every node's outputs on the Session are compared with the
    IRExecutor's, and the report names the first node beyond tolerance."""
    inputs = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    with torch.no_grad():
        expected = _flat(model(*inputs))
    name = type(model).__name__
    if ir is None:
        try:
            ir = extract_ir(model, inputs, dynamic_shapes=dynamic_shapes)
        except Exception as e:
            reason = f"extraction failed: {e}"
            return VerifyReport(name, [PathResult("IRExecutor", failure=reason), PathResult("Session", failure=reason)])
    paths = [
        _check("IRExecutor", lambda: IRExecutor(ir).run(*inputs), expected, rtol, atol),
        _check(
            "Session",
            lambda: _run_once(ir.to_session(threads=threads, package_paths=package_paths), inputs),
            expected,
            rtol,
            atol,
        ),
    ]
    report = VerifyReport(name, paths)
    if per_node:
        report.first_divergence = first_divergence(ir, inputs, rtol, atol, package_paths=package_paths, threads=threads)
    return report


def _run_once(session, inputs):
    """One run, with states (a KV cache) at their initial values, as the model's call starts from its buffers."""
    return session.run(*inputs, state=session.new_state() if session.states else None)


def first_divergence(ir, inputs, rtol=1e-4, atol=1e-4, *, package_paths=(), threads=None):
    """The first node, in execution order, whose output on the Session differs
    from the IRExecutor's beyond ``atol + rtol * |expected|``; None when none does.
    The Session runs unoptimized with every node output made a graph output,
    so that it computes each value the IR names."""
    inputs = tuple(inputs)
    with torch.no_grad():
        expected = IRExecutor(ir).values(*inputs)
    nodes = ir.nodes
    every_value = [name for node in nodes for name in node.outputs]
    probe = IR(_every_value_graph(ir.graph, every_value), ir.weights, ir.values)
    actual = _run_once(probe.to_session(threads=threads, package_paths=package_paths, optimize=False), inputs)
    actual = dict(zip(every_value, actual))
    for node in nodes:
        for name in node.outputs:
            a = _widened(actual[name])
            e = _widened(expected[name].detach().numpy())
            if a.shape != e.shape:
                return _divergence(node, name, expected, float("inf"), float("inf"))
            if np.allclose(a, e, rtol=rtol, atol=atol, equal_nan=True):
                continue
            diff = np.abs(a - e)
            return _divergence(
                node,
                name,
                expected,
                float(np.nanmax(diff)),
                float(np.nanmax(diff / np.maximum(np.abs(e), np.finfo(np.float64).tiny))),
            )
    return None


def _every_value_graph(graph, names):
    """``graph`` with the values ``names`` as its outputs."""
    document = json.loads(graph.to_json())
    document["outputs"] = [{"name": name} for name in names]
    return _C.Graph.from_json(json.dumps(document))


def _widened(values):
    """Values in double precision for comparing, complex ones as complex."""
    values = np.asarray(values)
    return values.astype(np.complex128 if np.iscomplexobj(values) else np.float64)


def _divergence(node, output, values, abs_error, rel_error):
    names = [name for entry in node.inputs for name in entry.values if name]
    inputs = [f"{name}: {str(values[name].dtype).removeprefix('torch.')}{list(values[name].shape)}" for name in names]
    return Divergence(node.name, node.op_type, output, inputs, abs_error, rel_error, node.source)


def _flat(outputs):
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    if isinstance(outputs, dict) or hasattr(outputs, "to_tuple"):
        outputs = outputs.to_tuple() if hasattr(outputs, "to_tuple") else tuple(outputs.values())
    return [t for item in outputs for t in _flat(item)] if isinstance(outputs, (list, tuple)) else [outputs]


def _check(path, run, expected, rtol, atol):
    try:
        with torch.no_grad():
            actual = run()
    except Exception as e:
        return PathResult(path, failure=f"{type(e).__name__}: {e}")
    if len(actual) != len(expected):
        return PathResult(path, failure=f"{len(actual)} outputs, PyTorch gives {len(expected)}")
    result = PathResult(path)
    off = []
    for index, (a, e) in enumerate(zip(actual, expected)):
        a = a.detach().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)  # the Session gives NumPy
        e = e.detach().numpy()
        if a.shape != e.shape:
            off.append(f"output {index}: shape {list(a.shape)}, PyTorch gives {list(e.shape)}")
            result.errors.append(float("inf"))
            continue
        diff = np.abs(_widened(a) - _widened(e))
        result.errors.append(float(diff.max()) if diff.size else 0.0)
        if not np.allclose(a, e, rtol=rtol, atol=atol):
            off.append(f"output {index}: max abs error {result.errors[-1]:.3g} > atol {atol} + rtol {rtol}")
    if off:
        result.failure = "; ".join(off)
    return result
