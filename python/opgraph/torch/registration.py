"""Registers an opgraph op with torch.library, from the op's own schema:

- ``ns::op``: the functional op, as the package defines it;
- ``ns::op.out``: its destination-passing variant: the inputs and
  attributes, then one keyword-only ``Tensor(a!)`` per output, returning
  nothing, as PyTorch asks of a custom op that mutates its arguments. It is
  not an ATen-style out variant (``torch.Tag.out``, returning its outputs):
  Inductor (torch 2.13) lowers the functional form of an op that has one to
  it, with a layout built from SymInts that fails on any symbolic size, so
  a compiled model broke when called at a second batch size;
- for each: a kernel per device the op has kernels for, which passes the
  tensors to opgraph without a copy (DLPack), and a fake kernel computed by
  the op's C++ shape function (see shapes.py);
- autograd for the functional op from the op's registered backward op, which
  returns a gradient per tensor input and takes the op's attributes and, as
  its tensor arguments, the op's inputs and outputs by their names (gemm's
  ``a``, ``b``, ``output``) and, by any other name, the gradients of the
  outputs in order (conv1d's ``grad_output``): see _backward_plan.
"""

import contextlib

import torch

from .. import Error, dtypes, op_backward, op_devices, op_schema
from .. import cuda as opgraph_cuda
from .._C import call, infer_output_metas
from .shapes import output_metas
from .signature import OpSignature

_libraries = {}  # namespace -> torch.library.Library; ops stay registered while it lives
_registered = {}  # qualified name -> RegisteredOp


class RegisteredOp:
    """An opgraph op as PyTorch sees it: ``functional`` and ``out`` are its
    two overloads (torch.ops.ns.op.default and torch.ops.ns.op.out)."""

    def __init__(self, signature: OpSignature):
        self.signature = signature
        packet = getattr(getattr(torch.ops, signature.namespace), signature.op_name)
        self.functional = getattr(packet, signature.overload_name)
        self.out = getattr(packet, signature.out_overload_name)


def register_torch_op(name: str, kernels: str = "python") -> RegisteredOp:
    """Registers op `name` (loaded into opgraph) with torch.library once; later
    calls return the same registration. `kernels` picks the device kernels:
    "python" (functions registered with torch.library) or "cpp" (a boxed C++
    kernel, see cpp_kernels.py; CPU only)."""
    if kernels not in ("python", "cpp"):
        raise Error(f"{name}: kernels must be 'python' or 'cpp', got {kernels!r}")
    if name in _registered:
        return _registered[name]
    signature = OpSignature(name)
    namespace = signature.namespace
    library = _libraries.get(namespace) or _libraries.setdefault(
        namespace, torch.library.Library(namespace, "FRAGMENT")
    )
    qualified = f"{namespace}::{signature.op_name}"
    functional = qualified + (f".{signature.overload}" if signature.overload else "")
    out = f"{qualified}.{signature.out_overload_name}"
    try:
        library.define(signature.torch_schema(), tags=(torch.Tag.pt2_compliant_tag,))
        library.define(signature.torch_out_schema(), tags=(torch.Tag.pt2_compliant_tag,))
    except RuntimeError as error:
        raise Error(f"{name}: cannot register with torch.library: {error}") from None
    if kernels == "cpp":
        from . import cpp_kernels

        if op_devices(name) != ["cpu"]:
            raise Error(
                f"{name}: the C++ kernels run CPU kernels only; the op has kernels for: "
                f"{', '.join(op_devices(name)) or '(none)'}"
            )
        cpp_kernels.register_cpu(name, functional.split("::", 1)[1], out.split("::", 1)[1])
    else:
        for device in op_devices(name):
            torch.library.impl(functional, device, _functional_kernel(signature), lib=library)
            torch.library.impl(out, device, _out_kernel(signature), lib=library)
    torch.library.register_fake(functional, _functional_fake(signature), lib=library)
    torch.library.register_fake(out, _out_fake(signature), lib=library)
    _registered[name] = RegisteredOp(signature)
    _register_autograd(signature, functional, library, kernels)
    return _registered[name]


# -- kernels ----------------------------------------------------------------------


# The torch dtypes NumPy can view.
_NUMPY_DTYPES = {dtypes.to_torch(name) for name in dtypes.NUMPY_NAMES}


