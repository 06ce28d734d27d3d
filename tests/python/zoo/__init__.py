"""The model zoo (models.py: transformers architectures; stacks.py: torch.nn stacks)."""

from .models import AUDIO, DECODERS, ENCODERS, SEQ2SEQ, VISION, ZooModel  # noqa: F401 (re-exported)
from .stacks import STACKS

ZOO = ENCODERS + DECODERS + SEQ2SEQ + VISION + AUDIO + STACKS
