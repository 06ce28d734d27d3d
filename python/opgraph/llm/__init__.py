"""Text generation: a Hugging Face tokenizer.json's byte-level BPE (GPT-2,
Llama-3, Qwen2, SmolLM) in C++, encoding and decoding as Hugging Face's
tokenizers does, and the Generator, which runs a causal LM whose KV cache is
a graph's state."""

from .._C import Tokenizer, TokenStreamDecoder
from .export import export
from .generator import Generated, GeneratedText, Generator

__all__ = ["Generated", "GeneratedText", "Generator", "Tokenizer", "TokenStreamDecoder", "export"]
