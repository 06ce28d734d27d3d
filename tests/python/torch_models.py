"""A small torch CNN and the same model as an opgraph graph, for the tests
that run saved models outside Python (the command-line tool, the C++
example)."""

import json

import numpy as np
import torch

import opgraph


def ints(*values):
    return {"type": "ints", "value": list(values)}


def cnn(batch="N", seed=0):
    """conv(3 -> 8, 3x3, padding 1) -> relu -> max_pool(2) -> conv(8 -> 16,
    3x3, stride 2) -> relu -> flatten -> linear(64 -> 10) over
    x: float32[batch, 3, 12, 12]. Returns the eval-mode torch module and the
    graph with its weights (taken from the module)."""
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, stride=2),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(64, 10),
    ).eval()
    names = {"0": "conv0", "3": "conv1", "6": "fc"}
    weights = {}
    for key, value in model.state_dict().items():
        layer, kind = key.split(".")
        weights[f"{names[layer]}.{kind}"] = value.numpy().copy()
    graph = {
        "name": "cnn",
        "inputs": [{"name": "x", "dtype": "float32", "shape": [batch, 3, 12, 12]}],
        "outputs": [{"name": "logits"}],
        "constants": [{"name": k, "dtype": "float32", "shape": list(v.shape)} for k, v in weights.items()],
        "nodes": [
            {
                "name": "conv0",
                "op_type": "aten::conv2d",
                "inputs": ["x", "conv0.weight", "conv0.bias"],
                "outputs": ["c0"],
                "attrs": {"padding": ints(1, 1)},
            },
            {"name": "relu0", "op_type": "aten::relu", "inputs": ["c0"], "outputs": ["r0"]},
            {
                "name": "pool",
                "op_type": "aten::max_pool2d",
                "inputs": ["r0"],
                "outputs": ["p"],
                "attrs": {"kernel_size": ints(2, 2)},
            },
            {
                "name": "conv1",
                "op_type": "aten::conv2d",
                "inputs": ["p", "conv1.weight", "conv1.bias"],
                "outputs": ["c1"],
                "attrs": {"stride": ints(2, 2)},
            },
            {"name": "relu1", "op_type": "aten::relu", "inputs": ["c1"], "outputs": ["r1"]},
            {
                "name": "flatten",
                "op_type": "aten::flatten.using_ints",
                "inputs": ["r1"],
                "outputs": ["f"],
                "attrs": {"start_dim": {"type": "int", "value": 1}},
            },
            {"name": "fc", "op_type": "aten::linear", "inputs": ["f", "fc.weight", "fc.bias"], "outputs": ["logits"]},
        ],
    }
    return model, opgraph.Graph.from_json(json.dumps(graph)), weights


def save_cnn(path, batch="N", seed=0):
    """Writes cnn() as an .opg file; returns the torch module."""
    model, graph, weights = cnn(batch, seed)
    opgraph.save_opg(path, graph, weights)
    return model


def torch_forward(model, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return model(torch.from_numpy(x)).numpy()
