"""The model zoo: architectures people bring, each small (a few layers, narrow
widths) with random weights, so that extraction and a run take about a second.

Each entry builds the model, gives its example inputs for a batch size, and
says the batch sizes it runs at and the tolerance its outputs are held to. transformers models are built from configs (no downloads) and
wrapped so that they return plain tensors."""

from collections.abc import Callable
from dataclasses import dataclass

import torch
import transformers
from torch import nn


@dataclass
class ZooModel:
    name: str
    build: Callable[[], nn.Module]
    inputs: Callable[[int], tuple]  # batch size -> example inputs
    batches: tuple = (1, 3)  # run from one .opg exported with a dynamic batch at the last of them
    tolerance: float = 1e-4


class Tensors(nn.Module):
    """A transformers model returning its first output as a tensor (``last_hidden_state``, ``logits``)."""

    def __init__(self, model, **call_kwargs):
        super().__init__()
        self.model = model
        self.call_kwargs = call_kwargs

    def forward(self, x):
        out = self.model(x, **self.call_kwargs)
        return out[0] if isinstance(out, (tuple, list)) else next(iter(out.values()))


def well_conditioned(model):
    """Convolution weights that keep activations near unit scale (He's init)
    and batch norms with unit scale and non-trivial statistics, so that folding
    them is tested. transformers' vision inits (convolutions of std 0.02, batch
    norm scales near 0) shrink a deep CNN's activations to denormals, where
    every error looks like zero."""
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.Conv1d, nn.Conv2d, nn.Conv3d)):
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu", generator=generator)
            elif isinstance(module, nn.modules.batchnorm._BatchNorm):
                if module.affine:
                    module.weight.fill_(1.0)
                    module.bias.zero_()
                module.running_mean.copy_(torch.randn(module.num_features, generator=generator) * 0.1)
                module.running_var.copy_(torch.rand(module.num_features, generator=generator) + 0.5)
    return model.eval()


def hf(model_class, config_class, conditioned=False, **config):
    def build():
        torch.manual_seed(0)
        model = model_class(config_class(**config)).eval()
        if conditioned:
            well_conditioned(model)
        kwargs = {"use_cache": False} if "use_cache" in model.forward.__code__.co_varnames else {}
        return Tensors(model, **kwargs)

    return build


def token_ids(vocab, seq=12):
    return lambda batch: (torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(batch)),)


def image(channels=3, size=32):
    return lambda batch: (torch.randn(batch, channels, size, size, generator=torch.Generator().manual_seed(batch)),)


def audio(samples=1600):
    return lambda batch: (torch.randn(batch, samples, generator=torch.Generator().manual_seed(batch)),)


SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
DECODER = dict(
    vocab_size=128,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=64,
    max_position_embeddings=64,
)

T = transformers
ENCODERS = [
    ZooModel("bert", hf(T.BertModel, T.BertConfig, vocab_size=128, **SMALL), token_ids(128)),
    ZooModel("roberta", hf(T.RobertaModel, T.RobertaConfig, vocab_size=128, **SMALL), token_ids(128)),
    ZooModel("xlm_roberta", hf(T.XLMRobertaModel, T.XLMRobertaConfig, vocab_size=128, **SMALL), token_ids(128)),
    ZooModel(
        "distilbert",
        hf(T.DistilBertModel, T.DistilBertConfig, vocab_size=128, dim=32, n_layers=2, n_heads=4, hidden_dim=64),
        token_ids(128),
    ),
    ZooModel("albert", hf(T.AlbertModel, T.AlbertConfig, vocab_size=128, embedding_size=16, **SMALL), token_ids(128)),
    ZooModel(
        "electra", hf(T.ElectraModel, T.ElectraConfig, vocab_size=128, embedding_size=16, **SMALL), token_ids(128)
    ),
    ZooModel("deberta_v2", hf(T.DebertaV2Model, T.DebertaV2Config, vocab_size=128, **SMALL), token_ids(128)),
    ZooModel("mpnet", hf(T.MPNetModel, T.MPNetConfig, vocab_size=128, **SMALL), token_ids(128)),
    ZooModel(
        "t5_encoder",
        hf(T.T5EncoderModel, T.T5Config, vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4),
        token_ids(128),
    ),
    ZooModel(
        "modernbert",
        hf(
            T.ModernBertModel,
            T.ModernBertConfig,
            vocab_size=128,
            pad_token_id=0,
            bos_token_id=1,
            eos_token_id=2,
            cls_token_id=1,
            sep_token_id=2,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            global_attn_every_n_layers=2,
            local_attention=8,
        ),
        token_ids(128),
    ),
    ZooModel(
        "clip_text",
        hf(T.CLIPTextModel, T.CLIPTextConfig, vocab_size=128, max_position_embeddings=32, **SMALL),
        token_ids(128),
    ),
    # Token mixing by a 2-D Fourier transform over sequence and hidden dims (fftn(...).real).
    ZooModel(
        "fnet",
        hf(
            T.FNetModel,
            T.FNetConfig,
            vocab_size=128,
            hidden_size=32,
            num_hidden_layers=2,
            intermediate_size=64,
            max_position_embeddings=32,
        ),
        token_ids(128),
    ),
]

