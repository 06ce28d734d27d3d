"""One training step (forward, loss, backward, Adam update) of the digits CNN
in opgraph.layers vs the same model in torch eager, in the same process, at
the same thread count, in interleaved rounds (bench/timing.py: each figure
the median step over all rounds). Ratios above 1 mean opgraph is faster.
"""

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "digits"))
from model import opgraph_cnn, torch_cnn  # noqa: E402
from timing import interleaved  # noqa: E402

import opgraph  # noqa: E402
from opgraph import layers  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of timed steps per side, about")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 128])
    args = parser.parse_args()

    print(f"{'threads':>7} {'batch':>5} {'opgraph ms':>10} {'torch ms':>9} {'torch/opgraph':>13}")
    for threads in (1, 2):
        opgraph.set_num_threads(threads)
        torch.set_num_threads(threads)
        for batch in args.batch_sizes:
            rng = np.random.default_rng(0)
            x = rng.random((batch, 1, 8, 8), dtype=np.float32)
            y = rng.integers(0, 10, batch)

            model = opgraph_cnn()
            model.compile(optimizer=layers.Adam(1e-3))

            torch_model = torch_cnn()
            optimizer = torch.optim.Adam(torch_model.parameters(), lr=1e-3)
            tx, ty = torch.from_numpy(x), torch.from_numpy(y)

            def torch_step():
                optimizer.zero_grad()
                F.cross_entropy(torch_model(tx), ty).backward()
                optimizer.step()

            ours, theirs = (
                t.seconds for t in interleaved([lambda: model.train_on_batch(x, y), torch_step], budget=args.budget)
            )
            print(f"{threads:>7} {batch:>5} {ours * 1e3:>10.3f} {theirs * 1e3:>9.3f} {theirs / ours:>12.2f}x")


if __name__ == "__main__":
    main()
