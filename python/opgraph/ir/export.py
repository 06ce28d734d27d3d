"""``export_model``: torch.export with errors that name the model."""

import torch

from .._C import Error


def export_model(model, inputs, strict=False, dynamic_shapes=None):
    """The ``torch.export.ExportedProgram`` of ``model`` called on ``inputs`` (a tuple of example tensors)."""
    if not isinstance(model, torch.nn.Module):
        raise Error(f"opgraph.ir.export_model: expected a torch.nn.Module, got {type(model).__name__}")
    inputs = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    try:
        return torch.export.export(model, inputs, strict=strict, dynamic_shapes=dynamic_shapes)
    except Exception as e:  # torch.export raises many types; the message is what helps
        raise Error(f"opgraph.ir.export_model: torch.export cannot export {type(model).__name__}: "
                    f"{type(e).__name__}: {e}") from e
