"""``tapegrad.torch.nn``: modules, parameters, losses and ``nn.functional``.

    import tapegrad.torch as torch
    from tapegrad.torch import nn

    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    loss = nn.CrossEntropyLoss()(model(x), y)
    loss.backward()

Everything here is built from tensor methods and ``tapegrad.numpy`` calls;
the gradients come from the facade's tape.
"""

from tapegrad.torch._missing import missing_names
from tapegrad.torch.nn import functional, init, parallel, utils
from tapegrad.torch.nn.modules import (  # resampling and padding
    ELU,
    GELU,
    GRU,
    LSTM,
    RNN,
    AdaptiveAvgPool2d,
    AvgPool2d,
    BatchNorm1d,
    BatchNorm2d,
    BCELoss,
    BCEWithLogitsLoss,
    CircularPad1d,
    CircularPad2d,
    ConstantPad1d,
    ConstantPad2d,
    Conv1d,
    Conv2d,
    ConvTranspose1d,
    ConvTranspose2d,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    EmbeddingBag,
    Flatten,
    GroupNorm,
    GRUCell,
    Hardtanh,
    HuberLoss,
    Identity,
    InstanceNorm1d,
    InstanceNorm2d,
    L1Loss,
    LayerNorm,
    LeakyReLU,
    Linear,
    LogSoftmax,
    LSTMCell,
    MaxPool1d,
    MaxPool2d,
    Mish,
    Module,
    ModuleDict,
    ModuleList,
    MSELoss,
    MultiheadAttention,
    NLLLoss,
    ParameterDict,
    ParameterList,
    PixelShuffle,
    PixelUnshuffle,
    ReflectionPad1d,
    ReflectionPad2d,
    ReLU,
    ReplicationPad1d,
    ReplicationPad2d,
    RNNCell,
    Sequential,
    Sigmoid,
    SiLU,
    SmoothL1Loss,
    Softmax,
    Softplus,
    Tanh,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
    Unflatten,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
    ZeroPad1d,
    ZeroPad2d,
)
from tapegrad.torch.nn.parallel import DataParallel
from tapegrad.torch.nn.parameter import Parameter

__all__ = [
    "AdaptiveAvgPool2d", "AvgPool2d", "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d",
    "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "CrossEntropyLoss", "DataParallel", "Dropout", "ELU",
    "Embedding", "EmbeddingBag", "Flatten", "GELU", "GRU", "GRUCell", "GroupNorm", "Hardtanh", "HuberLoss", "Identity",
    "InstanceNorm1d", "InstanceNorm2d", "L1Loss",
    "LSTM", "LSTMCell", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax", "MSELoss", "MaxPool1d",
    "MaxPool2d", "Mish", "Module", "ModuleDict", "ModuleList", "MultiheadAttention", "NLLLoss",
    "Parameter", "ParameterDict", "ParameterList", "RNN", "RNNCell", "ReLU", "Sequential", "SiLU",
    "Sigmoid", "SmoothL1Loss", "Softmax", "Softplus", "Tanh", "Transformer", "TransformerDecoder", "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer", "Unflatten", "functional", "init", "parallel", "utils",
]

__all__ += [  # resampling and padding (upsampling.py)
    "CircularPad1d", "CircularPad2d", "ConstantPad1d", "ConstantPad2d", "PixelShuffle", "PixelUnshuffle", "ReflectionPad1d", "ReflectionPad2d",
    "ReplicationPad1d", "ReplicationPad2d", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d", "ZeroPad1d", "ZeroPad2d",
]

__getattr__ = missing_names(__name__, "torch.nn")
