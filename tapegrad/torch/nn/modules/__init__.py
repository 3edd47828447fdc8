"""``torch.nn`` modules, one file per family as PyTorch lays them out.

- ``module``: ``Module``, the base class (registration, traversal,
  ``state_dict``, dtype and device moves, ``repr``)
- ``container``: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict``
- ``flatten``: ``Flatten``, ``Unflatten``
- ``linear``: ``Identity``, ``Linear``
- ``conv``: ``Conv1d``, ``Conv2d``, ``ConvTranspose1d``, ``ConvTranspose2d``
- ``pooling``: ``MaxPool1d``, ``MaxPool2d``, ``AvgPool2d``, ``AdaptiveAvgPool2d``
- ``activation``: ``ReLU``, ``GELU``, ``Softmax`` ... (elementwise and softmax)
- ``dropout``: ``Dropout``
- ``normalization``: ``LayerNorm``, ``GroupNorm``, ``InstanceNorm1d``, ``InstanceNorm2d``; ``batchnorm``: ``BatchNorm1d``, ``BatchNorm2d``
- ``sparse``: ``Embedding``, ``EmbeddingBag``
- ``upsampling``: ``Upsample``, ``PixelShuffle``, ``PixelUnshuffle``, the padding layers (``ZeroPad2d`` ...)
- ``rnn``: ``RNN``, ``LSTM``, ``GRU`` and their cells
- ``transformer``: ``TransformerEncoderLayer``, ``TransformerEncoder``, their decoder twins, ``Transformer`` (``activation``
  holds ``MultiheadAttention``, as in PyTorch)
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
    MultiheadAttention,
    ReLU,
    Sigmoid,
    SiLU,
    Softmax,
    Softplus,
    Tanh,
)
from tapegrad.torch.nn.modules.batchnorm import BatchNorm1d, BatchNorm2d
from tapegrad.torch.nn.modules.container import (
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from tapegrad.torch.nn.modules.conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from tapegrad.torch.nn.modules.dropout import Dropout
from tapegrad.torch.nn.modules.flatten import Flatten, Unflatten
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
from tapegrad.torch.nn.modules.normalization import (
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    LayerNorm,
)
from tapegrad.torch.nn.modules.pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool1d, MaxPool2d
from tapegrad.torch.nn.modules.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from tapegrad.torch.nn.modules.sparse import Embedding, EmbeddingBag
from tapegrad.torch.nn.modules.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from tapegrad.torch.nn.modules.upsampling import (
    CircularPad1d,
    CircularPad2d,
    ConstantPad1d,
    ConstantPad2d,
    PixelShuffle,
    PixelUnshuffle,
    ReflectionPad1d,
    ReflectionPad2d,
    ReplicationPad1d,
    ReplicationPad2d,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
    ZeroPad1d,
    ZeroPad2d,
)

__all__ = [
    "AdaptiveAvgPool2d", "AvgPool2d", "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d",
    "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "CrossEntropyLoss", "Dropout", "ELU",
    "Embedding", "EmbeddingBag", "Flatten", "GELU", "GRU", "GRUCell", "GroupNorm", "Hardtanh", "HuberLoss", "Identity",
    "InstanceNorm1d", "InstanceNorm2d", "L1Loss",
    "LSTM", "LSTMCell", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax", "MSELoss", "MaxPool1d",
    "MaxPool2d", "Mish", "Module", "ModuleDict", "ModuleList", "MultiheadAttention", "NLLLoss",
    "ParameterDict", "ParameterList", "RNN", "RNNCell", "ReLU", "Sequential", "SiLU", "Sigmoid",
    "SmoothL1Loss", "Softmax", "Softplus", "Tanh", "Transformer", "TransformerDecoder",
    "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer",
    "Unflatten",
]
__all__ += [  # resampling and padding (upsampling.py)
    "CircularPad1d", "CircularPad2d", "ConstantPad1d", "ConstantPad2d", "PixelShuffle", "PixelUnshuffle", "ReflectionPad1d", "ReflectionPad2d",
    "ReplicationPad1d", "ReplicationPad2d", "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d", "ZeroPad1d", "ZeroPad2d",
]
