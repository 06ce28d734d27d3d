"""The digits CNN, in opgraph.layers and, for comparison, in torch."""

import numpy as np
from torch import nn

from opgraph import layers


def opgraph_cnn(seed=0, dropout=0.25):
    return layers.Sequential(
        [
            layers.Conv2D(16, 3, padding="same", activation="relu"),
            layers.MaxPool2D(2),
            layers.Conv2D(32, 3, padding="same", activation="relu"),
            layers.MaxPool2D(2),
            layers.Flatten(),
            layers.Dense(64, activation="relu"),
            layers.Dropout(dropout),
            layers.Dense(10, activation=None, initializer="xavier"),
        ],
        seed=seed,
    )


def torch_cnn(dropout=0.25):
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 2 * 2, 64),
        nn.ReLU(),
        nn.Dropout(dropout),
        nn.Linear(64, 10),
    )


def load_digits_split(seed=0):
    """scikit-learn's bundled 8x8 digits (1797 images, no download) as float32
    NCHW in [0, 1], split 80/20 with every class in proportion."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]
    return train_test_split(x, digits.target.astype(np.int64), test_size=0.2, stratify=digits.target, random_state=seed)
