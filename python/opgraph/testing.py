"""Conformance of ops across opgraph's front ends, from the samples they
declare with their registration (``m.sample(...)`` in a package; the tables of
src/kernels/samples for built-in ops).

    report = opgraph.testing.test_package("path/to/package")  # a library, CMake project or source folder
    print(report.table())
    assert report.ok

First the native checks (``opgraph._C.check_samples``: the kernel against
its reference, twice into the same outputs, from four threads, over its
input where the op may write its output in place, every bad sample's error), then each good sample through every front end, each result
held to the reference (the op's reference implementation where it has one,
else its kernel called from NumPy) within the sample's tolerance:

  numpy     opgraph.ops.call on NumPy arrays
  torch     opgraph.ops.call on torch tensors
  eager     the op registered with torch.library, called eagerly
  opcheck   torch.library.opcheck on it
  compile   it inside torch.compile(fullgraph=True)
  export    torch.export of a module calling it, extract_ir, run on the Session
            (for an ATen op: PyTorch's own op, which extraction hands to opgraph's kernel)
  graph     a one-node opgraph.graph Graph run by InferenceSession
  opg       that graph saved as .opg and run by the `opgraph run` command
  gradcheck torch.autograd.gradcheck through its backward op, float64 samples

A bad sample must fail with its text from numpy, torch, eager and graph.
``python -m opgraph.testing PATH`` (and ``opgraph test-package PATH``) print
the table and exit with 1 if anything failed.
"""

import argparse
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import _C, arguments
from ._C import Error

FRONT_ENDS = ("numpy", "torch", "eager", "opcheck", "compile", "export", "graph", "opg", "gradcheck")
# The front ends that call the op directly, where a bad sample must fail with its text.
ERROR_FRONT_ENDS = ("numpy", "torch", "eager", "graph")


@dataclass
class Outcome:
    passed: int = 0
    failures: list = field(default_factory=list)
    skipped: str = ""  # why the front end does not apply to the op

    def cell(self):
        if self.failures:
            return f"FAIL ({len(self.failures)})"
        return "pass" if self.passed else ("-" if not self.skipped else "skip")


