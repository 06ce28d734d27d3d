"""The runtime's contract with torch.export: every overload of the Core ATen
opset (``torch.Tag.core`` in the installed torch) has a kernel, registered
under ATen's name and exact schema; every other ``aten::`` op the registry
holds has ATen's schema too."""

import torch
from oracle import aten_schema

import opgraph


def core_overloads():
    """Every Core ATen overload torch has, from its schemas: dir(torch.ops.aten)
    lists only the ops some code has touched, which depends on what ran before."""
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::"):
            continue
        packet = getattr(torch.ops.aten, schema.name.removeprefix("aten::"))
        op = getattr(packet, schema.overload_name or "default")
        if torch.Tag.core in op.tags:
            yield op


def runtime_name(op):
    name = op._schema.name
    return name if op._overloadname == "default" else f"{name}.{op._overloadname}"


def test_every_core_aten_overload_has_a_kernel():
    registered = set(opgraph.list_ops())
    core = list(core_overloads())
    assert len(core) > 150, "torch.Tag.core lists the Core ATen opset"
    missing = sorted(runtime_name(op) for op in core if runtime_name(op) not in registered)
    assert not missing, f"{len(missing)} of {len(core)} Core ATen overloads have no kernel: {', '.join(missing)}"


def test_every_aten_op_has_atens_schema():
    different = []
    for name in opgraph.list_ops():
        if not name.startswith("aten::"):
            continue
        base, _, overload = name.removeprefix("aten::").partition(".")
        op = getattr(getattr(torch.ops.aten, base, None), overload or "default", None)
        if op is None:
            different.append(f"{name}: torch has no such overload")
        elif str(opgraph.op_schema(name)) != aten_schema(op):
            different.append(f"{name}: registered {opgraph.op_schema(name)}, ATen's is {aten_schema(op)}")
    assert not different, "\n".join(different)
