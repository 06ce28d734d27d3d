"""Trains a small CNN on scikit-learn's digits with opgraph.layers, then
writes the training curve (PNG) and the weights (safetensors).

    python examples/digits/train.py [--epochs 30] [--out out/digits] [--device cuda]

With --device cuda the data are CuPy arrays, so the weights are made on the
GPU and every op runs on its CUDA kernel.
"""

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: no display needed
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model import load_digits_split, opgraph_cnn  # noqa: E402

from opgraph import layers  # noqa: E402

TARGET_ACCURACY = 0.97


def plot(history, path):
    figure, (loss_axis, accuracy_axis) = plt.subplots(1, 2, figsize=(10, 4))
    epochs = range(1, len(history["loss"]) + 1)
    for axis, metric in [(loss_axis, "loss"), (accuracy_axis, "accuracy")]:
        axis.plot(epochs, history[metric], label="train")
        axis.plot(epochs, history["val_" + metric], label="test")
        axis.set_xlabel("epoch")
        axis.set_ylabel(metric)
        axis.grid(alpha=0.3)
        axis.legend()
    figure.suptitle("opgraph.layers CNN on scikit-learn digits")
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--out", type=Path, default=Path("out/digits"))
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = parser.parse_args()

    x_train, x_test, y_train, y_test = load_digits_split()
    if args.device == "cuda":
        import cupy

        x_train, x_test, y_train, y_test = map(cupy.asarray, (x_train, x_test, y_train, y_test))
    print(f"digits: {len(x_train)} training and {len(x_test)} test images of {x_train.shape[1:]}, on {args.device}")
    model = opgraph_cnn()
    model.compile(optimizer=layers.Adam(lr=2e-3), loss=layers.SoftmaxCrossEntropy())
    history = model.fit(
        x_train, y_train, epochs=args.epochs, batch_size=args.batch_size, validation_data=(x_test, y_test)
    )
    loss, accuracy = model.evaluate(x_test, y_test)

    args.out.mkdir(parents=True, exist_ok=True)
    plot(history.history, args.out / "training_curve.png")
    model.save_weights(args.out / "weights.safetensors")
    print(f"test loss {loss:.4f}, test accuracy {accuracy:.2%} (target {TARGET_ACCURACY:.0%})")
    print(f"wrote {args.out / 'training_curve.png'} and {args.out / 'weights.safetensors'}")
    if accuracy < TARGET_ACCURACY:
        sys.exit(f"test accuracy {accuracy:.2%} is below the target {TARGET_ACCURACY:.0%}")


if __name__ == "__main__":
    main()
