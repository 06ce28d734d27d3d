"""Text generation. So far the tokenizer: a Hugging Face tokenizer.json's
byte-level BPE (GPT-2, Llama-3, Qwen2, SmolLM) in C++, encoding and decoding
as Hugging Face's tokenizers does, with no dependency at run time."""

from .._C import Tokenizer, TokenStreamDecoder

__all__ = ["Tokenizer", "TokenStreamDecoder"]
