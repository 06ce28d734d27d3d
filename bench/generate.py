"""Text generation on opgraph against transformers, llama.cpp and ONNX
Runtime GenAI: prefill and decode speed, time to first token and peak
resident memory, on LLMs of published shapes with random weights.

Models: a SmolLM2-135M-shaped Llama and a Qwen2.5-0.5B-shaped Qwen2 (their
published configs; nothing is downloaded), each saved once as a transformers
folder under build/bench-generate with a byte-level BPE tokenizer trained
here on the Python standard library's sources in the model's own
pre-tokenizer style (the converters want one; the prompts are token ids).

Paths, each fed the same random prompt ids:
- opgraph: `opgraph.llm.export` of the model, run by `opgraph.llm.Generator`
  (precision "float32"; "bf16": bfloat16 weights, float32 sums; "int8": the
  linear layers' and LM head's weights int8 with a scale per output channel,
  `weights="int8"`, float32 sums; "int4": int4 in groups of 32, as Q4_0;
  "int4_asym": int4 in groups of 32 with a zero point each, against
  llama.cpp's Q4_1 (a scale and a minimum per 32);
  "int8-a8", "int4-a8" and "int4_asym-a8": those weights with int8 activations,
  `activations="int8"`, a decode step's per block of 32 as llama.cpp's
  Q8_0, the other paths' rows being their int8 and int4 ones: llama.cpp's
  Q8_0 and Q4_0 multiply int8 activations too; "q4_k_m": llama.cpp's
  Q4_K_M alone, its most used mix of k-quants (super-blocks of 256 with
  6-bit sub-block scales, some tensors in Q6_K, and Q5_0 or Q8_0 where a
  row's length is not a multiple of 256, as 576 and 896 are), which opgraph
  has no format for: its 4-bit rows are int4 and int4_asym);
- transformers `generate`, eager, and with a static cache whose decode step
  runs under `torch.compile` (transformers' own recipe: cache_implementation
  "static" with a CompileConfig), the model in float32 or bfloat16;
- llama.cpp through llama-cpp-python (which builds llama.cpp from its sources
  for this CPU), on a GGUF of the same weights written by the converter
  llama.cpp ships (convert_hf_to_gguf.py, taken from llama-cpp-python's source
  package), --outtype f32, bf16 or q8_0 (int8 in blocks of 32 with a scale
  each), and Q4_0, Q4_1 and Q4_K_M quantized from the f32 one by llama.cpp's
  quantizer;
- ONNX Runtime GenAI, on the ONNX model its model builder writes from the same
  folder (fp32, or int4: MatMulNBits in blocks of 32, symmetric; its CPU
  builder writes no bf16, int8 or asymmetric int4 model);
- OpenVINO GenAI is not measured: its LLM pipeline loads the stateful
  OpenVINO IR that optimum-intel exports, and optimum-intel 2.2 requires
  transformers 5.5 and torch 2.14 (a CUDA build), which opgraph's pinned
  environment cannot take. The bench says so in its output.

Before timing, each path's greedy tokens are compared with transformers
eager's (float32) for the same prompt; the table gives how many of the first
tokens agree (random weights give near-flat logits, so a path in bfloat16 or
int8, or one summing in another order, may part from float32's argmax after a
while).

Measured per row (model, precision, threads), in rounds that interleave the
paths in this process: prefill of 128 and 512 prompt tokens (tokens/s: the
prompt over the time to its first new token), then 128 new tokens after a
128-token prompt (time to first token, and decode tokens/s over the 127
after it). Figures are medians over the rounds. cpu/wall is the process CPU
time per wall second over a path's decode (bench/timing.py's check_threads
flags it with "!" where it does not fit the thread count). The memory table
gives each path's peak RSS in a process of its own that loads it and
generates once.

Serving: N prompts of 128 tokens (N = 1, 4, 16) decoded together, 64 new
tokens each, on the paths whose Python API decodes a batch (opgraph,
transformers eager, ONNX Runtime GenAI); the table gives the total decode
tokens/s.

Decode at batch 1 streams every weight and the KV cache once per token, so
its bound is bench/peak.py's read bandwidth at the row's thread count over
the bytes read per token (the weights at the path's precision, the lm head
once, and the float32 cache at the mean position); "bound" gives each
decode's fraction of it.

`make bench-generate` installs the peers (bench/requirements-generate.txt)
and runs every row:

    python bench/generate.py [--models smollm2-135m qwen2.5-0.5b] [--precisions float32 bf16 int8 int4 ...]
                             [--threads 1 2] [--rounds 2] [--paths opgraph eager ...]
                             [--batches 1 4 16] [--tables speed serving memory]
"""

