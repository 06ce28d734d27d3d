"""What int8 and int4 weights cost in accuracy, on a causal LM that means
something: a small Llama trained here, in minutes, on the Python standard
library's sources (one token per byte), exported with opgraph.llm.export and
run by opgraph in float32 and with its weights quantized (Session's
`quantize`, Generator's `weights`): int8 with a scale per output channel and
per group of 32 inputs, int4 (as llama.cpp's Q4_0) in groups of 32, 64 and
128, both also with zero points (int8_asym, int4_asym); and with int8
activations too (`activations="int8"`: per block of 32
values for a decoding step, as llama.cpp's Q8_0).

For each it prints:
- perplexity per byte on held-out modules (every tenth file of the standard
  library, none of which the model trained on), from one opgraph run per
  byte on the exported graph and its KV cache;
- the agreement of greedy tokens with float32's over 512 steps from prompts
  taken from held-out modules, two ways:
  - free-running: the share of steps whose token is float32's, each model
    generating on its own tokens (once a sequence takes another token it
    goes its own way), and the steps before the first miss;
  - teacher-forced: the share of float32's 512 greedy steps at which the
    quantized model, fed float32's tokens so far, picks float32's next
    token, so that a miss costs one step and not every step after it.

The trained model is kept under build/bench-quantized and reused.

    python bench/quantized_accuracy.py [--steps 500] [--threads 2]
"""

import argparse
import math
import os
import sysconfig
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "bench-quantized"
CONFIG = dict(
    vocab_size=256,
    hidden_size=256,
    intermediate_size=512,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=4,
    max_position_embeddings=1024,
    tie_word_embeddings=True,
)
CONTEXT, BATCH = 256, 16
EVAL_WINDOWS, EVAL_WINDOW = 8, 256
PROMPTS, PROMPT_BYTES, GREEDY_STEPS = 4, 64, 512
# (name, weights, group size, activations)
VARIANTS = [
    ("float32", None, None, None),
    ("int8, per channel", "int8", 0, None),
    ("int8, groups of 32", "int8", 32, None),
    ("int4, groups of 32", "int4", 32, None),
    ("int4, groups of 64", "int4", 64, None),
    ("int4, groups of 128", "int4", 128, None),
    ("int8_asym, per channel", "int8_asym", 0, None),
    ("int4_asym, groups of 32", "int4_asym", 32, None),
    ("int4_asym, groups of 128", "int4_asym", 128, None),
    ("int8 + int8 act.", "int8", 0, "int8"),
    ("int4/32 + int8 act.", "int4", 32, "int8"),
]


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def corpus():
    """The standard library's .py files as bytes: (training text, held-out files)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.rglob("*.py") if "test" not in p.parts and "site-packages" not in p.parts)
    held_out = files[::10]
    training = b"\n".join(p.read_bytes() for p in files if p not in held_out)
    return np.frombuffer(training, dtype=np.uint8), [p.read_bytes() for p in held_out if p.stat().st_size > 4096]


def trained_model(steps, threads):
    import torch
    import transformers

    folder = WORK / f"llama-{steps}"
    if (folder / "config.json").exists():
        return transformers.LlamaForCausalLM.from_pretrained(folder).eval()
    torch.manual_seed(0)
    torch.set_num_threads(threads)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**CONFIG))
    text, _ = corpus()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-3, total_steps=steps, pct_start=0.1)
    generator = np.random.default_rng(0)
    for step in range(steps):
        starts = generator.integers(0, len(text) - CONTEXT - 1, BATCH)
        batch = torch.from_numpy(np.stack([text[s : s + CONTEXT + 1] for s in starts]).astype(np.int64))
        loss = model(batch, labels=batch).loss  # transformers shifts the labels
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        if step % 50 == 0 or step == steps - 1:
            log(f"training: step {step}, loss {loss.item():.3f} ({math.exp(loss.item()):.2f} per byte)")
    model.generation_config.eos_token_id = None  # bytes: generate exactly the steps asked for
    model.save_pretrained(folder)
    return model.eval()


def exported(model, steps):
    from opgraph.llm import export

    folder = WORK / f"opgraph-{steps}"
    if not (folder / "model.opg").exists():
        model.generation_config.eos_token_id = None
        export(model, folder, max_seq_len=PROMPT_BYTES + GREEDY_STEPS)
    return folder


def logits_along(session, sequence):
    """The logits after each token of `sequence` but the last, one opgraph run per token on the graph's KV cache."""
    inputs = {value.name: value for value in session.inputs}
    batch, capacity = inputs["attention_mask"].shape
    state = session.new_state(**{batch: 1})
    mask = np.zeros((1, capacity), np.int64)
    for position in range(len(sequence) - 1):
        mask[0, position] = 1
        feed = {
            "input_ids": np.array([[sequence[position]]], np.int64),
            "cache_position": np.array([position], np.int64),
            "position_ids": np.array([[position]], np.int64),
            "attention_mask": mask,
        }
        yield next(iter(session.run(feed, state=state).values()))[0].astype(np.float64)


