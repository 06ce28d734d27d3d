"""``export_model``: torch.export with errors that name the model and say
which change usually gets it through."""

import torch

from .._C import Error

# (a phrase of torch.export's message, what usually helps)
_HINTS = [
    (
        "Cache",
        "the model returns a key/value cache object (transformers' DynamicCache): build it with "
        "use_cache=False (model.config.use_cache = False, or pass use_cache=False to forward), or wrap it in "
        "a module that returns tensors only",
    ),
    (
        "not a known type",
        "the model returns an object torch.export cannot flatten: wrap it in a module that returns tensors only",
    ),
    (
        "data-dependent",
        "the model branches or sizes something on a tensor's value: compute both branches and "
        "select with torch.where, or give the value as a constant",
    ),
    (
        "Constraints violated",
        "a dimension declared dynamic is fixed by the model (a size it checks or "
        "specializes on): declare it torch.export.Dim.AUTO, or export with static shapes",
    ),
]


def _hint(message):
    hints = [hint for phrase, hint in _HINTS if phrase in message]
    return f" (what usually helps: {hints[0]})" if hints else ""


def export_model(model, inputs, strict=False, dynamic_shapes=None):
    """The ``torch.export.ExportedProgram`` of ``model`` called on ``inputs`` (a tuple of example tensors)."""
    if not isinstance(model, torch.nn.Module):
        raise Error(f"opgraph.ir.export_model: expected a torch.nn.Module, got {type(model).__name__}")
    inputs = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    try:
        return torch.export.export(model, inputs, strict=strict, dynamic_shapes=dynamic_shapes)
    except Exception as e:  # torch.export raises many types; the message is what helps
        message = str(e)
        raise Error(
            f"opgraph.ir.export_model: torch.export cannot export {type(model).__name__}"
            f"{_hint(message)}: {type(e).__name__}: {message}"
        ) from e
