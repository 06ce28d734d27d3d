"""A stack of layers trained end to end: ``compile``, ``fit``, ``evaluate``,
``predict``, and weights saved as safetensors."""

import numpy as np

from .._arrays import as_array, namespace, namespace_for, to_namespace
from .._C import Error
from .optimizers import SGD, Adam, Optimizer
from .progress import ProgressBar
from .softmax_ce import SoftmaxCrossEntropy

_OPTIMIZERS = {"adam": Adam, "sgd": SGD}
_LOSSES = {"softmax_cross_entropy": SoftmaxCrossEntropy}


def _lookup(value, table, kind, base):
    if isinstance(value, base):
        return value
    if value not in table:
        raise Error(f"Sequential.compile: {kind}: expected one of {', '.join(table)} or an instance, got {value!r}")
    return table[value]()


class History:
    """Per-epoch metrics of ``fit``: ``history.history["loss"]`` and so on."""

    def __init__(self):
        self.history = {"loss": [], "accuracy": []}

    def append(self, **metrics):
        for name, value in metrics.items():
            self.history.setdefault(name, []).append(value)


class Sequential:
    def __init__(self, layers=(), name="sequential", seed=None):
        self.name = name
        self.layers = []
        self.rng = np.random.default_rng(seed)
        self.optimizer = None
        self.loss = None
        for layer in layers:
            self.add(layer)

    def add(self, layer):
        # Each layer draws its initial weights from its own stream of the model's seed.
        layer.rng = np.random.default_rng(self.rng.integers(2**63))
        self.layers.append(layer)

    @property
    def built(self):
        return bool(self.layers) and all(layer.built for layer in self.layers)

    def build(self, input_shape, device="cpu"):
        """Builds every layer, its weights on ``device`` ("cpu" or "cuda"), by
        running one zero sample of ``input_shape`` (batch first) through."""
        xp = namespace_for(device)
        self.forward(xp.zeros((1, *input_shape[1:]), dtype=self.layers[0].dtype), training=False)

    def compile(self, optimizer="adam", loss="softmax_cross_entropy"):
        self.optimizer = _lookup(optimizer, _OPTIMIZERS, "optimizer", Optimizer)
        self.loss = _lookup(loss, _LOSSES, "loss", SoftmaxCrossEntropy)

    def forward(self, x, training=False):
        if not self.layers:
            raise Error(f"{self.name}: the model has no layers")
        x = as_array(x)
        for layer in self.layers:
            layer.training = training
            x = layer(x)
        return x

    __call__ = forward

    def backward(self, grad):
        for layer in reversed(self.layers):
            grad = layer.backward(grad)
        return grad

    def parameters(self):
        """Every weight, keyed ``"<index>.<layer name>.<weight>"``."""
        return {
            f"{i}.{layer.name}.{name}": value
            for i, layer in enumerate(self.layers)
            for name, value in layer.parameters().items()
        }

    def gradients(self):
        return {
            f"{i}.{layer.name}.{name}": value
            for i, layer in enumerate(self.layers)
            for name, value in layer.gradients().items()
        }

    def train_on_batch(self, x, y):
        """One optimizer step on a batch; returns (loss, accuracy) before the step."""
        if self.optimizer is None:
            raise Error(f"{self.name}: compile() the model before training it")
        x = as_array(x)
        y = to_namespace(y, namespace(x))
        logits = self.forward(x, training=True)
        loss = self.loss(logits, y)
        self.backward(self.loss.backward())
        self.optimizer.step(self.parameters(), self.gradients())
        return loss, _accuracy(logits, y)

    def fit(self, x, y, epochs=1, batch_size=32, validation_data=None, shuffle=True, verbose=True):
        x, y = _checked_pair(self.name, "fit", x, y)
        history = History()
        batches = -(-len(x) // batch_size)
        for epoch in range(epochs):
            order = self.rng.permutation(len(x)) if shuffle else np.arange(len(x))
            order = namespace(x).asarray(order)
            bar = ProgressBar(batches) if verbose else None
            if verbose:
                print(f"Epoch {epoch + 1}/{epochs}")
            total_loss = total_correct = 0.0
            for b in range(batches):
                rows = order[b * batch_size : (b + 1) * batch_size]
                loss, accuracy = self.train_on_batch(x[rows], y[rows])
                total_loss += loss * len(rows)
                total_correct += accuracy * len(rows)
                seen = min((b + 1) * batch_size, len(x))
                metrics = {"loss": total_loss / seen, "accuracy": total_correct / seen}
                if validation_data is not None and b == batches - 1:
                    val_loss, val_accuracy = self.evaluate(*validation_data, batch_size=max(batch_size, 256))
                    metrics.update(val_loss=val_loss, val_accuracy=val_accuracy)
                if bar:
                    bar.update(b + 1, **metrics)
            history.append(**metrics)
        return history

    def evaluate(self, x, y, batch_size=256):
        """(mean loss, accuracy) over ``x``, in inference mode."""
        x, y = _checked_pair(self.name, "evaluate", x, y)
        loss = self.loss or SoftmaxCrossEntropy()
        total_loss = correct = 0.0
        for start in range(0, len(x), batch_size):
            logits = self.forward(x[start : start + batch_size])
            total_loss += loss(logits, y[start : start + batch_size]) * len(logits)
            correct += _accuracy(logits, y[start : start + batch_size]) * len(logits)
        return total_loss / len(x), correct / len(x)

    def predict(self, x, batch_size=256):
        """The last layer's output for every row of ``x``, in inference mode."""
        x = as_array(x)
        outputs = [self.forward(x[start : start + batch_size]) for start in range(0, len(x), batch_size)]
        return namespace(x).concatenate(outputs)

    def save_weights(self, path):
        from safetensors.numpy import save_file

        if not self.built:
            raise Error(f"{self.name}: save_weights() before the model is built")
        save_file(
            {name: np.ascontiguousarray(to_namespace(value, np)) for name, value in self.parameters().items()},
            str(path),
            metadata={"format": "opgraph.layers"},
        )

    def load_weights(self, path):
        """Loads weights saved by save_weights() into this (built) model; every
        name, shape and dtype must match."""
        from safetensors.numpy import load_file

        if not self.built:
            raise Error(f"{self.name}: load_weights() needs a built model; call build(input_shape) first")
        stored = load_file(str(path))
        parameters = self.parameters()
        missing, unexpected = parameters.keys() - stored.keys(), stored.keys() - parameters.keys()
        if missing or unexpected:
            raise Error(
                f"{self.name}: load_weights({str(path)!r}): missing {sorted(missing)}, unexpected {sorted(unexpected)}"
            )
        for name, value in parameters.items():
            if stored[name].shape != value.shape or stored[name].dtype != value.dtype:
                raise Error(
                    f"{self.name}: load_weights({str(path)!r}): {name}: expected {value.dtype}{list(value.shape)}, "
                    f"got {stored[name].dtype}{list(stored[name].shape)}"
                )
            value[...] = to_namespace(stored[name], namespace(value))


def _accuracy(logits, y):
    return float((logits.argmax(axis=1) == y).sum()) / len(y) if len(y) else 0.0


def _checked_pair(model, method, x, y):
    """``x`` and ``y`` as arrays, ``y`` moved to ``x``'s device."""
    x = as_array(x)
    y = to_namespace(y, namespace(x))
    if len(x) != len(y):
        raise Error(f"{model}.{method}: x has {len(x)} rows but y has {len(y)}")
    if len(x) == 0:
        raise Error(f"{model}.{method}: x is empty")
    return x, y
