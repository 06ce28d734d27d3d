"""opgraph.llm.Generator on a small stateful model whose next token NumPy
can tell: it keeps each token's value in a cache (a graph state written at
cache_position) and predicts the token nearest the cache's sum. The loop,
the cache across runs, chunked prompts, sampling, stops and errors are
checked against that rule; real decoders are checked in the export tests."""

import json
import subprocess
import sys

import numpy as np
import pytest
from tokenizers import Tokenizer as HfTokenizer
from tokenizers import decoders, models, pre_tokenizers, trainers

import opgraph
from opgraph.llm import Generator

MAX_SEQ_LEN = 12


def sum_model(vocab, max_seq_len=MAX_SEQ_LEN, batched=False):
    """With ``batched``, B sequences at once: the cache is [B, max_seq_len], and the attention mask leaves
    each row's padding out of its sum."""
    g = opgraph.Graph("sum_lm")
    batch = "B" if batched else 1
    g.add_input("input_ids", "int64", [batch, "T"])
    g.add_input("cache_position", "int64", ["T"])
    if batched:
        g.add_input("attention_mask", "int64", [batch, max_seq_len])
    g.add_constant("values", "float32", [vocab, 1])
    g.add_constant("grid", "float32", [vocab])
    g.add_state("cache", "float32", [batch, max_seq_len], update="cache_next")
    g.add_node("aten::embedding", ["values", "input_ids"], ["embedded"])
    g.add_node("aten::squeeze.dim", ["embedded"], ["tokens"], dim=-1)
    g.add_node("aten::index_put", ["cache", [None, "cache_position"], "tokens"], ["cache_next"])
    summed = "cache_next"
    if batched:
        g.add_node("aten::_to_copy", ["attention_mask"], ["mask"], dtype="float32")
        g.add_node("aten::mul.Tensor", ["cache_next", "mask"], ["kept"])
        summed = "kept"
    g.add_node("aten::sum.dim_IntList", [summed], ["total"], dim=[1], keepdim=True)
    g.add_node("aten::sub.Tensor", ["grid", "total"], ["distance"])
    g.add_node("aten::mul.Tensor", ["distance", "distance"], ["square"])
    g.add_node("aten::neg", ["square"], ["logits"])
    g.add_output("logits")
    weights = {
        "values": np.arange(vocab, dtype=np.float32).reshape(vocab, 1),
        "grid": np.arange(vocab, dtype=np.float32),
    }
    return g, weights


def greedy(prompt, vocab, steps, eos=()):
    """What the model generates greedily: the token nearest the sum so far."""
    tokens, total = [], sum(prompt)
    for _ in range(steps):
        token = min(total, vocab - 1)
        if token in eos:
            break
        tokens.append(token)
        total += token
    return tokens


def write_folder(folder, vocab, eos=None, tokenizer=None, batched=False):
    folder.mkdir(exist_ok=True)
    graph, weights = sum_model(vocab, batched=batched)
    opgraph.save_opg(folder / "model.opg", graph, weights)
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": eos, "max_seq_len": MAX_SEQ_LEN}))
    if tokenizer is not None:
        tokenizer.save(str(folder / "tokenizer.json"))
    return folder


@pytest.fixture(scope="module")
def byte_tokenizer():
    tokenizer = HfTokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=270, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tokenizer.train_from_iterator(["the cache holds the sum of the tokens"] * 4, trainer)
    return tokenizer


def test_greedy_tokens_follow_the_cache_across_runs(tmp_path):
    generator = Generator(write_folder(tmp_path / "m", vocab=64))
    out = generator.generate([1, 2], max_new_tokens=5)
    assert out == greedy([1, 2], 64, 5) == [3, 6, 12, 24, 48]
    assert out.stop_reason == "max_new_tokens"
    # A prompt longer than a chunk runs in several runs at their offsets.
    chunked = Generator(tmp_path / "m", prefill_chunk=2)
    assert chunked.generate([1, 1, 1, 1, 1], max_new_tokens=3) == greedy([1] * 5, 64, 3)
    # The last two chunks share their tokens: 9 tokens run as 4, 3 and 2.
    chunked = Generator(tmp_path / "m", prefill_chunk=4)
    assert chunked.generate([1, 2] * 4 + [1], max_new_tokens=3) == greedy([1, 2] * 4 + [1], 64, 3)