import argparse
import json
import os
import pickle
import random
import re
import statistics
import subprocess
import sys
import sysconfig
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "build" / "bench-generate"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from peak import cpu_description, measure_peak  # noqa: E402
from timing import check_threads  # noqa: E402

PROMPTS = (128, 512)
NEW_TOKENS = 128
SERVING_TOKENS = 64
# The tokenizer trained here: its vocabulary, from which the prompts' ids are drawn.
TOKENIZER_VOCAB = 4000
MAX_SEQ_LEN = 1024
LLAMA_CPP_PYTHON = "llama-cpp-python==0.3.36"
# The pre-tokenizer split of SmolLM2 (GPT-2's) and of Qwen2 (Llama-3's, one digit a token).
GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


@dataclass
class Spec:
    config: dict  # the published config's architecture fields
    split: str  # the tokenizer's pre-tokenizer regex
    llama_cpp_pre: str  # llama.cpp's name for that pre-tokenizer


SPECS = {
    "smollm2-135m": Spec(
        dict(
            model_type="llama",
            vocab_size=49152,
            hidden_size=576,
            intermediate_size=1536,
            num_hidden_layers=30,
            num_attention_heads=9,
            num_key_value_heads=3,
            max_position_embeddings=8192,
            rms_norm_eps=1e-5,
            rope_theta=100000.0,
            tie_word_embeddings=True,
            bos_token_id=0,
            eos_token_id=0,
        ),
        GPT2_SPLIT,
        "smollm",
    ),
    "qwen2.5-0.5b": Spec(
        dict(
            model_type="qwen2",
            vocab_size=151936,
            hidden_size=896,
            intermediate_size=4864,
            num_hidden_layers=24,
            num_attention_heads=14,
            num_key_value_heads=2,
            max_position_embeddings=32768,
            rms_norm_eps=1e-6,
            rope_theta=1000000.0,
            tie_word_embeddings=True,
            use_sliding_window=False,
            bos_token_id=0,
            eos_token_id=0,
        ),
        QWEN2_SPLIT,
        "qwen2",
    ),
}


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- artefacts


def train_tokenizer(split):
    """A byte-level BPE of TOKENIZER_VOCAB tokens trained on standard-library sources,
    as transformers' PreTrainedTokenizerFast; id 0 is <|endoftext|>."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(split), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    text = "".join((stdlib / name).read_text() for name in ("argparse.py", "textwrap.py", "difflib.py", "typing.py"))
    trainer = trainers.BpeTrainer(
        vocab_size=TOKENIZER_VOCAB,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(text.splitlines(keepends=True), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|endoftext|>", bos_token="<|endoftext|>")


def hf_folder(name):
    """The model's transformers folder (config, random weights, tokenizer), made once."""
    import torch
    import transformers

    folder = WORK / name / "hf"
    if (folder / "config.json").exists():
        return folder
    log(f"{name}: building the model from its config, random weights")
    config = transformers.AutoConfig.for_model(**SPECS[name].config)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(folder)
    train_tokenizer(SPECS[name].split).save_pretrained(folder)
    return folder


def stored(precision):
    """The weights' format of a precision: int4-a8 (int4 weights, int8 activations) stores int4."""
    return precision.removesuffix("-a8")


def quantized(precision):
    return stored(precision) in ("int8", "int4", "int4_asym", "q4_k_m")


def load_torch(name, precision):
    import torch
    import transformers

    if quantized(precision):
        raise RuntimeError(f"transformers keeps no {precision} weights on the CPU without another quantization package")
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    model = transformers.AutoModelForCausalLM.from_pretrained(hf_folder(name), dtype=dtype).eval()
    model.generation_config.eos_token_id = None  # generate exactly the tokens asked for
    model.generation_config.pad_token_id = 0
    return model


