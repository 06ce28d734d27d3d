"""Every ATen op that torch.export leaves in the graphs of common transformer
models is registered, under its ATen name, with ATen's schema."""

import operator

import pytest
import torch
from oracle import aten_schema
from torch import nn

import opgraph


def encoder(**options):
    layer = nn.TransformerEncoderLayer(
        d_model=32, nhead=4, dim_feedforward=64, batch_first=True, dropout=0.0, **options
    )
    return nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)


def padding_mask():
    mask = torch.zeros(2, 7, dtype=torch.bool)
    mask[0, 5:] = True
    return mask


def bert(attention="sdpa"):
    import transformers

    config = transformers.BertConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        vocab_size=100,
        attn_implementation=attention,
    )
    attention_mask = torch.ones(2, 7, dtype=torch.long)
    attention_mask[0, 5:] = 0
    return (
        transformers.BertModel(config),
        (),
        {"input_ids": torch.randint(0, 100, (2, 7)), "attention_mask": attention_mask},
    )


def gpt2():
    import transformers

    config = transformers.GPT2Config(
        n_embd=32, n_layer=2, n_head=4, vocab_size=100, attn_implementation="sdpa", use_cache=False
    )
    return transformers.GPT2LMHeadModel(config), (), {"input_ids": torch.randint(0, 100, (2, 7))}


def vit():
    import transformers

    config = transformers.ViTConfig(
        image_size=32,
        patch_size=8,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        attn_implementation="sdpa",
    )
    return transformers.ViTModel(config), (torch.randn(2, 3, 32, 32),), {}


MODELS = {
    "encoder": lambda: (encoder(), (torch.randn(2, 7, 32),), {}),
    "encoder-norm-first-padding": lambda: (
        encoder(norm_first=True),
        (torch.randn(2, 7, 32),),
        {"src_key_padding_mask": padding_mask()},
    ),
    "bert": bert,
    "bert-eager-attention": lambda: bert("eager"),
    "gpt2": gpt2,
    "vit": vit,
}


def registry_name(overload):
    """aten.add.Tensor -> aten::add.Tensor; aten.relu.default -> aten::relu."""
    schema = overload._schema
    return f"{schema.name}.{schema.overload_name}" if schema.overload_name else schema.name


@pytest.mark.parametrize("model", MODELS)
def test_every_exported_op_is_registered_with_its_aten_schema(model):
    torch.manual_seed(0)
    module, args, kwargs = MODELS[model]()
    with torch.no_grad():
        program = torch.export.export(module.eval(), args, kwargs)
    overloads = {
        node.target
        for node in program.graph.nodes
        if node.op == "call_function" and node.target is not operator.getitem
    }
    missing, different = [], []
    for overload in sorted(overloads, key=str):
        name = registry_name(overload)
        if name not in opgraph.list_ops():
            missing.append(name)
            continue
        expected = aten_schema(overload)
        if str(opgraph.op_schema(name)) != expected:
            different.append(f"{opgraph.op_schema(name)} != {expected}")
    assert not missing, f"{model}: ops missing from the registry: {missing}"
    assert not different, f"{model}: schemas that differ from ATen's: {different}"
