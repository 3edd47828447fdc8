"""``tapegrad.torch.nn``: modules, parameters, losses and ``nn.functional``.

    import tapegrad.torch as torch
    from tapegrad.torch import nn

    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    loss = nn.CrossEntropyLoss()(model(x), y)
    loss.backward()

Everything here is built from tensor methods and ``tapegrad.numpy`` calls;
the gradients come from the facade's tape.
"""

from tapegrad.torch.nn import functional, init
from tapegrad.torch.nn.modules import (
    CrossEntropyLoss,
    Identity,
    Linear,
    LogSoftmax,
    Module,
    ModuleList,
    MSELoss,
    NLLLoss,
    ReLU,
    Sequential,
    Sigmoid,
    Softmax,
    Tanh,
)
from tapegrad.torch.nn.parameter import Parameter

__all__ = [
    "CrossEntropyLoss", "Identity", "Linear", "LogSoftmax", "MSELoss", "Module", "ModuleList",
    "NLLLoss", "Parameter", "ReLU", "Sequential", "Sigmoid", "Softmax", "Tanh", "functional", "init",
]