# The small shapes of the decoder families whose configs name their fields
# their own way (tests/python/test_llm_export.py builds them too).
GPT2_SMALL = dict(vocab_size=128, n_embd=32, n_layer=2, n_head=4, n_positions=64)
GPT_NEOX_SMALL = dict(vocab_size=128, **SMALL)
BLOOM_SMALL = dict(vocab_size=128, hidden_size=32, n_layer=2, n_head=4)
OPT_SMALL = dict(
    vocab_size=128,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    ffn_dim=64,
    word_embed_proj_dim=32,
    max_position_embeddings=64,
)

DECODERS = [
    ZooModel("llama", hf(T.LlamaForCausalLM, T.LlamaConfig, **DECODER), token_ids(128)),
    ZooModel("mistral", hf(T.MistralForCausalLM, T.MistralConfig, **DECODER), token_ids(128)),
    ZooModel("qwen2", hf(T.Qwen2ForCausalLM, T.Qwen2Config, **DECODER), token_ids(128)),
    ZooModel("qwen3", hf(T.Qwen3ForCausalLM, T.Qwen3Config, head_dim=8, **DECODER), token_ids(128)),
    ZooModel("gemma", hf(T.GemmaForCausalLM, T.GemmaConfig, head_dim=8, **DECODER), token_ids(128)),
    ZooModel(
        "gemma2", hf(T.Gemma2ForCausalLM, T.Gemma2Config, head_dim=8, sliding_window=8, **DECODER), token_ids(128)
    ),
    ZooModel("phi", hf(T.PhiForCausalLM, T.PhiConfig, **DECODER), token_ids(128)),
    ZooModel("phi3", hf(T.Phi3ForCausalLM, T.Phi3Config, pad_token_id=0, **DECODER), token_ids(128)),
    ZooModel(
        "gpt2",
        hf(T.GPT2LMHeadModel, T.GPT2Config, **GPT2_SMALL),
        token_ids(128),
    ),
    ZooModel("gpt_neox", hf(T.GPTNeoXForCausalLM, T.GPTNeoXConfig, **GPT_NEOX_SMALL), token_ids(128)),
    ZooModel("bloom", hf(T.BloomModel, T.BloomConfig, **BLOOM_SMALL), token_ids(128)),
    ZooModel(
        "opt",
        hf(T.OPTModel, T.OPTConfig, **OPT_SMALL),
        token_ids(128),
    ),
]


