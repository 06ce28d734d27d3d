"""The zoo's plain torch.nn stacks: the layers audio, segmentation, style
transfer and video models are made of, written as people write them (in-place
activations, ``+=`` residuals, functional calls)."""

import torch
import torch.nn.functional as F
from torch import nn

from .models import ZooModel, audio, image, well_conditioned


class ResidualCNN(nn.Module):
    """In-place ReLUs and an in-place residual add, as torchvision's ResNet writes them."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True))
        self.conv1 = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = self.stem(x)
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        out = self.relu(out)
        return self.head(torch.flatten(F.adaptive_avg_pool2d(out, 1), 1))


class SqueezeExcite(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.reduce = nn.Conv2d(channels, channels // 4, 1)
        self.expand = nn.Conv2d(channels // 4, channels, 1)

    def forward(self, x):
        scale = F.adaptive_avg_pool2d(x, 1)
        return x * F.hardsigmoid(self.expand(F.relu(self.reduce(scale))))


class MobileNetV3Block(nn.Module):
    """Inverted residual with hardswish, a depthwise convolution and squeeze-excite (MobileNetV3)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.Hardswish())
        self.expand = nn.Sequential(nn.Conv2d(16, 48, 1), nn.BatchNorm2d(48), nn.Hardswish())
        self.depthwise = nn.Sequential(nn.Conv2d(48, 48, 5, padding=2, groups=48), nn.BatchNorm2d(48), nn.Hardswish())
        self.se = SqueezeExcite(48)
        self.project = nn.Sequential(nn.Conv2d(48, 16, 1), nn.BatchNorm2d(16))

    def forward(self, x):
        x = self.stem(x)
        return x + self.project(self.se(self.depthwise(self.expand(x))))


class UNet(nn.Module):
    """Two levels down, two up: transposed-convolution and bilinear upsampling, skip concatenations."""

    def __init__(self):
        super().__init__()
        self.down1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.SiLU())
        self.down2 = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.GroupNorm(4, 16), nn.SiLU())
        self.bottom = nn.Sequential(nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.LeakyReLU(0.1))
        self.up1 = nn.ConvTranspose2d(16, 16, 2, stride=2)
        self.merge1 = nn.Conv2d(32, 8, 3, padding=1)
        self.merge2 = nn.Conv2d(16, 4, 3, padding=1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(d1)
        u1 = self.merge1(torch.cat([self.up1(self.bottom(d2)), d2], dim=1))
        u2 = F.interpolate(u1, scale_factor=2, mode="bilinear", align_corners=False)
        u2 = F.interpolate(u2, size=d1.shape[-2:], mode="nearest")
        return self.merge2(torch.cat([u2, d1], dim=1))


class StyleTransfer(nn.Module):
    """Reflection padding, instance norm and pixel-shuffle upsampling (fast neural style, ESPCN)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.ReflectionPad2d(2),
            nn.Conv2d(3, 8, 5),
            nn.InstanceNorm2d(8, affine=True),
            nn.ReLU(),
            nn.ReflectionPad2d(1),
            nn.Conv2d(8, 12, 3, stride=2),
            nn.InstanceNorm2d(12),
            nn.ReLU(),
            nn.Conv2d(12, 12, 3, padding=1),
            nn.PixelShuffle(2),
            nn.PReLU(3),
            nn.Tanh(),
        )

    def forward(self, x):
        return self.body(x)


class Video3d(nn.Module):
    """3-D convolutions and pooling over (frames, height, width)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv3d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm3d(8)
        self.conv2 = nn.Conv3d(8, 8, (1, 3, 3), stride=(1, 2, 2))
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        x = F.max_pool3d(F.relu(self.bn(self.conv1(x))), 2)
        x = F.adaptive_avg_pool3d(F.relu(self.conv2(x)), 1)
        return self.head(x.flatten(1))


class Recurrent(nn.Module):
    """A two-layer bidirectional LSTM or GRU over (batch, time, features), batch first."""

    def __init__(self, kind):
        super().__init__()
        self.rnn = getattr(nn, kind)(12, 16, num_layers=2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out)


class AudioConv(nn.Module):
    """A 1-D convolutional keyword spotter: "same" padding, weight-normed convolution, adaptive pooling."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(1, 8, 9, stride=4, padding=4)
        self.conv2 = nn.utils.parametrizations.weight_norm(nn.Conv1d(8, 8, 5, padding="same"))
        self.norm = nn.GroupNorm(1, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        x = F.gelu(self.conv1(x.unsqueeze(1)))
        x = F.gelu(self.norm(self.conv2(x)))
        return self.head(F.adaptive_avg_pool1d(x, 1).squeeze(-1))


class Spectrogram(nn.Module):
    """An audio front end: a log power spectrogram (torch.stft with a Hann window) into a convolution over frames."""

    def __init__(self, n_fft=64):
        super().__init__()
        self.n_fft = n_fft
        self.register_buffer("window", torch.hann_window(n_fft))
        self.conv = nn.Conv1d(n_fft // 2 + 1, 16, 3, padding=1)
        self.head = nn.Linear(16, 8)

    def forward(self, x):
        spectrum = torch.stft(x, self.n_fft, hop_length=16, window=self.window, return_complex=True)
        features = F.relu(self.conv(torch.log1p(spectrum.abs().pow(2))))
        return self.head(features.transpose(1, 2))


class SpectralFilter(nn.Module):
    """A learned gain per frequency between rfft and irfft (the real signal's round trip through its spectrum)."""

    def __init__(self, samples=30):
        super().__init__()
        self.gain = nn.Parameter(torch.rand(samples // 2 + 1) + 0.5)

    def forward(self, x):
        return torch.fft.irfft(torch.fft.rfft(x) * 2 * self.gain, n=x.shape[-1])


class TransformerStack(nn.Module):
    """torch.nn.TransformerEncoder with a padding mask, as people build small encoders."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


def sequence(features, steps=9):
    return lambda batch: (torch.randn(batch, steps, features, generator=torch.Generator().manual_seed(batch)),)


def volume(batch):
    return (torch.randn(batch, 3, 4, 8, 8, generator=torch.Generator().manual_seed(batch)),)


STACKS = [
    ZooModel("residual_cnn", lambda: well_conditioned(ResidualCNN()), image(size=16)),
    ZooModel("mobilenet_v3_block", lambda: well_conditioned(MobileNetV3Block()), image(size=16)),
    ZooModel("unet", lambda: UNet().eval(), image(size=16)),
    ZooModel("style_transfer", lambda: StyleTransfer().eval(), image(size=16)),
    ZooModel("video_3d", lambda: well_conditioned(Video3d()), volume),
    ZooModel("lstm", lambda: Recurrent("LSTM").eval(), sequence(12)),
    ZooModel("gru", lambda: Recurrent("GRU").eval(), sequence(12)),
    ZooModel(
        "audio_conv1d",
        lambda: AudioConv().eval(),
        lambda b: (torch.randn(b, 400, generator=torch.Generator().manual_seed(b)),),
    ),
    ZooModel("transformer_stack", lambda: TransformerStack().eval(), sequence(32)),
    ZooModel("spectrogram", lambda: Spectrogram().eval(), audio(400)),
    ZooModel("fft_roundtrip", lambda: SpectralFilter().eval(), sequence(30, steps=4)),
]
