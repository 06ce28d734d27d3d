"""Optimizers. ``step(parameters, gradients)`` updates the parameter arrays in
place; both are dicts keyed by the same names, and per-parameter state (momentum,
moments) is kept under those names, in the parameter's array namespace
(NumPy or CuPy), so that GPU parameters are updated on the GPU."""

from .._arrays import device_of, namespace
from .._C import Error


class Optimizer:
    def __init__(self, lr):
        if not lr > 0:
            raise Error(f"{type(self).__name__}: lr: expected a positive learning rate, got {lr}")
        self.lr = lr
        self.state = {}

    def step(self, parameters, gradients):
        missing = parameters.keys() - gradients.keys()
        if missing:
            raise Error(f"{type(self).__name__}.step: no gradient for {', '.join(sorted(missing))}")
        for name, parameter in parameters.items():
            gradient = gradients[name]
            if gradient.shape != parameter.shape:
                raise Error(
                    f"{type(self).__name__}.step: {name}: gradient shape {gradient.shape} does not match "
                    f"the parameter's {parameter.shape}"
                )
            if device_of(gradient) != device_of(parameter):
                raise Error(
                    f"{type(self).__name__}.step: {name}: the gradient is on {device_of(gradient)} but the "
                    f"parameter is on {device_of(parameter)}"
                )
            self.update(name, parameter, gradient)

    def update(self, name, parameter, gradient):
        raise NotImplementedError


class SGD(Optimizer):
    """Stochastic gradient descent with (heavy-ball) momentum, as torch.optim.SGD."""

    def __init__(self, lr=0.01, momentum=0.0):
        super().__init__(lr)
        if not 0.0 <= momentum < 1.0:
            raise Error(f"SGD: momentum: expected a value in [0, 1), got {momentum}")
        self.momentum = momentum

    def update(self, name, parameter, gradient):
        if self.momentum:
            velocity = self.state.get(name)
            if velocity is None:
                velocity = self.state[name] = gradient.copy()
            else:
                velocity *= self.momentum
                velocity += gradient
            gradient = velocity
        parameter -= self.lr * gradient


class Adam(Optimizer):
    """Adam (Kingma & Ba), with the bias corrections of torch.optim.Adam."""

    def __init__(self, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8):
        super().__init__(lr)
        self.beta1, self.beta2, self.eps = beta1, beta2, eps

    def update(self, name, parameter, gradient):
        xp = namespace(parameter)
        if name not in self.state:
            self.state[name] = (0, xp.zeros_like(parameter), xp.zeros_like(parameter))
        t, m, v = self.state[name]
        t += 1
        m *= self.beta1
        m += (1 - self.beta1) * gradient
        v *= self.beta2
        v += (1 - self.beta2) * xp.square(gradient)
        self.state[name] = (t, m, v)
        step = self.lr / (1 - self.beta1**t)
        denominator = xp.sqrt(v / (1 - self.beta2**t))
        denominator += self.eps
        parameter -= (step * m / denominator).astype(parameter.dtype, copy=False)