def _borrowable(t):
    """What opgraph takes for `t` without a copy: a NumPy view of a CPU tensor
    (opgraph's fastest input path), else the tensor itself (DLPack). Either
    way detached: the kernel runs below autograd, and DLPack refuses tensors
    that require grad."""
    if isinstance(t, (list, tuple)):
        return [_borrowable(x) for x in t]
    if t is None:
        return None
    if t.requires_grad:
        t = t.detach()
    return t.numpy() if t.device.type == "cpu" and t.dtype in _NUMPY_DTYPES else t


def _flat(tensors):
    for t in tensors:
        if isinstance(t, (list, tuple)):
            yield from t
        elif t is not None:
            yield t


def _device_of(tensors):
    """Where the outputs go: the inputs' device, as the registry has it."""
    first = next(_flat(tensors), None)
    return first.device if first is not None else torch.device("cpu")


def _meta(t):
    return None if t is None else (dtypes.spelling(t.dtype), t.shape)


def _on_torch_stream(device):
    """Runs opgraph's kernels on PyTorch's current stream for `device`, as a
    PyTorch kernel must; nothing to do on the CPU."""
    if device.type != "cuda":
        return contextlib.nullcontext()
    index = device.index if device.index is not None else torch.cuda.current_device()
    return opgraph_cuda.stream(torch.cuda.current_stream(index).cuda_stream, index)


def _functional_kernel(signature):
    name = signature.name
    single = len(signature.return_names) == 1

    def kernel(*args, **kwargs):
        tensors, attrs = signature.split(args, kwargs)
        metas = [[_meta(x) for x in t] if isinstance(t, (list, tuple)) else _meta(t) for t in tensors]
        device = _device_of(tensors)
        outputs = [
            torch.empty(shape, dtype=dtypes.to_torch(dtype), device=device)
            for dtype, shape in infer_output_metas(name, metas, **attrs)
        ]
        with _on_torch_stream(device):
            call(name, *_borrowable(tensors), out=_borrowable(outputs), **attrs)
        return outputs[0] if single else tuple(outputs)

    return kernel


def _out_kernel(signature):
    name, out_names = signature.name, signature.out_names()

    def kernel(*args, **kwargs):
        outs = [kwargs.pop(n) for n in out_names]
        tensors, attrs = signature.split(args, kwargs)
        # opgraph writes contiguous outputs; a strided `out` gets the result copied in.
        targets = [o if o.is_contiguous() else torch.empty_like(o, memory_format=torch.contiguous_format) for o in outs]
        with _on_torch_stream(_device_of(tensors)):
            call(name, *_borrowable(tensors), out=_borrowable(targets), **attrs)
        for o, target in zip(outs, targets):
            if not o.is_contiguous():
                o.copy_(target)

    return kernel


# -- fake kernels -----------------------------------------------------------------


def _check_devices(signature, tensors):
    """The registry's device errors, raised while tracing with fake tensors."""
    devices = {t.device for t in _flat(tensors) if t.device.type != "meta"}
    if len(devices) > 1:
        raise Error(f"{signature.name}: inputs are on different devices: {', '.join(sorted(map(str, devices)))}")
    available = op_devices(signature.name)
    for device in devices:
        if device.type not in available:
            raise Error(
                f"{signature.name}: no kernel for device {device}; it has kernels for: "
                f"{', '.join(available) or '(none)'}"
            )


def _fake_outputs(signature, tensors, attrs):
    _check_devices(signature, tensors)
    device = _device_of(tensors)
    return [(dtypes.to_torch(dtype), shape, device) for dtype, shape in output_metas(signature.name, tensors, attrs)]


def _functional_fake(signature):
    single = len(signature.return_names) == 1

    def fake(*args, **kwargs):
        tensors, attrs = signature.split(args, kwargs)
        outputs = [
            torch.empty(shape, dtype=dtype, device=device)
            for dtype, shape, device in _fake_outputs(signature, tensors, attrs)
        ]
        return outputs[0] if single else tuple(outputs)

    return fake


def _out_fake(signature):
    out_names = signature.out_names()
    # Named as the registry names outputs in its errors.
    labels = [f"output {i} ('{r}')" if r else f"output {i}" for i, r in enumerate(signature.return_names)]

    def fake(*args, **kwargs):
        outs = [kwargs.pop(n) for n in out_names]
        tensors, attrs = signature.split(args, kwargs)
        for label, o, (dtype, shape, device) in zip(labels, outs, _fake_outputs(signature, tensors, attrs)):
            if o.dtype != dtype or list(o.shape) != list(shape):
                raise Error(
                    f"{signature.name}: {label} must be {dtypes.spelling(dtype)}{list(shape)}, got "
                    f"{dtypes.spelling(o.dtype)}{list(o.shape)}"
                )
            if o.device != device:
                raise Error(f"{signature.name}: {label} is on {o.device}, the inputs on {device}")

    return fake


