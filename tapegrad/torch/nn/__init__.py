"""``tapegrad.torch.nn``: modules, parameters, losses and ``nn.functional``.

    import tapegrad.torch as torch
    from tapegrad.torch import nn

    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    loss = nn.CrossEntropyLoss()(model(x), y)
    loss.backward()

Everything here is built from tensor methods and ``tapegrad.numpy`` calls;
the gradients come from the facade's tape.
"""

from tapegrad.torch.nn import functional, init, utils
from tapegrad.torch.nn.modules import (
    ELU,
    GELU,
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    Dropout,
    Flatten,
    Hardtanh,
    HuberLoss,
    Identity,
    L1Loss,
    LayerNorm,
    LeakyReLU,
    Linear,
    LogSoftmax,
    Mish,
    Module,
    ModuleDict,
    ModuleList,
    MSELoss,
    NLLLoss,
    ParameterDict,
    ParameterList,
    ReLU,
    Sequential,
    Sigmoid,
    SiLU,
    SmoothL1Loss,
    Softmax,
    Softplus,
    Tanh,
    Unflatten,
)
from tapegrad.torch.nn.parameter import Parameter

__all__ = [
    "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "Dropout", "ELU", "Flatten", "GELU",
    "Hardtanh", "HuberLoss", "Identity", "L1Loss", "LayerNorm", "LeakyReLU", "Linear",
    "LogSoftmax", "MSELoss", "Mish", "Module", "ModuleDict", "ModuleList", "NLLLoss",
    "Parameter", "ParameterDict", "ParameterList", "ReLU", "Sequential", "SiLU", "Sigmoid",
    "SmoothL1Loss", "Softmax", "Softplus", "Tanh", "Unflatten", "functional", "init", "utils",
]