def opgraph_folder(name):
    from opgraph import load_opg
    from opgraph.llm import export

    folder = WORK / name / "opgraph"
    model = folder / "model.opg"
    # A folder written before export batched sequences (no attention_mask input) is written again.
    if not model.exists() or "attention_mask" not in (i.name for i in load_opg(model)[0].inputs):
        log(f"{name}: opgraph.llm.export")
        export(load_torch(name, "float32"), folder, max_seq_len=MAX_SEQ_LEN)
    return folder


def llama_cpp_sources():
    """llama.cpp's converter and its gguf-py, from llama-cpp-python's source package."""
    sources = WORK / "llama-cpp-python"
    converter = next(sources.glob("*/vendor/llama.cpp"), None)
    if converter is None:
        log("fetching llama-cpp-python's source package for llama.cpp's converter")
        sources.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", sources]
            + [LLAMA_CPP_PYTHON],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        with tarfile.open(next(sources.glob("*.tar.gz"))) as archive:
            members = [m for m in archive.getmembers() if "/vendor/llama.cpp/" in m.name and m.isfile()]
            wanted = ("convert_hf_to_gguf.py", "/gguf-py/", "/conversion/")
            archive.extractall(sources, [m for m in members if any(w in m.name for w in wanted)], filter="data")
        converter = next(sources.glob("*/vendor/llama.cpp"))
    return converter


# convert_hf_to_gguf.py names a BPE tokenizer's pre-tokenizer by hashing its
# tokens for a test text, which only the published vocabularies match: the
# one trained here is told which split it uses instead.
CONVERT = """
import runpy, sys
sys.path.insert(0, sys.argv.pop(1))
pre = sys.argv.pop(1)
import conversion.base
conversion.base.TextModel.get_vocab_base_pre = lambda self, tokenizer: pre
sys.argv[0] = sys.argv.pop(1)
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def gguf_file(name, precision):
    precision = stored(precision)
    llama_formats = {"int4": "Q4_0", "int4_asym": "Q4_1", "q4_k_m": "Q4_K_M"}
    if precision in llama_formats:
        return quantized_gguf(name, llama_formats[precision])
    outtype = {"float32": "f32", "bf16": "bf16", "int8": "q8_0"}[precision]
    path = WORK / name / f"model-{outtype}.gguf"
    if not path.exists():
        log(f"{name}: writing the {outtype} GGUF with llama.cpp's converter")
        converter = llama_cpp_sources()
        subprocess.run(
            [sys.executable, "-c", CONVERT, str(converter), SPECS[name].llama_cpp_pre]
            + [str(converter / "convert_hf_to_gguf.py"), str(hf_folder(name)), "--outtype", outtype]
            + ["--outfile", str(path)],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    return path


def quantized_gguf(name, kind):
    """The f32 GGUF quantized to `kind` (Q4_0, Q4_1, Q4_K_M) by llama.cpp's own quantizer (llama-quantize's library
    call)."""
    import ctypes

    import llama_cpp

    path = WORK / name / f"model-{kind.lower()}.gguf"
    if not path.exists():
        log(f"{name}: quantizing the GGUF to {kind} with llama.cpp")
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{kind}")
        status = llama_cpp.llama_model_quantize(
            str(gguf_file(name, "float32")).encode(), str(path).encode(), ctypes.byref(params)
        )
        if status != 0:
            raise RuntimeError(f"llama_model_quantize failed ({status})")
    return path


def ort_genai_folder(name, precision="float32"):
    """The builder's fp32 model, or its int4 one (MatMulNBits, blocks of 32, its default accuracy level)."""
    kind = "int4" if stored(precision) == "int4" else "fp32"
    folder = WORK / name / f"ort-genai-{kind}"
    if not (folder / "genai_config.json").exists():
        log(f"{name}: ONNX Runtime GenAI's model builder")
        subprocess.run(
            [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(hf_folder(name)), "-o", str(folder)]
            + ["-p", kind, "-e", "cpu", "-c", str(WORK / name / "ort-cache")],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    return folder


# ---------------------------------------------------------------- paths
# Each path's generate(prompt, new) returns (new token ids, seconds to the
# first new token, seconds in all).


class Opgraph:
    def __init__(self, name, precision, threads):
        from opgraph.llm import Generator

        if precision == "q4_k_m":
            raise RuntimeError("opgraph has no k-quant format; its 4-bit rows are int4 and int4_asym")
        if quantized(precision):
            activations = "int8" if precision.endswith("-a8") else None
            self.generator = Generator(
                opgraph_folder(name), threads=threads, weights=stored(precision), activations=activations
            )
        else:
            self.generator = Generator(opgraph_folder(name), threads=threads, precision=precision)

    def generate(self, prompt, new):
        start = time.perf_counter()
        out = self.generator.generate(prompt, max_new_tokens=new)
        return list(out), out.time_to_first_token, time.perf_counter() - start

    def generate_batch(self, prompts, new):
        start = time.perf_counter()
        outs = self.generator.generate(prompts, max_new_tokens=new)
        return outs[0].time_to_first_token, time.perf_counter() - start


class Transformers:
    def __init__(self, name, precision, threads, compiled=False):
        import torch
        import transformers
        from transformers.generation import CompileConfig

        torch.set_num_threads(threads)
        self.torch = torch
        self.model = load_torch(name, precision)
        self.options, self.cache = {}, None
        if compiled:
            # transformers compiles the decode step on its own only on GPUs;
            # the flag (a class attribute, not an argument) asks for it here.
            # One static cache of MAX_SEQ_LEN for every call keeps the
            # compiled step's shapes (a cache sized per call recompiled it).
            config = CompileConfig(mode="default")
            config._compile_all_devices = True
            self.cache = transformers.StaticCache(config=self.model.config, max_cache_len=MAX_SEQ_LEN)
            self.options = dict(past_key_values=self.cache, compile_config=config)

    def generate(self, prompt, new):
        ids = self.torch.tensor([prompt])
        with self.torch.no_grad():
            if self.cache is not None:
                self.cache.reset()
            start = time.perf_counter()
            first = self.model.generate(ids, max_new_tokens=1, do_sample=False, **self.options)
            ttft = time.perf_counter() - start
            if new == 1:
                return first[0, len(prompt) :].tolist(), ttft, ttft
            if self.cache is not None:
                self.cache.reset()
            start = time.perf_counter()
            out = self.model.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False, **self.options)
            return out[0, len(prompt) :].tolist(), ttft, time.perf_counter() - start

    def generate_batch(self, prompts, new):
        if self.cache is not None:
            raise RuntimeError("its compiled static cache is made for one sequence")
        ids = self.torch.tensor(prompts)
        options = dict(attention_mask=self.torch.ones_like(ids), do_sample=False)
        with self.torch.no_grad():
            start = time.perf_counter()
            self.model.generate(ids, max_new_tokens=1, **options)
            ttft = time.perf_counter() - start
            start = time.perf_counter()
            self.model.generate(ids, max_new_tokens=new, min_new_tokens=new, **options)
            return ttft, time.perf_counter() - start


