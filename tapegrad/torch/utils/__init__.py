"""``tapegrad.torch.utils``: ``torch.utils.data`` (datasets, samplers, ``DataLoader``), ``torch.utils.benchmark`` (``Timer``), ``torch.utils.checkpoint``
and ``torch.utils.hooks``."""


from tapegrad.torch._missing import missing_names
from tapegrad.torch.utils import benchmark, checkpoint, data, hooks

__all__ = ["benchmark", "checkpoint", "data", "hooks"]


__getattr__ = missing_names(__name__, "torch.utils")
