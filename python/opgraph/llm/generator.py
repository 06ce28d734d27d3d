"""``Generator``: text generation with a causal LM that opgraph.llm.export
wrote to a folder, on the C++ runtime (the loop itself is C++, as the
``opgraph generate`` command runs it)."""

import queue
import threading

from .. import _C
from .._C import Error


class Generated(list):
    """The new token ids of an id prompt, with how generation ended:
    ``stop_reason`` ('eos', 'stop', 'max_new_tokens', 'max_seq_len'), and the
    prompt's and the decoding's timings."""

    def __init__(self, result):
        super().__init__(result.tokens)
        _describe(self, result)


class GeneratedText(str):
    """The new text of a text prompt, with the same attributes as Generated
    and its ``tokens``."""

    def __new__(cls, result):
        text = super().__new__(cls, result.text)
        text.tokens = list(result.tokens)
        _describe(text, result)
        return text


def _describe(target, result):
    target.stop_reason = result.stop_reason
    target.prompt_tokens = result.prompt_tokens
    target.time_to_first_token = result.prompt_seconds
    target.decode_tokens_per_second = (
        max(len(result.tokens) - 1, 0) / result.decode_seconds if result.decode_seconds > 0 else 0.0
    )


class Generator:
    """``Generator(folder, threads=None, precision="float32", weights=None)``:
    greedy by default; ``temperature``, ``top_k``, ``top_p``,
    ``repetition_penalty`` and ``seed`` sample as transformers' generate()
    does. Calls from several threads run at once, each with its own KV cache;
    a list of prompts decodes as one batch, one run per token for them all.
    ``weights="int8"`` or ``"int4"`` quantizes the linear layers and the LM
    head at load, a scale per ``group_size`` inputs (None: per output channel
    for int8, 32 for int4), as Session's ``quantize`` does ("int8_asym" and
    "int4_asym" with a zero point per scale); with
    ``activations="int8"`` their products quantize their other operand too,
    as Session's ``activations`` does (a decode step's per block of 32
    values, as llama.cpp's Q8_0)."""

    def __init__(
        self,
        folder,
        *,
        threads=None,
        precision="float32",
        weights=None,
        group_size=None,
        activations=None,
        prefill_chunk=512,
    ):
        self._generator = _C._Generator(
            str(folder), threads or 0, precision, weights, group_size, activations, prefill_chunk
        )

    @property
    def tokenizer(self):
        return self._generator.tokenizer

    @property
    def batches(self):
        """Whether a list of prompts decodes in one run per token (a graph that opgraph.llm.export wrote), rather
        than prompt after prompt."""
        return self._generator.batches

    @property
    def max_seq_len(self):
        return self._generator.max_seq_len

    def generate(
        self,
        prompt,
        max_new_tokens=128,
        temperature=0.0,
        top_k=None,
        top_p=None,
        repetition_penalty=None,
        stop=None,
        seed=None,
    ):
        """The new token ids (Generated) for a list of ids, the new text
        (GeneratedText) for a string, and a list of those for a list of
        prompts, each generated as if alone (but for the cache's end, which
        the batch reaches when its longest prompt does)."""
        options = dict(
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            repetition_penalty=repetition_penalty,
            stop=list(stop or ()),
            seed=seed,
        )
        if isinstance(prompt, list) and prompt and not isinstance(prompt[0], int):
            return self._run(prompt, options, None)
        return self._run([prompt], options, None)[0]

    def stream(self, prompt, **options):
        """Yields the new text piece by piece as it is produced (a text
        prompt, or ids with a tokenizer in the folder)."""
        if self.tokenizer is None:
            raise Error("Generator.stream: yields text, and this folder has no tokenizer")
        pieces = queue.Queue()
        done = object()
        outcome = {}

        def produce():
            try:
                self._run([prompt], {"stop": [], **options}, lambda _, __, text: text and pieces.put(text))
            except Exception as error:  # handed to the consumer, which raises it
                outcome["error"] = error
            finally:
                pieces.put(done)

        worker = threading.Thread(target=produce, daemon=True)
        worker.start()
        while (piece := pieces.get()) is not done:
            yield piece
        worker.join()
        if "error" in outcome:
            raise outcome["error"]

    def _ids(self, prompt):
        if isinstance(prompt, str):
            if self.tokenizer is None:
                raise Error(
                    "Generator.generate: a text prompt needs a tokenizer, and this folder has no tokenizer.json; "
                    "give token ids, or export with a tokenizer"
                )
            return self.tokenizer.encode(prompt)
        if isinstance(prompt, list) and all(isinstance(i, int) for i in prompt):
            return prompt
        raise Error(
            f"Generator.generate: expected a prompt as a str, a list of token ids or a list of those, "
            f"got {type(prompt).__name__}"
        )

    def _run(self, prompts, options, on_token):
        options = {
            "max_new_tokens": 128,
            "temperature": 0.0,
            "top_k": None,
            "top_p": None,
            "repetition_penalty": None,
            "stop": [],
            "seed": None,
            **options,
        }
        results = self._generator.generate([self._ids(p) for p in prompts], on_token=on_token, **options)
        return [
            GeneratedText(result) if isinstance(prompt, str) else Generated(result)
            for prompt, result in zip(prompts, results)
        ]