@dataclass
class Report:
    ops: dict = field(default_factory=dict)  # op -> {column: Outcome}

    @property
    def ok(self):
        return not any(o.failures for columns in self.ops.values() for o in columns.values()) and all(
            columns for columns in self.ops.values()
        )

    def table(self):
        columns = ["native", *FRONT_ENDS]
        rows = [["op", *columns]] + [
            [op, *(results[c].cell() if c in results else "-" for c in columns)] for op, results in self.ops.items()
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
        for op, results in self.ops.items():
            for column, outcome in results.items():
                lines += [f"FAIL {op}, {column}: {failure}" for failure in outcome.failures]
                if outcome.skipped and not outcome.passed:
                    lines.append(f"skip {op}, {column}: {outcome.skipped}")
        return "\n".join(lines)


# -- one op -----------------------------------------------------------------------


def _arguments(op, sample):
    """The sample's flat inputs grouped per tensor argument of the schema (a
    list for a Tensor[]), and the attributes."""
    tensor_arguments = [a for a in arguments.of_op(op) if a.is_tensor]
    inputs, list_sizes = list(sample["inputs"]), list(sample["list_sizes"])
    lists = sum(a.is_tensor_list for a in tensor_arguments)
    grouped, at = [], 0
    for a in tensor_arguments:
        if a.is_tensor_list:
            count = list_sizes.pop(0) if lists > 1 else len(inputs) - (len(tensor_arguments) - 1)
            grouped.append(inputs[at : at + count])
            at += count
        else:
            grouped.append(inputs[at])
            at += 1
    return grouped, dict(sample["attrs"]), tensor_arguments


def _to_torch(value):
    """A torch view of a NumPy input (its strides too), a list of them, or None."""
    import torch

    if isinstance(value, list):
        return [_to_torch(v) for v in value]
    return None if value is None else torch.from_numpy(value)


def _as_list(result):
    if isinstance(result, (tuple, list)):
        return [np.asarray(_to_numpy(r)) for r in result]
    return [np.asarray(_to_numpy(result))]


def _to_numpy(value):
    return value.detach().cpu().numpy() if hasattr(value, "detach") else value


def _compare(actual, expected, sample, what):
    actual, expected = _as_list(actual), _as_list(expected)
    if len(actual) != len(expected):
        raise AssertionError(f"{what}: {len(actual)} outputs, expected {len(expected)}")
    for k, (a, e) in enumerate(zip(actual, expected)):
        if a.shape != e.shape or a.dtype != e.dtype:
            raise AssertionError(f"{what}: output {k} is {a.dtype}{list(a.shape)}, expected {e.dtype}{list(e.shape)}")
        tolerance = sample["tolerances"][1 if e.dtype in (np.float64, np.complex128) else 0]
        if e.dtype.kind in "fc":
            np.testing.assert_allclose(a, e, rtol=tolerance, atol=tolerance, equal_nan=True, err_msg=what)
        else:
            np.testing.assert_array_equal(a, e, err_msg=what)


def _flat(args):
    """The tensors of grouped arguments, in order: a list's members, no None."""
    return [t for a in args for t in (a if isinstance(a, list) else [a]) if t is not None]


def _in_places(args, values):
    """`args` again with `values` (one per tensor of _flat(args)) in the tensors' places."""
    given = iter(values)

    def place(a):
        return None if a is None else next(given)

    return [[place(t) for t in a] if isinstance(a, list) else place(a) for a in args]


class _FrontEnds:
    """Calls one op through each front end."""

    def __init__(self, op):
        self.op = op
        self._torch_op = None

    def torch_op(self):
        if self._torch_op is None:
            from .torch.registration import register_torch_op

            self._torch_op = register_torch_op(self.op).functional
        return self._torch_op

    def numpy(self, args, attrs):
        return _C.call(self.op, *args, **attrs)

    def torch(self, args, attrs):
        return _C.call(self.op, *map(_to_torch, args), **attrs)

    def eager(self, args, attrs):
        return self.torch_op()(*map(_to_torch, args), **attrs)

    def opcheck(self, args, attrs):
        import torch

        inputs = tuple(map(_to_torch, args))
        if any(np.isnan(o).any() for o in _as_list(self.torch_op()(*inputs, **attrs)) if o.dtype.kind in "fc"):
            raise _Skip("an output is NaN, which opcheck's comparisons take as a mismatch")
        torch.library.opcheck(self.torch_op(), inputs, attrs)
        return None

    def compile(self, args, attrs):
        import torch

        op = self.torch_op()
        torch._dynamo.reset()  # each sample compiles afresh, not as a recompilation of the last
        return torch.compile(lambda *xs: op(*xs, **attrs), fullgraph=True, dynamic=False)(*map(_to_torch, args))

    def call_aten(self, args, attrs):
        """PyTorch's own ATen op, every argument by its schema name, the
        attributes as torch takes them (dtypes, layouts, ... as torch objects)."""
        from .ir.attributes import to_torch

        schema = {a.name: a for a in arguments.of_op(self.op)}
        tensors = [a.name for a in schema.values() if a.is_tensor]
        keywords = {name: to_torch(schema[name], value) for name, value in attrs.items()}
        return arguments.torch_op(self.op)(**dict(zip(tensors, args)), **keywords)

    def export(self, args, attrs):
        import torch

        from .ir import extract_ir

        flat = _flat(args)

        def call(*xs):  # the sample's arguments again, the module's inputs in the tensors' places
            rebuilt = _in_places(args, xs)
            if self.op.startswith("aten::"):
                return self.call_aten(rebuilt, attrs)
            return self.torch_op()(*rebuilt, **attrs)

        class Call(torch.nn.Module):
            def forward(self, *xs):
                return call(*xs)

        ir = extract_ir(Call(), tuple(map(_to_torch, flat)))
        outputs = ir.to_session().run(*[np.array(t, order="C") for t in flat])
        # The exported program returns the inputs an op writes first (where it kept the write: not
        # detach_'s), then the op's own outputs.
        schema = _C.op_schema(self.op)
        written = sum(a.alias.endswith("!") for a in schema.arguments)
        return outputs[max(0, min(written, len(outputs) - len(schema.returns))) :]

    def _graph(self, args, attrs):
        from .graph import DType, Graph, TensorType, ops

        given = _flat(args)
        types = [TensorType(DType.of(str(a.dtype)), list(a.shape)) for a in given]
        namespace = self.op.split("::", 1)[0]
        packages = [library.path for library in _C.loaded_libraries() if library.namespace == namespace]
        with Graph(self.op.replace("::", "_"), input_types=types, custom_extensions=packages) as graph:
            outputs = ops.call(self.op, *_in_places(args, graph.inputs), **attrs)
            graph.output(*(outputs if isinstance(outputs, (list, tuple)) else [outputs]))
        return graph, given

    def graph(self, args, attrs):
        from .graph import InferenceSession

        graph, given = self._graph(args, attrs)
        return InferenceSession().load(graph).execute(*[np.array(a, order="C") for a in given])

    def opg(self, args, attrs):
        from .cli import executable

        graph, given = self._graph(args, attrs)
        with tempfile.TemporaryDirectory() as folder:
            folder = Path(folder)
            graph.save(folder / "op.opg")
            command = [str(executable()), "run", str(folder / "op.opg"), "--output-dir", str(folder / "out")]
            for value, array in zip(graph.to_graph().inputs, given):
                np.save(folder / f"{value.name}.npy", np.array(array, order="C"))
                command += ["--input", f"{value.name}={folder / (value.name + '.npy')}"]
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                raise Error(result.stderr.strip())
            return [np.load(folder / "out" / f"{name}.npy") for name in graph.to_graph().outputs]

    def gradcheck(self, args, attrs):
        import torch

        from .torch.registration import differentiable_outputs

        op, differentiable = self.torch_op(), differentiable_outputs(self.op)

        def differentiated(*xs):
            outputs = op(*xs, **attrs)
            return tuple(outputs[k] for k in differentiable) if isinstance(outputs, (tuple, list)) else outputs

        tensors = [
            _to_torch(a).clone().requires_grad_(a.dtype == np.float64) if isinstance(a, np.ndarray) else a for a in args
        ]
        if not any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors):
            raise _Skip("no float64 input")
        if not torch.autograd.gradcheck(differentiated, tuple(tensors), eps=1e-6, atol=1e-5):
            raise AssertionError("gradcheck failed")
        return None


