"""Autograd through opgraph's own training ops registered with torch.library:
backward ops that take the forward's output (gemm, conv2d with an activation)
or a second output (softmax_cross_entropy's probabilities), checked against
PyTorch's gradients of the same computation."""

import pytest
import torch

from opgraph.torch.registration import differentiable_outputs, register_torch_op


def _leaves(*shapes, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, generator=generator, dtype=torch.float64, requires_grad=True) for s in shapes]


@pytest.mark.parametrize("activation", ["none", "relu", "gelu", "tanh"])
@pytest.mark.parametrize("with_bias", [True, False])
def test_gemm_gradients_match_torch(activation, with_bias):
    gemm = register_torch_op("opgraph::gemm").functional
    a, b, bias = _leaves((5, 7), (7, 3), (3,))
    ours = gemm(a, b, bias if with_bias else None, activation=activation)
    ours.pow(2).sum().backward()
    got = [a.grad, b.grad, bias.grad]
    for t in (a, b, bias):
        t.grad = None
    act = {"none": lambda x: x, "relu": torch.relu, "gelu": torch.nn.functional.gelu, "tanh": torch.tanh}[activation]
    act(a @ b + (bias if with_bias else 0)).pow(2).sum().backward()
    for mine, theirs in zip(got, [a.grad, b.grad, bias.grad]):
        assert (mine is None) == (theirs is None)
        if mine is not None:
            torch.testing.assert_close(mine, theirs)


def test_conv2d_with_an_activation_matches_torch():
    conv2d = register_torch_op("opgraph::conv2d").functional
    x, w, bias = _leaves((2, 4, 6, 6), (6, 2, 3, 3), (6,))
    attrs = dict(stride=[1, 1], padding=[1, 1], dilation=[1, 1], groups=2)
    conv2d(x, w, bias, **attrs, activation="relu").sum().backward()
    got = [x.grad, w.grad, bias.grad]
    for t in (x, w, bias):
        t.grad = None
    torch.relu(torch.nn.functional.conv2d(x, w, bias, **attrs)).sum().backward()
    for mine, theirs in zip(got, [x.grad, w.grad, bias.grad]):
        torch.testing.assert_close(mine, theirs)


def test_softmax_cross_entropy_differentiates_its_loss_and_refuses_its_probabilities():
    op = register_torch_op("opgraph::softmax_cross_entropy").functional
    assert differentiable_outputs("opgraph::softmax_cross_entropy") == [0]
    (logits,) = _leaves((4, 6))
    target = torch.tensor([0, 5, 2, 2])
    loss, probabilities = op(logits, target, label_smoothing=0.1)
    loss.backward()
    mine, logits.grad = logits.grad, None
    torch.nn.functional.cross_entropy(logits, target, label_smoothing=0.1).backward()
    torch.testing.assert_close(mine, logits.grad)
    torch.testing.assert_close(probabilities, torch.softmax(logits, 1).detach())

    _, probabilities = op(logits, target)
    with pytest.raises(
        RuntimeError, match="softmax_cross_entropy_backward takes no gradient for output 'probabilities'"
    ):
        probabilities.sum().backward()


def test_a_backward_op_taking_an_unknown_tensor_is_refused():
    from opgraph.torch.registration import _backward_plan
    from opgraph.torch.signature import OpSignature

    # softmax_cross_entropy_backward's `probabilities` is neither gemm's input, its output nor a second gradient.
    with pytest.raises(Exception, match="takes 'probabilities', which is neither an input \\(a, b, bias\\), an output"):
        _backward_plan(OpSignature("opgraph::gemm"), "opgraph::softmax_cross_entropy_backward")
