"""What int8 and int4 weights, and int8 activations, cost a classifier: an
MLP trained here on scikit-learn's handwritten digits (8 x 8 images, 1,437
to train on, 360 held out), extracted with opgraph.ir and run by opgraph in
float32, with its weights quantized (Session's `quantize`: int8 per channel
and in groups of 32, int4 in groups of 32) and with its activations
quantized too (`activations="int8"`). Prints each one's accuracy on the
held-out images. tests/python/test_quantized_weights.py holds the quantized
ones to float32's.

    python bench/quantized_classifier.py [--threads 2]
"""

import argparse

import numpy as np

VARIANTS = {
    "float32": {},
    "int8, per channel": {"quantize": "int8"},
    "int8, groups of 32": {"quantize": "int8", "group_size": 32},
    "int4, groups of 32": {"quantize": "int4", "group_size": 32},
    "int8 weights and activations": {"quantize": "int8", "activations": "int8"},
}


def trained_classifier():
    """(the model, the held-out images, their labels): 64 -> 256 -> 128 -> 10, trained full-batch."""
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    x_train, x_test, y_train, y_test = train_test_split(x, digits.target, test_size=360, random_state=0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    inputs, labels = torch.from_numpy(x_train), torch.from_numpy(y_train)
    for _ in range(150):
        loss = torch.nn.functional.cross_entropy(model(inputs), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval(), x_test, y_test


def accuracies(threads=2):
    """variant -> its accuracy on the held-out digits."""
    import torch

    import opgraph
    from opgraph.ir import extract_ir

    model, x_test, y_test = trained_classifier()
    rows = torch.export.Dim("rows", min=1, max=4096)
    ir = extract_ir(model, (torch.from_numpy(x_test[:2]),), dynamic_shapes={"input": {0: rows}})
    result = {}
    for name, options in VARIANTS.items():
        session = opgraph.Session(ir.graph, weights=ir.weights, threads=threads, **options)
        result[name] = float((session.run(x_test)[0].argmax(axis=1) == y_test).mean())
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    print(f"{'weights':>30} {'accuracy':>9}")
    for name, accuracy in accuracies(args.threads).items():
        print(f"{name:>30} {accuracy:>9.2%}")


if __name__ == "__main__":
    main()