def without_extra_buffers(params):
    params.use_extra_bufts = False
    return params


class LlamaCpp:
    def __init__(self, name, precision, threads):
        import llama_cpp
        import llama_cpp.llama_cpp as library

        # On a CPU with AMX, llama-cpp-python 0.3.36 crashes (SIGSEGV in
        # llama_decode) decoding Q8_0 on its extra buffer types (AMX and
        # repacked weights); its Llama takes no argument to leave them out, so
        # the model's default parameters are given without them, for Q4_0 too.
        defaults = library.llama_model_default_params
        if quantized(precision):
            library.llama_model_default_params = lambda: without_extra_buffers(defaults())
        try:
            self.llm = llama_cpp.Llama(
                str(gguf_file(name, precision)),
                n_ctx=MAX_SEQ_LEN,
                n_batch=512,
                n_threads=threads,
                n_threads_batch=threads,
                verbose=False,
            )
        finally:
            library.llama_model_default_params = defaults

    def generate(self, prompt, new):
        self.llm.reset()
        tokens = []
        start = time.perf_counter()
        for token in self.llm.generate(prompt, top_k=1, temp=0.0, reset=True):
            tokens.append(token)
            if len(tokens) == 1:
                ttft = time.perf_counter() - start
            if len(tokens) == new:
                break
        return tokens, ttft, time.perf_counter() - start


