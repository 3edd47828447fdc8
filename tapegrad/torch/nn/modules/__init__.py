"""``torch.nn`` modules, one file per family as PyTorch lays them out.

- ``module``: :class:`Module`, the base class (registration, traversal,
  ``state_dict``, dtype and device moves, ``repr``)
- ``container``: ``Sequential``, ``ModuleList``
- ``linear``: ``Identity``, ``Linear``
- ``conv``: ``Conv1d``, ``Conv2d``, ``ConvTranspose1d``, ``ConvTranspose2d``
- ``pooling``: ``MaxPool1d``, ``MaxPool2d``, ``AvgPool2d``, ``AdaptiveAvgPool2d``
- ``activation``: ``ReLU``, ``GELU``, ``Softmax`` ... (elementwise and softmax)
- ``dropout``: ``Dropout``
- ``normalization``: ``LayerNorm``
- ``loss``: ``MSELoss``, ``CrossEntropyLoss``, ``BCELoss`` ...

This package re-exports every public name, so ``nn.modules.Linear`` and
``nn.Linear`` are the same class.
"""

from tapegrad.torch.nn.modules.activation import (
    ELU,
    GELU,
    Hardtanh,
    LeakyReLU,
    LogSoftmax,
    Mish,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from tapegrad.torch.nn.modules.container import ModuleList, Sequential
from tapegrad.torch.nn.modules.conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from tapegrad.torch.nn.modules.dropout import Dropout
from tapegrad.torch.nn.modules.linear import Identity, Linear
from tapegrad.torch.nn.modules.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from tapegrad.torch.nn.modules.module import Module
from tapegrad.torch.nn.modules.normalization import LayerNorm
from tapegrad.torch.nn.modules.pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool1d, MaxPool2d

__all__ = [
    "AdaptiveAvgPool2d", "AvgPool2d", "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "MaxPool1d",
    "MaxPool2d",
    "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "Dropout", "ELU", "GELU", "Hardtanh", "HuberLoss",
    "Identity", "L1Loss", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax", "MSELoss", "Mish", "Module",
    "ModuleList", "NLLLoss", "ReLU", "Sequential", "SiLU", "Sigmoid", "SmoothL1Loss", "Softmax", "Softplus",
    "Tanh",
]
