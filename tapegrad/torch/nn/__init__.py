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
    GRU,
    LSTM,
    RNN,
    BatchNorm1d,
    BatchNorm2d,
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    GRUCell,
    Hardtanh,
    HuberLoss,
    Identity,
    L1Loss,
    LayerNorm,
    LeakyReLU,
    Linear,
    LogSoftmax,
    LSTMCell,
    Mish,
    Module,
    ModuleList,
    MSELoss,
    MultiheadAttention,
    NLLLoss,
    ReLU,
    RNNCell,
    Sequential,
    Sigmoid,
    SiLU,
    SmoothL1Loss,
    Softmax,
    Softplus,
    Tanh,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from tapegrad.torch.nn.parameter import Parameter

__all__ = [
    "BatchNorm1d", "BatchNorm2d", "Embedding", "GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNCell",
    "MultiheadAttention", "TransformerEncoder", "TransformerEncoderLayer",
    "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "Dropout", "ELU", "GELU", "Hardtanh", "HuberLoss",
    "Identity", "L1Loss", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax", "MSELoss", "Mish", "Module",
    "ModuleList", "NLLLoss", "Parameter", "ReLU", "Sequential", "SiLU", "Sigmoid", "SmoothL1Loss", "Softmax",
    "Softplus", "Tanh", "functional", "init",
]
