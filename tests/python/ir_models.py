"""Models the IR tests extract: small, with random weights, in eval mode.
Each factory returns (model, example inputs)."""

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, features=64, hidden=32, classes=10):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, classes)
        )

    def forward(self, x):
        return torch.softmax(self.net(x), dim=-1)


class CNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Linear(16, classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class BasicBlock(nn.Module):
    """ResNet's two 3x3 convolutions with a shortcut (a 1x1 convolution where the shape changes)."""

    def __init__(self, channels_in, channels, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(channels_in, channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.shortcut = nn.Sequential()
        if stride != 1 or channels_in != channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(channels_in, channels, 1, stride, bias=False), nn.BatchNorm2d(channels)
            )

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class ResNet18(nn.Module):
    """ResNet-18's layout (a stem, four stages of two basic blocks, global pooling)."""

    def __init__(self, classes=10, width=64):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(3, 2, 1)
        )
        blocks, channels = [], width
        for stage in range(4):
            out = width * 2**stage
            blocks += [BasicBlock(channels, out, 1 if stage == 0 else 2), BasicBlock(out, out, 1)]
            channels = out
        self.blocks = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))


def _randomize_batch_norm(model, generator):
    """Running statistics away from 0 and 1, so that a wrong normalization shows."""
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.copy_(torch.randn(module.num_features, generator=generator) * 0.1)
            module.running_var.copy_(torch.rand(module.num_features, generator=generator) + 0.5)
    return model


def mlp(batch=2):
    torch.manual_seed(0)
    return MLP().eval(), (torch.randn(batch, 64),)


def cnn(batch=2):
    torch.manual_seed(0)
    return _randomize_batch_norm(CNN(), torch.Generator().manual_seed(1)).eval(), (torch.randn(batch, 3, 16, 16),)


def resnet18(batch=1):
    torch.manual_seed(0)
    model = _randomize_batch_norm(ResNet18(), torch.Generator().manual_seed(1)).eval()
    return model, (torch.randn(batch, 3, 32, 32),)


def transformer_encoder(batch=2):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval(), (torch.randn(batch, 7, 32),)


class LastHiddenState(nn.Module):
    """A transformers model returning its last hidden state only."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x).last_hidden_state


def _transformers_config(kind, **extra):
    import transformers

    common = dict(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, attn_implementation="sdpa"
    )
    return getattr(transformers, kind)(**common, **extra)


def bert(batch=2):
    import transformers

    torch.manual_seed(0)
    config = _transformers_config("BertConfig", vocab_size=100, max_position_embeddings=64)
    model = LastHiddenState(transformers.BertModel(config, add_pooling_layer=False)).eval()
    return model, (torch.randint(0, 100, (batch, 9)),)


def gpt2(batch=2):
    import transformers

    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=100, n_positions=64, n_embd=32, n_layer=2, n_head=4, attn_implementation="sdpa"
    )
    return LastHiddenState(transformers.GPT2Model(config)).eval(), (torch.randint(0, 100, (batch, 9)),)


def vit(batch=2):
    import transformers

    torch.manual_seed(0)
    config = _transformers_config("ViTConfig", image_size=32, patch_size=8, num_channels=3)
    model = LastHiddenState(transformers.ViTModel(config, add_pooling_layer=False)).eval()
    return model, (torch.randn(batch, 3, 32, 32),)


def llama(batch=2):
    """A Llama decoder with grouped-query attention (4 query heads over 2 key-value heads)."""
    import transformers

    torch.manual_seed(0)
    config = _transformers_config("LlamaConfig", vocab_size=100, num_key_value_heads=2, use_cache=False)
    return LastHiddenState(transformers.LlamaModel(config)).eval(), (torch.randint(0, 100, (batch, 9)),)


def gated_mlp(batch=2):
    """examples/fused_gate's model: its gate is the custom::fused_gate op of an opgraph package."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "fused_gate"))
    from gated_mlp import GatedMLP

    torch.manual_seed(0)
    return GatedMLP(16, 32).eval(), (torch.randn(batch, 16),)
