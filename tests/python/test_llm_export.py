"""opgraph.llm.export and Generator on every decoder family of the zoo
(small published shapes, random weights): the exported graph keeps its KV
cache as state, and greedy generation gives transformers' tokens, from
Python and from the command line."""

import json
import subprocess

import pytest
import torch
import transformers as T
from zoo.models import BLOOM_SMALL, GPT2_SMALL, GPT_NEOX_SMALL, OPT_SMALL
from zoo.models import DECODER as ZOO_DECODER

import opgraph
from opgraph.llm import Generator, export

# The zoo's decoder shapes, with positions for the cache's length.
DECODER = dict(ZOO_DECODER, max_position_embeddings=128)
FAMILIES = {
    "llama": (T.LlamaForCausalLM, T.LlamaConfig, DECODER),
    "mistral": (T.MistralForCausalLM, T.MistralConfig, DECODER),
    "qwen2": (T.Qwen2ForCausalLM, T.Qwen2Config, DECODER),
    "qwen3": (T.Qwen3ForCausalLM, T.Qwen3Config, dict(DECODER, head_dim=8)),
    "gemma": (T.GemmaForCausalLM, T.GemmaConfig, dict(DECODER, head_dim=8)),
    "gemma2": (T.Gemma2ForCausalLM, T.Gemma2Config, dict(DECODER, head_dim=8, sliding_window=8)),
    "phi": (T.PhiForCausalLM, T.PhiConfig, DECODER),
    "phi3": (T.Phi3ForCausalLM, T.Phi3Config, dict(DECODER, pad_token_id=0)),
    "gpt2": (T.GPT2LMHeadModel, T.GPT2Config, GPT2_SMALL),
    "gpt_neox": (T.GPTNeoXForCausalLM, T.GPTNeoXConfig, GPT_NEOX_SMALL),
    "bloom": (T.BloomForCausalLM, T.BloomConfig, BLOOM_SMALL),
    "opt": (T.OPTForCausalLM, T.OPTConfig, OPT_SMALL),
}
MAX_SEQ_LEN = 48
PROMPT = [5, 17, 42, 99, 3, 64]
SHORT_PROMPT = [7, 21]
NEW_TOKENS = 32


def small_model(family):
    model_class, config_class, config = FAMILIES[family]
    torch.manual_seed(0)
    model = model_class(config_class(**config)).eval()
    # Generation runs its length here: no eos, as a random model may make one anywhere.
    model.generation_config.eos_token_id = None
    model.config.eos_token_id = None
    return model


@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_generation_matches_transformers(family, tmp_path):
    model = small_model(family)
    folder = export(model, tmp_path / family, max_seq_len=MAX_SEQ_LEN)
    assert json.loads((folder / "generation_config.json").read_text())["max_seq_len"] == MAX_SEQ_LEN
    session = opgraph.Session(folder / "model.opg")
    assert session.states, "the KV cache is state"
    with torch.no_grad():
        want = [
            model.generate(
                torch.tensor([prompt]), max_new_tokens=NEW_TOKENS, do_sample=False, min_new_tokens=NEW_TOKENS
            )[0, len(prompt) :].tolist()
            for prompt in (PROMPT, SHORT_PROMPT)
        ]
    generator = Generator(folder, prefill_chunk=4)
    got = generator.generate(PROMPT, max_new_tokens=NEW_TOKENS)
    assert got == want[0]
    assert got.stop_reason == "max_new_tokens"
    # Together, in one run per token: the short prompt left-padded, its first prompt chunk all padding.
    assert generator.batches
    assert generator.generate([PROMPT, SHORT_PROMPT], max_new_tokens=NEW_TOKENS) == want


def test_the_command_line_generates_the_same_tokens(tmp_path, opgraph_cli):
    folder = export(small_model("llama"), tmp_path / "llama", max_seq_len=MAX_SEQ_LEN)
    want = Generator(folder).generate(PROMPT, max_new_tokens=8)
    result = subprocess.run(
        [str(opgraph_cli), "generate", str(folder), "--prompt-ids", ",".join(map(str, PROMPT)), "-n", "8"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert [int(t) for t in result.stdout.split()] == want


def test_export_refuses_what_it_cannot_write(tmp_path):
    with pytest.raises(opgraph.Error, match="max_seq_len: expected an int of 2 or more, got 0"):
        export(small_model("llama"), tmp_path, max_seq_len=0)
    with pytest.raises(opgraph.Error, match="expected a transformers causal LM, got Linear"):
        export(torch.nn.Linear(2, 2), tmp_path, max_seq_len=8)