class EncoderDecoder(nn.Module):
    """A seq2seq model's decoder output for given encoder inputs and decoder inputs."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, inputs, decoder_inputs):
        return self.model(inputs, decoder_input_ids=decoder_inputs, use_cache=False)[0]


def seq2seq(model_class, config_class, **config):
    def build():
        torch.manual_seed(0)
        return EncoderDecoder(model_class(config_class(**config)).eval())

    return build


def whisper_features(batch):
    g = torch.Generator().manual_seed(batch)
    return (torch.randn(batch, 16, 60, generator=g), torch.randint(0, 128, (batch, 5), generator=g))


WHISPER = dict(
    vocab_size=128,
    num_mel_bins=16,
    d_model=32,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=4,
    decoder_attention_heads=4,
    encoder_ffn_dim=64,
    decoder_ffn_dim=64,
    max_source_positions=30,
    max_target_positions=32,
    decoder_start_token_id=1,
    pad_token_id=0,
)

SEQ2SEQ = [
    ZooModel(
        "bart",
        seq2seq(
            T.BartModel,
            T.BartConfig,
            vocab_size=128,
            d_model=32,
            encoder_layers=2,
            decoder_layers=2,
            encoder_attention_heads=4,
            decoder_attention_heads=4,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            max_position_embeddings=64,
        ),
        lambda b: token_ids(128)(b) + token_ids(128, seq=7)(b),
    ),
    ZooModel(
        "t5",
        seq2seq(T.T5Model, T.T5Config, vocab_size=128, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4),
        lambda b: token_ids(128)(b) + token_ids(128, seq=7)(b),
    ),
    ZooModel("whisper", seq2seq(T.WhisperModel, T.WhisperConfig, **WHISPER), whisper_features),
]


class WhisperEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = T.WhisperModel(T.WhisperConfig(**WHISPER)).eval().get_encoder()

    def forward(self, features):
        return self.encoder(features)[0]


VISION_SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)

VISION = [
    ZooModel(
        "resnet",
        hf(
            T.ResNetModel,
            T.ResNetConfig,
            conditioned=True,
            embedding_size=16,
            hidden_sizes=[16, 32, 48, 64],
            depths=[1, 1, 1, 1],
        ),
        image(),
    ),
    ZooModel(
        "resnet_bottleneck",
        hf(
            T.ResNetModel,
            T.ResNetConfig,
            conditioned=True,
            embedding_size=16,
            hidden_sizes=[32, 64],
            depths=[1, 2],
            layer_type="bottleneck",
        ),
        image(),
    ),
    ZooModel(
        "regnet",
        hf(
            T.RegNetModel,
            T.RegNetConfig,
            conditioned=True,
            embedding_size=16,
            hidden_sizes=[16, 32, 48, 64],
            depths=[1, 1, 1, 1],
            groups_width=8,
        ),
        image(),
    ),
    ZooModel(
        "mobilenet_v1",
        hf(T.MobileNetV1Model, T.MobileNetV1Config, conditioned=True, depth_multiplier=0.25, image_size=32),
        image(),
    ),
    ZooModel(
        "mobilenet_v2",
        hf(T.MobileNetV2Model, T.MobileNetV2Config, conditioned=True, depth_multiplier=0.25, image_size=32),
        image(),
    ),
    ZooModel(
        "efficientnet",
        hf(
            T.EfficientNetModel,
            T.EfficientNetConfig,
            conditioned=True,
            width_coefficient=0.25,
            depth_coefficient=0.25,
            image_size=32,
            hidden_dim=320,
        ),
        image(),
    ),
    ZooModel(
        "convnext", hf(T.ConvNextModel, T.ConvNextConfig, hidden_sizes=[8, 16, 24, 32], depths=[1, 1, 1, 1]), image()
    ),
    ZooModel(
        "convnext_v2",
        hf(T.ConvNextV2Model, T.ConvNextV2Config, hidden_sizes=[8, 16, 24, 32], depths=[1, 1, 1, 1]),
        image(),
    ),
    ZooModel("vit", hf(T.ViTModel, T.ViTConfig, image_size=32, patch_size=8, **VISION_SMALL), image()),
    ZooModel("deit", hf(T.DeiTModel, T.DeiTConfig, image_size=32, patch_size=8, **VISION_SMALL), image()),
    ZooModel("dinov2", hf(T.Dinov2Model, T.Dinov2Config, image_size=32, patch_size=8, **VISION_SMALL), image()),
    ZooModel(
        "swin",
        hf(
            T.SwinModel,
            T.SwinConfig,
            image_size=32,
            patch_size=2,
            embed_dim=16,
            depths=[1, 1],
            num_heads=[2, 4],
            window_size=4,
        ),
        image(),
    ),
    ZooModel(
        "segformer",
        hf(
            T.SegformerModel,
            T.SegformerConfig,
            num_encoder_blocks=2,
            depths=[1, 1],
            sr_ratios=[2, 1],
            hidden_sizes=[16, 32],
            num_attention_heads=[1, 2],
            patch_sizes=[7, 3],
            strides=[4, 2],
            mlp_ratios=[2, 2],
        ),
        image(),
    ),
    ZooModel(
        "clip_vision", hf(T.CLIPVisionModel, T.CLIPVisionConfig, image_size=32, patch_size=8, **VISION_SMALL), image()
    ),
    ZooModel(
        "mobilevit",
        hf(
            T.MobileViTModel,
            T.MobileViTConfig,
            conditioned=True,
            image_size=32,
            hidden_sizes=[16, 24, 32],
            neck_hidden_sizes=[8, 8, 16, 16, 24, 24, 32],
        ),
        image(),
    ),
]

AUDIO = [
    ZooModel(
        "wav2vec2",
        hf(
            T.Wav2Vec2Model,
            T.Wav2Vec2Config,
            conv_dim=[16, 16],
            conv_stride=[5, 2],
            conv_kernel=[10, 3],
            num_conv_pos_embeddings=16,
            num_conv_pos_embedding_groups=4,
            **SMALL,
        ),
        audio(),
    ),
    ZooModel(
        "hubert",
        hf(
            T.HubertModel,
            T.HubertConfig,
            conv_dim=[16, 16],
            conv_stride=[5, 2],
            conv_kernel=[10, 3],
            num_conv_pos_embeddings=16,
            num_conv_pos_embedding_groups=4,
            **SMALL,
        ),
        audio(),
    ),
    ZooModel("whisper_encoder", WhisperEncoder, lambda b: (whisper_features(b)[0],)),
]