class OrtGenai:
    def __init__(self, name, precision, threads):
        import onnxruntime_genai as og

        if stored(precision) not in ("float32", "int4"):
            raise RuntimeError(f"its CPU model builder writes fp32 or symmetric int4 models, no {precision}")
        config = og.Config(str(ort_genai_folder(name, precision)))
        options = {"intra_op_num_threads": threads, "inter_op_num_threads": 1}
        config.overlay(json.dumps({"model": {"decoder": {"session_options": options}}}))
        self.og = og
        self.model = og.Model(config)

    def generate(self, prompt, new):
        params = self.og.GeneratorParams(self.model)
        params.set_search_options(max_length=len(prompt) + new, do_sample=False, min_length=len(prompt) + new)
        generator = self.og.Generator(self.model, params)
        start = time.perf_counter()
        generator.append_tokens(prompt)
        generator.generate_next_token()
        ttft = time.perf_counter() - start
        for _ in range(new - 1):
            generator.generate_next_token()
        elapsed = time.perf_counter() - start
        return list(generator.get_sequence(0))[len(prompt) :][:new], ttft, elapsed

    def generate_batch(self, prompts, new):
        import numpy as np

        length = len(prompts[0]) + new
        params = self.og.GeneratorParams(self.model)
        params.set_search_options(batch_size=len(prompts), max_length=length, min_length=length, do_sample=False)
        generator = self.og.Generator(self.model, params)
        start = time.perf_counter()
        generator.append_tokens(np.array(prompts, dtype=np.int32))
        generator.generate_next_token()
        ttft = time.perf_counter() - start
        for _ in range(new - 1):
            generator.generate_next_token()
        return ttft, time.perf_counter() - start


PATHS = {
    "opgraph": Opgraph,
    "eager": Transformers,
    "compile": lambda name, precision, threads: Transformers(name, precision, threads, compiled=True),
    "llama.cpp": LlamaCpp,
    "ort-genai": OrtGenai,
}
NOT_MEASURED = {
    "openvino-genai": "its LLMPipeline loads optimum-intel's stateful IR export; optimum-intel 2.2 requires "
    "transformers 5.5 and torch 2.14 (CUDA), which the pinned environment cannot take",
}


# ---------------------------------------------------------------- measuring


@dataclass
class Figures:
    prefill: dict = field(default_factory=dict)  # prompt length -> list of tokens/s
    ttft: list = field(default_factory=list)
    decode: list = field(default_factory=list)
    cpu_per_wall: list = field(default_factory=list)
    agree: int | None = None


def prompt_ids(length, sequence=0):
    """``length`` ids of the trained tokenizer (<|endoftext|>, id 0, left out), the same for every path;
    ``sequence`` numbers the prompts of a batch."""
    rng = random.Random(length + 1_000_003 * sequence)
    return [rng.randrange(1, TOKENIZER_VOCAB) for _ in range(length)]


def agreeing(tokens, reference):
    count = 0
    for got, expected in zip(tokens, reference):
        if got != expected:
            break
        count += 1
    return count


def why_not(error):
    """What a path that cannot run a row reports instead: the error's type and first line."""
    return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"


def measure(name, precision, threads, paths, rounds, reference):
    """Figures per path for one row, the paths interleaved round by round."""
    loaded, figures, skipped = {}, {}, {}
    for path in paths:
        try:
            log(f"{name} {precision} {threads}t: loading {path}")
            loaded[path] = PATHS[path](name, precision, threads)
            tokens, _, _ = loaded[path].generate(prompt_ids(PROMPTS[0]), NEW_TOKENS)  # warm-up, compiles
            figures[path] = Figures(agree=agreeing(tokens, reference))
        except Exception as error:  # a path that cannot run this row is reported, not timed
            skipped[path] = why_not(error)
            loaded.pop(path, None)
    for round_ in range(rounds):
        for path, runner in loaded.items():
            log(f"{name} {precision} {threads}t: round {round_ + 1}, {path}")
            for length in PROMPTS:
                _, ttft, _ = runner.generate(prompt_ids(length), 1)
                figures[path].prefill.setdefault(length, []).append(length / ttft)
            cpu = time.process_time()
            _, ttft, elapsed = runner.generate(prompt_ids(PROMPTS[0]), NEW_TOKENS)
            cpu = time.process_time() - cpu
            figures[path].ttft.append(ttft)
            figures[path].decode.append((NEW_TOKENS - 1) / (elapsed - ttft))
            figures[path].cpu_per_wall.append(cpu / elapsed)
    return figures, skipped