def perplexity(session, windows):
    """Per byte, over windows of held-out text."""
    total, count = 0.0, 0
    for window in windows:
        for position, row in enumerate(logits_along(session, window)):
            total += np.log(np.exp(row - row.max()).sum()) + row.max() - row[window[position + 1]]
            count += 1
    return math.exp(total / count)


def forced_agreement(session, prompts, reference_tokens):
    """The share of the reference's greedy steps whose token the session picks, fed the reference's tokens so far."""
    same = 0
    for prompt, tokens in zip(prompts, reference_tokens):
        sequence = list(prompt) + list(tokens)
        rows = list(logits_along(session, sequence))[len(prompt) - 1 :]
        same += sum(int(np.argmax(row)) == token for row, token in zip(rows, tokens))
    return same / sum(len(tokens) for tokens in reference_tokens)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500, help="training steps of 16 x 256 bytes")
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count()))
    args = parser.parse_args()
    import opgraph
    from opgraph.llm import Generator

    model = trained_model(args.steps, args.threads)
    folder = exported(model, args.steps)
    _, held_out = corpus()
    rng = np.random.default_rng(1)
    chosen = [held_out[i] for i in rng.choice(len(held_out), EVAL_WINDOWS + PROMPTS, replace=False)]
    windows = [list(text[:EVAL_WINDOW]) for text in chosen[:EVAL_WINDOWS]]
    prompts = [list(text[:PROMPT_BYTES]) for text in chosen[EVAL_WINDOWS:]]
    print(
        f"\na Llama of {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, {args.steps} steps of "
        f"{BATCH} x {CONTEXT} bytes of the standard library; perplexity per byte over {EVAL_WINDOWS} held-out "
        f"windows of {EVAL_WINDOW} bytes; greedy agreement with float32 over {GREEDY_STEPS} steps from "
        f"{PROMPTS} held-out prompts of {PROMPT_BYTES} bytes; {args.threads} threads"
    )
    print(
        f"{'weights':>22} {'perplexity':>10} {'vs float32':>10} {'free-running':>12} {'earliest miss':>13} "
        f"{'teacher-forced':>14}"
    )
    reference = None
    for name, quantize, group_size, activations in VARIANTS:
        quantization = dict(group_size=group_size, activations=activations)
        session = opgraph.Session(folder / "model.opg", threads=args.threads, quantize=quantize, **quantization)
        log(f"{name}: perplexity")
        ppl = perplexity(session, windows)
        log(f"{name}: greedy tokens")
        generator = Generator(folder, threads=args.threads, weights=quantize, **quantization)
        tokens = [list(generator.generate(p, max_new_tokens=GREEDY_STEPS)) for p in prompts]
        if reference is None:
            reference = (ppl, tokens)
        same = sum(a == b for got, want in zip(tokens, reference[1]) for a, b in zip(got, want))
        first = [
            next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), GREEDY_STEPS)
            for got, want in zip(tokens, reference[1])
        ]
        log(f"{name}: teacher-forced greedy tokens")
        forced = forced_agreement(session, prompts, reference[1])
        print(
            f"{name:>22} {ppl:>10.4f} {ppl - reference[0]:>+10.4f} {same / (PROMPTS * GREEDY_STEPS):>11.1%} "
            f"{min(first):>13} {forced:>13.1%}",
            flush=True,
        )


if __name__ == "__main__":
    main()