def test_stops_at_eos_and_at_the_cache_length(tmp_path):
    out = Generator(write_folder(tmp_path / "m", vocab=64, eos=[24])).generate([1, 2], max_new_tokens=20)
    assert (out, out.stop_reason) == ([3, 6, 12], "eos")
    out = Generator(write_folder(tmp_path / "long", vocab=64)).generate([0, 1], max_new_tokens=100)
    # The last token comes from the run at the cache's last position.
    assert (len(out), out.stop_reason) == (MAX_SEQ_LEN - 2 + 1, "max_seq_len")
    assert out == greedy([0, 1], 64, MAX_SEQ_LEN - 1)


def test_sampling_is_reproducible_with_a_seed_and_batches_run_each_prompt_alone(tmp_path):
    generator = Generator(write_folder(tmp_path / "m", vocab=64))
    options = dict(max_new_tokens=6, temperature=30.0, top_k=20, top_p=0.9, seed=7)
    first = generator.generate([1, 2], **options)
    assert generator.generate([1, 2], **options) == first
    assert generator.generate([[1, 2], [5]], max_new_tokens=4) == [greedy([1, 2], 64, 4), greedy([5], 64, 4)]


def test_a_batch_decodes_together_each_prompt_as_if_alone(tmp_path):
    generator = Generator(write_folder(tmp_path / "m", vocab=64, eos=[24], batched=True))
    assert generator.batches
    # Different lengths: the shorter prompts are left-padded, the mask keeps their padding out of the sums.
    prompts = [[1, 2], [5], [3, 1, 1, 1], [0, 1]]
    outs = generator.generate(prompts, max_new_tokens=5)
    assert outs == [greedy(p, 64, 5, eos=[24]) for p in prompts]
    assert [out.stop_reason for out in outs] == ["eos", "max_new_tokens", "eos", "max_new_tokens"]
    # Sampling draws as each prompt alone with the seed does.
    options = dict(max_new_tokens=6, temperature=30.0, top_k=20, seed=3)
    assert generator.generate(prompts, **options) == [generator.generate(p, **options) for p in prompts]
    # The batch stops where its longest prompt reaches the cache's end.
    outs = generator.generate([[0] * 10, [0]], max_new_tokens=10)
    assert [(len(out), out.stop_reason) for out in outs] == [(3, "max_seq_len"), (3, "max_seq_len")]
    with pytest.raises(opgraph.Error, match="prompt 1 has 13 tokens, more than the model's max_seq_len of 12"):
        generator.generate([[1], [1] * 13])


def test_text_prompts_and_streams_decode_with_the_folders_tokenizer(tmp_path, byte_tokenizer):
    vocab = byte_tokenizer.get_vocab_size()
    generator = Generator(write_folder(tmp_path / "m", vocab=vocab, tokenizer=byte_tokenizer))
    prompt = "the sum"
    ids = byte_tokenizer.encode(prompt).ids
    want = greedy(ids, vocab, 4)
    text = generator.generate(prompt, max_new_tokens=4)
    assert text.tokens == want
    assert text == byte_tokenizer.decode(want)
    assert "".join(generator.stream(prompt, max_new_tokens=4)) == text


