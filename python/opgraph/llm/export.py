"""``export``: a transformers causal LM -> a folder the Generator runs.

The model runs with transformers' static cache, as its export recipe
(``TorchExportableModuleWithStaticCache``) builds it: a KV cache of
``max_seq_len`` positions that the forward pass updates in place, which
extraction turns into the graph's state. One graph takes any number of
sequences, each with any number of new tokens at a common cache offset, so
that it runs both the prompts and each decoding step; it returns the logits
of each sequence's last token only. Sequences of different lengths are
left-padded, as transformers' generate() pads a batch: the attention mask
hides the padding, and each row's positions count its own tokens."""

import json
import sys
import time
from pathlib import Path

from .._C import Error, quantize


class _Progress:
    """Reports each step that took more than a few seconds, on stderr."""

    def __init__(self, name):
        self.name = name

    def step(self, what, run):
        start = time.perf_counter()
        result = run()
        seconds = time.perf_counter() - start
        if seconds > 3:
            print(f"opgraph.llm.export: {self.name}: {what} took {seconds:.1f} s", file=sys.stderr, flush=True)
        return result


def _eos_ids(model):
    for config in (getattr(model, "generation_config", None), model.config):
        eos = getattr(config, "eos_token_id", None)
        if eos is not None:
            return eos if isinstance(eos, list) else [eos]
    return []


def export(
    model, folder, *, max_seq_len, tokenizer=None, dtype="float32", weights=None, group_size=None, embeddings=False
):
    """Writes ``model.opg``, ``generation_config.json`` and, with ``tokenizer``
    (a transformers tokenizer), its ``tokenizer.json`` and config to ``folder``.
    With ``weights`` ('int8', 'int4', or 'int8_asym' and 'int4_asym' with a
    zero point per scale), the linear layers and the LM head are stored
    quantized, a scale per output and group of ``group_size`` inputs (as
    opgraph.quantize writes them), and with ``embeddings`` the token
    embedding too."""
    # torch is imported here, not with opgraph.llm: a Generator runs without it.
    import torch

    from ..ir import extract_ir
    from .decoder import Decoder

    if dtype != "float32":
        raise Error(
            f"opgraph.llm.export: dtype: the graph's weights are float32 (run it in bfloat16 with "
            f"Generator(precision='bf16')); got {dtype!r}"
        )
    if weights not in (None, "int8", "int4", "int8_asym", "int4_asym"):
        raise Error(
            f"opgraph.llm.export: weights: expected None, 'int8', 'int4', 'int8_asym' or 'int4_asym', got {weights!r}"
        )
    if group_size is not None and weights is None:
        raise Error(f"opgraph.llm.export: group_size: {group_size} given without weights='int8' or 'int4'")
    if not isinstance(max_seq_len, int) or max_seq_len < 2:
        raise Error(f"opgraph.llm.export: max_seq_len: expected an int of 2 or more, got {max_seq_len!r}")
    if not hasattr(model, "generation_config") or not hasattr(model.config, "vocab_size"):
        raise Error(f"opgraph.llm.export: expected a transformers causal LM, got {type(model).__name__}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    name = type(model).__name__
    progress = _Progress(name)
    model = model.float().eval()
    decoder = Decoder(model, max_seq_len)
    # Two sequences of two tokens: sizes of 1 would be taken for constants.
    batch = torch.export.Dim("batch", min=1, max=1024)
    tokens = torch.export.Dim("tokens", min=1, max=max_seq_len)
    keys, values = decoder.caches(2)
    example = (
        torch.zeros((2, 2), dtype=torch.long),
        torch.arange(2),
        torch.arange(2).repeat(2, 1),
        torch.ones((2, max_seq_len), dtype=torch.long),
        keys,
        values,
    )
    dynamic = {
        "input_ids": {0: batch, 1: tokens},
        "cache_position": {0: tokens},
        "position_ids": {0: batch, 1: tokens},
        "attention_mask": {0: batch},
        "keys": [{0: batch}] * len(keys),
        "values": [{0: batch}] * len(values),
    }
    with torch.no_grad():
        ir = progress.step(
            "export and conversion", lambda: extract_ir(decoder, example, dynamic_shapes=dynamic, inputs_as_state=True)
        )
    if weights is None:
        progress.step("writing model.opg", lambda: ir.save(folder / "model.opg"))
    else:
        unquantized = folder / "model.float32.opg"
        progress.step("writing the float32 weights", lambda: ir.save(unquantized))
        try:
            progress.step(
                f"writing model.opg with {weights} weights",
                lambda: quantize(
                    unquantized, folder / "model.opg", weights=weights, group_size=group_size, embeddings=embeddings
                ),
            )
        finally:
            unquantized.unlink()
    config = {"eos_token_id": _eos_ids(model), "max_seq_len": max_seq_len, "vocab_size": model.config.vocab_size}
    (folder / "generation_config.json").write_text(json.dumps(config, indent=2) + "\n")
    if tokenizer is not None:
        tokenizer.save_pretrained(str(folder))
    return folder
