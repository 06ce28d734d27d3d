"""``verify``: runs a model in PyTorch, its IR in the ``IRExecutor`` and on the
C++ ``Session``, and reports each path's largest error per output."""

from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np
import torch

from .convert import extract_ir
from .executor import IRExecutor


@dataclass
class PathResult:
    path: str  # "IRExecutor", "Session"
    errors: List[float] = field(default_factory=list)  # max absolute error per output
    failure: Optional[str] = None  # why the path did not run, or which outputs are off

    @property
    def ok(self):
        return self.failure is None


@dataclass
class VerifyReport:
    model: str
    paths: List[PathResult]

    @property
    def ok(self):
        return all(p.ok for p in self.paths)

    def __getitem__(self, path):
        return next(p for p in self.paths if p.path == path)

    def __str__(self):
        lines = [f"verify {self.model}: {'ok' if self.ok else 'FAILED'}"]
        for p in self.paths:
            errors = ", ".join(f"{e:.3g}" for e in p.errors) or "-"
            lines.append(f"  {p.path:<11} max abs error per output: {errors}"
                         + ("" if p.ok else f"  FAILED: {p.failure}"))
        return "\n".join(lines)


def verify(model, inputs, rtol=1e-4, atol=1e-4, *, ir=None, dynamic_shapes=None, package_paths=(), threads=None):
    """A ``VerifyReport`` comparing the IR paths with ``model(*inputs)``.
    ``ir`` defaults to ``extract_ir(model, inputs, dynamic_shapes=...)``."""
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
        _check("Session", lambda: ir.to_session(threads=threads, package_paths=package_paths).run(*inputs),
               expected, rtol, atol),
    ]
    return VerifyReport(name, paths)


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
        diff = np.abs(a.astype(np.float64) - e.astype(np.float64))
        result.errors.append(float(diff.max()) if diff.size else 0.0)
        if not np.allclose(a, e, rtol=rtol, atol=atol):
            off.append(f"output {index}: max abs error {result.errors[-1]:.3g} > atol {atol} + rtol {rtol}")
    if off:
        result.failure = "; ".join(off)
    return result