def test_bad_input_is_an_error_naming_what_was_expected(tmp_path):
    folder = write_folder(tmp_path / "m", vocab=64)
    generator = Generator(folder)
    with pytest.raises(opgraph.Error, match="the prompt has 13 tokens, more than the model's max_seq_len of 12"):
        generator.generate([1] * 13)
    with pytest.raises(opgraph.Error, match=r"the prompt: token 1 is 64, outside the vocabulary \[0, 64\)"):
        generator.generate([1, 64])
    with pytest.raises(opgraph.Error, match=r"prompt 1: token 0 is -1, outside the vocabulary \[0, 64\)"):
        generator.generate([[1], [-1]])
    with pytest.raises(opgraph.Error, match=r"top_p: expected a value in \(0, 1\], got 1.5"):
        generator.generate([1], top_p=1.5)
    with pytest.raises(opgraph.Error, match="temperature: expected 0 .greedy. or more, got -1"):
        generator.generate([1], temperature=-1)
    with pytest.raises(opgraph.Error, match="a text prompt needs a tokenizer"):
        generator.generate("hello")
    stateless = tmp_path / "stateless"
    stateless.mkdir()
    g = opgraph.Graph("g")
    g.add_input("input_ids", "int64", [1, "T"])
    g.add_node("aten::neg", ["input_ids"], ["y"])
    g.add_output("y")
    opgraph.save_opg(stateless / "model.opg", g)
    with pytest.raises(opgraph.Error, match="has no KV cache"):
        Generator(stateless)
    with pytest.raises(opgraph.Error, match="has no model.opg"):
        Generator(tmp_path)
    # The C++ batch call, given no prompt at all (a Python [] is an empty id prompt).
    with pytest.raises(opgraph.Error, match="no prompts given"):
        generator._generator.generate([], 4, 0.0, None, None, None, [], None, None)


def graph_taking(inputs, vocab=64):
    """A graph with a cache and logits, taking ``inputs`` ((name, dtype, shape) each), as a Generator reads it."""
    g = opgraph.Graph("g")
    for name, dtype, shape in inputs:
        g.add_input(name, dtype, shape)
    g.add_constant("grid", "float32", [vocab])
    g.add_state("cache", "float32", [1, MAX_SEQ_LEN], update="cache_next")
    g.add_node("aten::neg", ["cache"], ["cache_next"])
    g.add_node("aten::neg", ["grid"], ["logits"])
    g.add_output("logits")
    return g, {"grid": np.zeros(vocab, np.float32)}


IDS, POSITIONS = ("input_ids", "int64", [1, "T"]), ("cache_position", "int64", ["T"])


@pytest.mark.parametrize(
    "inputs, message",
    [
        ([IDS], r"\(cache_position is missing\)"),
        ([("input_ids", "float32", [1, "T"]), POSITIONS], r"\(input_ids should be int64 with 2 dimensions\)"),
        ([IDS, POSITIONS, ("scale", "float32", [1])], r"\(it takes inputs a Generator does not give\)"),
        (
            [("input_ids", "int64", ["B", "T"]), POSITIONS, ("attention_mask", "int64", ["B", 5])],
            r"\(attention_mask's second dimension should be max_seq_len, 12\)",
        ),
    ],
)
def test_a_graph_with_other_inputs_is_refused_naming_them(tmp_path, inputs, message):
    graph, weights = graph_taking(inputs)
    opgraph.save_opg(tmp_path / "model.opg", graph, weights)
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": None, "max_seq_len": MAX_SEQ_LEN}))
    with pytest.raises(
        opgraph.Error, match="a Generator runs a graph with the inputs input_ids: int64.B, T.*" + message
    ):
        Generator(tmp_path)


def test_the_command_line_streams_the_same_tokens(tmp_path, opgraph_cli, byte_tokenizer):
    def generate(folder, *args):
        command = [str(opgraph_cli), "generate", str(folder), *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=60)

    result = generate(write_folder(tmp_path / "m", vocab=64), "--prompt-ids", "1,2", "-n", "5")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(t) for t in greedy([1, 2], 64, 5)]
    assert "stopped: max_new_tokens; prompt: 2 tokens" in result.stderr
    folder = write_folder(tmp_path / "text", vocab=byte_tokenizer.get_vocab_size(), tokenizer=byte_tokenizer)
    result = generate(folder, "--prompt", "the sum", "-n", "4")
    assert result.returncode == 0, result.stderr
    assert result.stdout == Generator(folder).generate("the sum", max_new_tokens=4) + "\n"
    result = generate(folder)
    assert result.returncode == 2
    assert "give the prompt as --prompt TEXT or as --prompt-ids 1,2,3" in result.stderr


def test_generating_needs_no_torch():
    # torch would add about 200 MB to a process that only generates.
    script = "import sys, opgraph.llm; assert 'torch' not in sys.modules, 'opgraph.llm imported torch'"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
