"""``python -m opgraph.ir verify model.opg [--input NAME=x.npy ...] [--dim s0=2 ...]``

Runs a saved model on the C++ Session and node by node in PyTorch (the
IRExecutor), and prints the first node whose output differs beyond
tolerance, with its op, its inputs and the model line behind it. Inputs not
given are random: normal floats, integers in [0, --high)."""

import argparse
import sys

import numpy as np
import torch

from .._C import Error
from .load import load
from .verify import first_divergence


def _pairs(items, what):
    pairs = {}
    for item in items:
        name, separator, value = item.partition("=")
        if not separator:
            raise Error(f"opgraph.ir verify: {what} '{item}': expected NAME=VALUE")
        pairs[name] = value
    return pairs


def _inputs(ir, given, dims, high):
    generator = np.random.default_rng(0)
    inputs = []
    for meta in ir.inputs:
        if meta.name in given:
            inputs.append(torch.from_numpy(np.load(given[meta.name])))
            continue
        shape = []
        for dim in meta.shape:
            if isinstance(dim, int):
                shape.append(dim)
            elif dim in dims:
                shape.append(int(dims[dim]))
            else:
                raise Error(
                    f"opgraph.ir verify: input '{meta.name}' has the symbolic dimension '{dim}': give its "
                    f"size with --dim {dim}=N, or the input with --input {meta.name}=file.npy"
                )
        if meta.dtype.startswith("float"):
            values = generator.standard_normal(shape).astype(meta.dtype)
        elif meta.dtype == "bool":
            values = generator.integers(0, 2, shape).astype(bool)
        else:
            values = generator.integers(0, high, shape).astype(meta.dtype)
        inputs.append(torch.from_numpy(values))
    return inputs


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m opgraph.ir", description=__doc__.split("\n\n")[1])
    commands = parser.add_subparsers(dest="command", required=True)
    verify = commands.add_parser("verify", help="find the first node whose Session output differs from PyTorch's")
    verify.add_argument("model", help="an .opg file")
    verify.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    verify.add_argument("--dim", action="append", default=[], metavar="SYMBOL=SIZE")
    verify.add_argument("--high", type=int, default=2, help="random integer inputs lie in [0, HIGH)")
    verify.add_argument("--rtol", type=float, default=1e-4)
    verify.add_argument("--atol", type=float, default=1e-4)
    verify.add_argument("--package-path", action="append", default=[])
    args = parser.parse_args(argv)
    try:
        ir = load(args.model, package_paths=args.package_path)
        inputs = _inputs(ir, _pairs(args.input, "--input"), _pairs(args.dim, "--dim"), args.high)
        divergence = first_divergence(ir, inputs, args.rtol, args.atol, package_paths=args.package_path)
    except Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if divergence is None:
        print(
            f"{args.model}: every node's output on the Session matches PyTorch within rtol {args.rtol}, "
            f"atol {args.atol} ({len(ir.nodes)} nodes)"
        )
        return 0
    print(f"{args.model}: {divergence}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
