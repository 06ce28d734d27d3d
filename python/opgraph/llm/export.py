"""``export``: a transformers causal LM -> a folder the Generator runs.

The model runs as transformers' own export recipe builds it
(``TorchExportableModuleWithStaticCache``): a static KV cache of
``max_seq_len`` positions held in buffers that the forward pass updates in
place, which extraction turns into the graph's state. One graph takes any
number of new tokens at any cache offset, so that it runs both the prompt
and each decoding step; it returns the logits of the last of them only."""

import inspect
import json
import sys
import time
from pathlib import Path

import torch

from .._C import Error


class _Decoder(torch.nn.Module):
    """``forward(input_ids, cache_position)`` -> the last position's logits, the cache in buffers."""

    def __init__(self, model, max_seq_len):
        super().__init__()
        from transformers import GenerationConfig
        from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

        # The recipe reads its cache's settings from the model's generation config, which is the caller's.
        given = model.generation_config
        model.generation_config = GenerationConfig(
            use_cache=True,
            cache_implementation="static",
            max_length=max_seq_len,
            cache_config={"batch_size": 1, "max_cache_len": max_seq_len},
        )
        try:
            self.recipe = TorchExportableModuleWithStaticCache(model, batch_size=1, max_cache_len=max_seq_len)
        finally:
            model.generation_config = given
        parameters = inspect.signature(model.forward).parameters
        self.last_only = "logits_to_keep" in parameters
        # Positions given as the cache's, where the model takes them: some (OPT) count them from the cache's
        # length otherwise, a value torch.export cannot trace.
        self.positions = "position_ids" in parameters

    def forward(self, input_ids, cache_position):
        # As the recipe's forward: the cache's layers count from the first new position.
        for layer in self.recipe.static_cache.layers:
            layer.cumulative_length.copy_(cache_position[0])
        extra = {"logits_to_keep": 1} if self.last_only else {}
        if self.positions:
            extra["position_ids"] = cache_position.unsqueeze(0)
        logits = self.recipe.model(
            input_ids=input_ids,
            attention_mask=None,
            past_key_values=self.recipe.static_cache,
            use_cache=True,
            **extra,
        ).logits
        return logits[:, -1, :]


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


def export(model, folder, *, max_seq_len, tokenizer=None, dtype="float32"):
    """Writes ``model.opg``, ``generation_config.json`` and, with ``tokenizer``
    (a transformers tokenizer), its ``tokenizer.json`` and config to ``folder``."""
    from ..ir import extract_ir

    if dtype != "float32":
        raise Error(
            f"opgraph.llm.export: dtype: the graph's weights are float32 (run it in bfloat16 with "
            f"Generator(precision='bf16')); got {dtype!r}"
        )
    if not isinstance(max_seq_len, int) or max_seq_len < 2:
        raise Error(f"opgraph.llm.export: max_seq_len: expected an int of 2 or more, got {max_seq_len!r}")
    if not hasattr(model, "generation_config") or not hasattr(model.config, "vocab_size"):
        raise Error(f"opgraph.llm.export: expected a transformers causal LM, got {type(model).__name__}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    name = type(model).__name__
    progress = _Progress(name)
    model = model.float().eval()
    decoder = _Decoder(model, max_seq_len)
    tokens = torch.export.Dim("tokens", min=1, max=max_seq_len)
    example = (torch.zeros((1, 2), dtype=torch.long), torch.arange(2))
    with torch.no_grad():
        ir = progress.step(
            "export and conversion",
            lambda: extract_ir(
                decoder, example, dynamic_shapes={"input_ids": {1: tokens}, "cache_position": {0: tokens}}
            ),
        )
    progress.step("writing model.opg", lambda: ir.save(folder / "model.opg"))
    config = {"eos_token_id": _eos_ids(model), "max_seq_len": max_seq_len, "vocab_size": model.config.vocab_size}
    (folder / "generation_config.json").write_text(json.dumps(config, indent=2) + "\n")
    if tokenizer is not None:
        tokenizer.save_pretrained(str(folder))
    return folder