# -- autograd ---------------------------------------------------------------------


def _register_autograd(signature, functional, library, kernels):
    if signature.has_tensor_lists or signature.has_kwarg_only_tensors:
        return  # the backward convention has no place for their gradients
    backward_name = op_backward(signature.name)
    backward_op = register_torch_op(backward_name, kernels).functional if backward_name else None
    plan, unused_gradients = _backward_plan(signature, backward_name) if backward_name else ([], [])
    tensor_positions = signature.positional_tensor_indices()

    def save(ctx, inputs, keyword_only_inputs, output):
        tensors, ctx.attrs = signature.split(inputs, keyword_only_inputs)
        outputs = list(output) if isinstance(output, (tuple, list)) else [output]
        ctx.num_inputs = len(tensors)
        ctx.save_for_backward(*tensors, *outputs)
        ctx.set_materialize_grads(False)  # an output no loss reaches has None for its gradient

    def backward(ctx, *grads):
        if backward_op is None:
            raise RuntimeError(f"{signature.name}: is not differentiable (its package registers no backward op)")
        inputs, outputs = ctx.saved_tensors[: ctx.num_inputs], ctx.saved_tensors[ctx.num_inputs :]
        for k in unused_gradients:
            if grads[k] is not None:
                raise RuntimeError(
                    f"{signature.name}: its backward op {backward_name} takes no gradient for output "
                    f"'{signature.return_names[k] or k}', which a differentiated result depends on"
                )
        values = {"input": inputs, "output": outputs}
        arguments = [
            (grads[k] if grads[k] is not None else torch.zeros_like(outputs[k])) if kind == "grad" else values[kind][k]
            for kind, k in plan
        ]
        gradients = backward_op(*arguments, **ctx.attrs)
        if isinstance(gradients, torch.Tensor):
            gradients = (gradients,)
        # One per input PyTorch passed: it leaves out trailing arguments at their defaults (a bias of None).
        needs = ctx.needs_input_grad
        result = [None] * len(needs)
        for position, gradient in zip(tensor_positions, gradients):
            if position < len(needs) and needs[position]:
                result[position] = gradient
        return tuple(result)

    if any(a.kwarg_only for a in signature.arguments):

        def setup_context(ctx, inputs, keyword_only_inputs, output):
            save(ctx, inputs, keyword_only_inputs, output)
    else:

        def setup_context(ctx, inputs, output):
            save(ctx, inputs, {}, output)

    torch.library.register_autograd(functional, backward, setup_context=setup_context, lib=library)


def differentiable_outputs(name):
    """The indices of op `name`'s outputs whose gradients its backward op takes
    (softmax_cross_entropy's loss, not its probabilities)."""
    backward_name = op_backward(name)
    if not backward_name:
        return []
    plan, _ = _backward_plan(OpSignature(name), backward_name)
    return [k for kind, k in plan if kind == "grad"]


def _backward_plan(signature, backward_name):
    """Where each tensor argument of the backward op comes from: ("input", k)
    for one named like the op's k-th tensor input, ("output", k) for one named
    like its k-th output (``output`` for a single unnamed one), else ("grad",
    k), the k-th output's gradient, in order. Also the outputs whose gradient
    it does not take."""
    inputs = [a.name for a in signature.arguments if a.is_tensor]
    returns = signature.return_names
    outputs = ["output"] if returns == [""] else returns
    plan, next_gradient = [], 0
    for argument in op_schema(backward_name).arguments:
        if not argument.is_tensor:
            continue
        if argument.name in inputs:
            plan.append(("input", inputs.index(argument.name)))
        elif argument.name in outputs:
            plan.append(("output", outputs.index(argument.name)))
        else:
            if next_gradient == len(returns):
                raise Error(
                    f"{signature.name}: its backward op {backward_name} takes '{argument.name}', which is neither "
                    f"an input ({', '.join(inputs)}), an output ({', '.join(outputs)}) nor an output's gradient "
                    f"(the op has {len(returns)} outputs)"
                )
            plan.append(("grad", next_gradient))
            next_gradient += 1
    return plan, list(range(next_gradient, len(returns)))
