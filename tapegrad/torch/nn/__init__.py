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
    ELU,
    GELU,
    AdaptiveAvgPool2d,
    AvgPool2d,
    BCELoss,
    BCEWithLogitsLoss,
    Conv1d,
    Conv2d,
    ConvTranspose1d,
    ConvTranspose2d,
    CrossEntropyLoss,
    Dropout,
    Hardtanh,
    HuberLoss,
    Identity,
    L1Loss,
    LayerNorm,
    LeakyReLU,
    Linear,
    LogSoftmax,
    MaxPool1d,
    MaxPool2d,
    Mish,
    Module,
    ModuleList,
    MSELoss,
    NLLLoss,
    ReLU,
    Sequential,
    Sigmoid,
    SiLU,
    SmoothL1Loss,
    Softmax,
    Softplus,
    Tanh,
)
from tapegrad.torch.nn.parameter import Parameter

__all__ = [
    "AdaptiveAvgPool2d", "AvgPool2d", "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "MaxPool1d",
    "MaxPool2d",
    "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "Dropout", "ELU", "GELU", "Hardtanh", "HuberLoss",
    "Identity", "L1Loss", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax", "MSELoss", "Mish", "Module",
    "ModuleList", "NLLLoss", "Parameter", "ReLU", "Sequential", "SiLU", "Sigmoid", "SmoothL1Loss", "Softmax",
    "Softplus", "Tanh", "functional", "init",
]
