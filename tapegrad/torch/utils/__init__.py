"""``tapegrad.torch.utils``: ``torch.utils.data`` (datasets, samplers, ``DataLoader``) and
``torch.utils.checkpoint``."""


from tapegrad.torch._missing import missing_names
from tapegrad.torch.utils import checkpoint, data

__all__ = ["checkpoint", "data"]


__getattr__ = missing_names(__name__, "torch.utils")