def serving(name, precision, threads, paths, batches, rounds):
    """Total decode tokens/s per path and batch size: ``batch`` prompts of PROMPTS[0] tokens decoded together,
    SERVING_TOKENS new tokens each; the paths and sizes interleaved round by round."""
    loaded, totals, skipped = {}, {}, {}
    for path in paths:
        try:
            runner = PATHS[path](name, precision, threads)
            if not hasattr(runner, "generate_batch"):
                raise RuntimeError("its Python API decodes one sequence at a time")
            runner.generate_batch(serving_prompts(batches[0]), 2)  # warm-up
            loaded[path] = runner
        except Exception as error:
            skipped[path] = why_not(error)
    for round_ in range(rounds):
        for batch in batches:
            for path, runner in loaded.items():
                log(f"{name} {precision} {threads}t serving: round {round_ + 1}, {batch} sequences, {path}")
                ttft, elapsed = runner.generate_batch(serving_prompts(batch), SERVING_TOKENS)
                rate = batch * (SERVING_TOKENS - 1) / (elapsed - ttft)
                totals.setdefault(path, {}).setdefault(batch, []).append(rate)
    return totals, skipped


def serving_prompts(batch):
    return [prompt_ids(PROMPTS[0], sequence) for sequence in range(batch)]


def peak_rss(name, precision, threads, path):
    """The peak resident memory (MB) of a process that loads ``path`` and
    generates once, or None where it failed. The child reports its own
    high-water mark (VmHWM): the one wait4 gives also counts the copy of
    this process it was forked from."""
    child = subprocess.run(
        [sys.executable, __file__, "--rss-child", pickle.dumps((name, precision, threads, path)).hex()],
        capture_output=True,
        text=True,
    )
    found = re.search(r"^VmHWM:\s+(\d+) kB", child.stdout, re.MULTILINE)
    return int(found.group(1)) / 1024 if child.returncode == 0 and found else None


def rss_child(argument):
    name, precision, threads, path = pickle.loads(bytes.fromhex(argument))
    PATHS[path](name, precision, threads).generate(prompt_ids(PROMPTS[0]), 16)
    print(Path("/proc/self/status").read_text())


def gguf_weight_bytes(path):
    """The bytes of a GGUF's tensors, each read once per decoded token (the tied embedding as the lm head)."""
    sys.path.insert(0, str(llama_cpp_sources() / "gguf-py"))
    from gguf import GGUFReader

    return sum(int(tensor.n_bytes) for tensor in GGUFReader(path).tensors)


def bytes_per_token(name, precision):
    """opgraph's weights (the tied lm head once; int4 with a float32 scale per 32, and with int4_asym a float32
    offset per 32 too), or for q4_k_m llama.cpp's, and the float32 KV cache at the mean decode position."""
    config = SPECS[name].config
    hidden, layers, ffn = config["hidden_size"], config["num_hidden_layers"], config["intermediate_size"]
    head = hidden // config["num_attention_heads"]
    kv = config["num_key_value_heads"] * head
    if stored(precision) == "q4_k_m":
        weights = gguf_weight_bytes(gguf_file(name, precision))
    else:
        per_layer = hidden * hidden * 2 + hidden * kv * 2 + hidden * ffn * 3
        per_weight = {"float32": 4, "bf16": 2, "int8": 1, "int4": 0.5 + 4 / 32, "int4_asym": 0.5 + 8 / 32}[
            stored(precision)
        ]
        weights = (per_layer * layers + config["vocab_size"] * hidden) * per_weight
    position = PROMPTS[0] + NEW_TOKENS / 2
    return weights + 2 * layers * kv * position * 4


def memory_table(args):
    print(f"\npeak resident memory (MB) of a process that loads the path and generates, {args.threads[0]} thread(s)")
    for name in args.models:
        for precision in args.precisions:
            for path in args.paths:
                rss = peak_rss(name, precision, args.threads[0], path)
                print(f"{name:>14} {precision:>9} {path:>10} " + (f"{rss:>8.0f}" if rss else f"{'-':>8}"), flush=True)


