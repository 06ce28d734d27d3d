"""Real-size models for bench/models.py: published configurations with random
weights (transformers builds the architecture from its config; nothing is
downloaded). Each function takes the batch and returns the eval-mode model
and its example inputs, like tests/python/ir_models.py; a model returns its
first output (the last hidden state, or the logits of a language model)."""

import torch
import transformers as T
from zoo.models import Tensors, well_conditioned


def _tokens(batch, seq, vocab):
    return (torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(0)),)


def _images(batch, size=224):
    return (torch.randn(batch, 3, size, size, generator=torch.Generator().manual_seed(0)),)


def _built(model_class, config, conditioned=False):
    """The model in eval mode, its wrapper included (torch.onnx.export restores
    each module's training flag from the outermost one's); a CNN
    ``conditioned`` with He-initialized convolutions and unit batch-norm
    scales, whose activations stay near unit scale (transformers' vision
    inits shrink MobileNetV2's below 1e-20)."""
    torch.manual_seed(0)
    model = model_class(config)
    return Tensors(well_conditioned(model) if conditioned else model).eval()


def bert_base(batch=1):
    """BERT-base (bert-base-uncased's config) on 128 tokens."""
    return _built(T.BertModel, T.BertConfig()), _tokens(batch, 128, 30522)


def gpt2_small(batch=1):
    """GPT-2 small (gpt2's config) on 128 tokens, logits out."""
    return _built(T.GPT2LMHeadModel, T.GPT2Config(use_cache=False)), _tokens(batch, 128, 50257)


def smollm_135m(batch=1):
    """A SmolLM-135M-shaped Llama (hidden 576, 30 layers, 9 heads, 3 KV heads) prefilling 128 tokens."""
    config = T.LlamaConfig(
        vocab_size=49152,
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        max_position_embeddings=2048,
        rope_theta=10000.0,
        tie_word_embeddings=True,
        use_cache=False,
    )
    return _built(T.LlamaForCausalLM, config), _tokens(batch, 128, 49152)


def vit_b16(batch=1):
    """ViT-B/16 at 224x224 (google/vit-base-patch16-224's config)."""
    return _built(T.ViTModel, T.ViTConfig()), _images(batch)


def resnet50(batch=1):
    """ResNet-50 at 224x224 (microsoft/resnet-50's config)."""
    return _built(T.ResNetModel, T.ResNetConfig()), _images(batch)


def mobilenet_v2(batch=1):
    """MobileNetV2 1.0 at 224x224 (google/mobilenet_v2_1.0_224's config)."""
    return _built(T.MobileNetV2Model, T.MobileNetV2Config(), conditioned=True), _images(batch)


class WhisperEncoder(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.encoder = T.WhisperModel(config).eval().get_encoder()

    def forward(self, features):
        return self.encoder(features)[0]


def whisper_tiny_encoder(batch=1):
    """Whisper-tiny's encoder (openai/whisper-tiny's config) on 30 s of 80 log-mel bins."""
    torch.manual_seed(0)
    config = T.WhisperConfig(
        d_model=384,
        encoder_layers=4,
        decoder_layers=4,
        encoder_attention_heads=6,
        decoder_attention_heads=6,
        encoder_ffn_dim=1536,
        decoder_ffn_dim=1536,
        num_mel_bins=80,
    )
    features = torch.randn(batch, 80, 3000, generator=torch.Generator().manual_seed(0))
    return WhisperEncoder(config).eval(), (features,)


class Recurrent(torch.nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.rnn = getattr(torch.nn, kind)(80, 256, num_layers=2, batch_first=True)

    def forward(self, features):
        return self.rnn(features)[0]


def _recurrent(kind, batch):
    torch.manual_seed(0)
    features = torch.randn(batch, 100, 80, generator=torch.Generator().manual_seed(0))
    return Recurrent(kind).eval(), (features,)


def lstm_2x256(batch=1):
    """A two-layer LSTM (hidden 256) over 100 frames of 80 features, as a speech model's encoder: one
    aten::lstm.input node, whose kernel projects every frame's input in one product per layer, then runs the
    timesteps' small products and fused gate math (src/kernels/cpu/ops/recurrent.cpp)."""
    return _recurrent("LSTM", batch)


def gru_2x256(batch=1):
    """lstm_2x256's GRU."""
    return _recurrent("GRU", batch)


# name -> (builder, the batches its rows measure)
REAL_MODELS = {
    "bert-base": (bert_base, (1, 8)),
    "gpt2-small": (gpt2_small, (1,)),
    "smollm-135m": (smollm_135m, (1,)),
    "vit-b16": (vit_b16, (1,)),
    "resnet50": (resnet50, (1, 8)),
    "mobilenet-v2": (mobilenet_v2, (1,)),
    "whisper-tiny-encoder": (whisper_tiny_encoder, (1,)),
    "lstm-2x256": (lstm_2x256, (1,)),
    "gru-2x256": (gru_2x256, (1,)),
}
