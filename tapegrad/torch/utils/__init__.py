"""``tapegrad.torch.utils``: ``torch.utils.data`` (datasets, samplers, ``DataLoader``)."""


from tapegrad.torch._missing import missing_names
from tapegrad.torch.utils import data

__all__ = ["data"]


__getattr__ = missing_names(__name__, "torch.utils")