class _Skip(Exception):
    pass


# ATen ops whose sample modules torch.export itself cannot export.
_NOT_EXPORTABLE = {"aten::resize_": "torch.export's functionalization fails on resize_ (torch 2.13)"}


def _applies(front_end, op):
    """Why `front_end` does not apply to `op` ('' when it does)."""
    namespace = op.split("::", 1)[0]
    torch_side = front_end in ("eager", "opcheck", "compile", "gradcheck")
    if torch_side and namespace == "aten":
        return "an ATen op: PyTorch's own"
    if front_end == "gradcheck" and not _C.op_backward(op):
        return "no backward op"
    schema = _C.op_schema(op)
    if front_end in ("graph", "opg", "export"):
        if not schema.returns:
            return "returns nothing: a graph's outputs are tensors"
        if any(not r.type.startswith("Tensor") for r in schema.returns):
            return "returns a scalar"
    if front_end == "export" and any(a.alias.endswith("!") and a.name == "out" for a in schema.arguments):
        return "an out= overload: torch.export functionalizes it away"
    if front_end == "export" and op in _NOT_EXPORTABLE:
        return _NOT_EXPORTABLE[op]
    return ""


def check_op(op, front_ends=FRONT_ENDS, native=True, limit=None):
    """{column: Outcome} for `op`: 'native' (unless native=False), then each
    front end, on every sample or on the first `limit` good and bad ones."""
    results = {}
    samples = _C.op_samples(op)
    if native:
        outcome = results["native"] = Outcome()
        for check, index, failure, skipped in _C.check_samples(op):
            if failure:
                outcome.failures.append(f"{check}, sample {index} ({samples[index]['text']}): {failure}")
            elif not skipped:
                outcome.passed += 1
        if not samples:
            outcome.failures.append("the op declares no samples")
    calls = _FrontEnds(op)
    references = {}  # sample index -> the reference's outputs, computed once for every front end
    for front_end in front_ends:
        outcome = results[front_end] = Outcome(skipped=_applies(front_end, op))
        if outcome.skipped:
            continue
        for index in _chosen(samples, limit):
            sample = samples[index]
            args, attrs, _ = _arguments(op, sample)
            where = f"sample {index} ({sample['text']})"
            if sample["error"]:
                if front_end in ERROR_FRONT_ENDS:
                    _expect_error(calls, front_end, args, attrs, sample, where, outcome)
                continue
            try:
                if index not in references:
                    references[index] = _reference(op, args, attrs)
                expected = references[index]
                result = getattr(calls, front_end)(args, attrs)
                if result is not None:
                    _compare(result, expected, sample, where)
                outcome.passed += 1
            except _Skip as skip:
                outcome.skipped = str(skip)
            except Exception as e:  # noqa: BLE001 (every failure is reported, none stops the suite)
                outcome.failures.append(f"{where}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    return results


def _chosen(samples, limit):
    """The indices of every sample, or of the first `limit` good and the first `limit` bad ones."""
    if limit is None:
        return range(len(samples))
    good = [i for i, s in enumerate(samples) if not s["error"]][:limit]
    bad = [i for i, s in enumerate(samples) if s["error"]][:limit]
    return sorted(good + bad)


def _expect_error(calls, front_end, args, attrs, sample, where, outcome):
    try:
        getattr(calls, front_end)(args, attrs)
    except Exception as e:  # noqa: BLE001 (the error under test)
        if sample["error"] in str(e):
            outcome.passed += 1
        else:
            outcome.failures.append(
                f"{where}: expected an error containing {sample['error']!r}, got "
                f"{type(e).__name__}: {str(e).splitlines()[0]}"
            )
        return
    outcome.failures.append(f"{where}: expected an error containing {sample['error']!r}, the call succeeded")


def _reference(op, args, attrs):
    try:
        return _C.call_reference(op, *args, **attrs)
    except Error as e:
        if "has no reference implementation" not in str(e):
            raise
        return _C.call(op, *args, **attrs)


def test_package(package, front_ends=FRONT_ENDS, native=True):
    """Loads `package` (as opgraph.load_package takes it) and checks every op it registers."""
    from .package import load_package

    library = load_package(package, "test_package")
    report = Report()
    for op in library.ops:
        report.ops[op] = check_op(op, front_ends, native)
    return report


test_package.__test__ = False  # not a pytest test


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m opgraph.testing", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("package", help="an op package: a library, a CMake project or a folder of sources")
    parser.add_argument("--front-ends", nargs="+", choices=FRONT_ENDS, default=list(FRONT_ENDS))
    parser.add_argument("--front-ends-only", action="store_true", help="skip the native checks")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=FutureWarning)  # torch.export's deprecation notices
    report = test_package(args.package, args.front_ends, native=not args.front_ends_only)
    print("front ends" if args.front_ends_only else "conformance", f"({args.package})")
    print(report.table())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