def speed_table(args, notes):
    for name in args.models:
        header = (
            f"\n{name}\n{'precision':>9} {'thr':>3} {'path':>10} {'prefill128':>10} {'prefill512':>10} "
            f"{'ttft ms':>8} {'decode t/s':>10} {'opgraph x':>10} {'bound':>6} {'cpu/wall':>8} {'agree':>6}"
        )
        print(header, flush=True)
        reference, _, _ = Transformers(name, "float32", 1).generate(prompt_ids(PROMPTS[0]), NEW_TOKENS)
        for precision in args.precisions:
            for threads in args.threads:
                figures, skipped = measure(name, precision, threads, args.paths, args.rounds, reference)
                bound = measure_peak(threads).read_gbs * 1e9 / bytes_per_token(name, precision)
                ours = statistics.median(figures["opgraph"].decode) if "opgraph" in figures else None
                for path, figure in figures.items():
                    decode = statistics.median(figure.decode)
                    busy = statistics.median(figure.cpu_per_wall)
                    flag = check_threads(busy, threads)
                    if flag:
                        notes.append(f"{name} {precision} {threads}t {path}: {flag}")
                    print(
                        f"{precision:>9} {threads:>3} {path:>10} "
                        + "".join(f"{statistics.median(figure.prefill[n]):>10.1f} " for n in PROMPTS)
                        + f"{statistics.median(figure.ttft) * 1e3:>8.1f} {decode:>10.2f} "
                        + (f"{ours / decode:>9.2f}x " if ours else f"{'-':>10} ")
                        + f"{decode / bound:>5.0%} {busy:>7.2f}{'!' if flag else ' '} "
                        + f"{figure.agree:>3}/{NEW_TOKENS}",
                        flush=True,
                    )
                for path, reason in skipped.items():
                    notes.append(f"{name} {precision} {threads}t {path}: not run: {reason}")
                print(f"{'':>9} {threads:>3} {'bound':>10} {'':>10} {'':>10} {'':>8} {bound:>10.2f}", flush=True)


def serving_table(args, notes):
    print(
        f"\nserving: total decode tokens/s of N sequences decoded together, prompts of {PROMPTS[0]} tokens, "
        f"{SERVING_TOKENS} new tokens each; x: opgraph's total over the path's"
    )
    print(
        f"{'model':>14} {'precision':>9} {'thr':>3} {'path':>10} "
        + "".join(f"{f'N={n}':>8} " for n in args.batches)
        + "".join(f"{f'x N={n}':>8} " for n in args.batches)
    )
    for name in args.models:
        for precision in args.precisions:
            for threads in args.threads:
                totals, skipped = serving(name, precision, threads, args.paths, args.batches, args.rounds)
                ours = {n: statistics.median(rates) for n, rates in totals.get("opgraph", {}).items()}
                for path, by_batch in totals.items():
                    rates = {n: statistics.median(r) for n, r in by_batch.items()}
                    print(
                        f"{name:>14} {precision:>9} {threads:>3} {path:>10} "
                        + "".join(f"{rates[n]:>8.1f} " for n in args.batches)
                        + "".join(f"{ours[n] / rates[n]:>7.2f}x " if n in ours else f"{'-':>8} " for n in args.batches),
                        flush=True,
                    )
                for path, reason in skipped.items():
                    notes.append(f"{name} {precision} {threads}t {path} serving: not run: {reason}")


TABLES = {"speed": speed_table, "serving": serving_table, "memory": lambda args, notes: memory_table(args)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(SPECS), choices=list(SPECS))
    precisions = ["float32", "bf16", "int8", "int4", "int4_asym", "int8-a8", "int4-a8", "int4_asym-a8", "q4_k_m"]
    parser.add_argument("--precisions", nargs="+", default=precisions[:4], choices=precisions)
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--paths", nargs="+", default=list(PATHS), choices=list(PATHS))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 4, 16], help="sequences decoded together")
    parser.add_argument(
        "--tables",
        nargs="+",
        default=list(TABLES),
        choices=list(TABLES),
        help="speed: prefill and decode; serving: batches; memory: peak RSS, at the first thread count",
    )
    parser.add_argument("--rss-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_child:
        return rss_child(args.rss_child)
    if "opgraph" not in args.paths:
        parser.error("--paths: the table is relative to opgraph; include it")

    print(
        f"CPU: {cpu_description()}, {os.cpu_count()} cores; "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}"
    )
    print(f"prompt {' and '.join(map(str, PROMPTS))} tokens; decode {NEW_TOKENS} new tokens after {PROMPTS[0]}")
    for path, reason in NOT_MEASURED.items():
        print(f"{path}: not measured: {reason}")
    notes = []
    for table in args.tables:
        TABLES[table](args, notes)
    if notes:
        print("\nnotes:\n  " + "\n  ".join(notes))


if __name__ == "__main__":
    main()
