"""The module opgraph.llm.export extracts: a transformers causal LM on its
static KV cache, the cache given as inputs that the forward pass updates in
place."""

import inspect

import torch


class Decoder(torch.nn.Module):
    """``forward(input_ids, cache_position, position_ids, attention_mask, keys, values)`` -> the last
    position's logits of each row (``position_ids`` goes unused by a model that takes none). ``keys`` and ``values`` are each layer's cache, [batch, kv heads,
    max_seq_len, head dim], which the forward pass updates in place: extraction makes them the graph's state,
    sized per state object, so that one graph decodes any number of sequences at once."""

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
        # Each row's positions, where the model takes them (a left-padded row's differ from the cache's); a model
        # without them (Bloom's ALiBi) counts them from the attention mask.
        self.positions = "position_ids" in parameters

    def caches(self, batch):
        """Zero keys and values for ``batch`` sequences, in the recipe's cache shapes."""
        layers = self.recipe.static_cache.layers
        keys = [torch.zeros((batch, *layer.keys.shape[1:]), dtype=layer.keys.dtype) for layer in layers]
        values = [torch.zeros((batch, *layer.values.shape[1:]), dtype=layer.values.dtype) for layer in layers]
        return keys, values

    def forward(self, input_ids, cache_position, position_ids, attention_mask, keys, values):
        for layer, key, value in zip(self.recipe.static_cache.layers, keys, values):
            # As the recipe's forward: the cache's layers count from the first new position.
            layer.cumulative_length.copy_(cache_position[0])
            layer.keys, layer.values = key, value
        extra = {"logits_to_keep": 1} if self.last_only else {}
        if self.positions:
            extra["position_ids"] = position_ids
        logits = self.recipe.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            past_key_values=self.recipe.static_cache,
            use_cache=True,
            **extra,
        ).logits
        return logits[:, -1, :]
