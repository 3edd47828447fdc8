"""``tapegrad.torch.utils``: ``torch.utils.data`` (datasets, samplers, ``DataLoader``)."""

from tapegrad.torch.utils import data

__all__ = ["data"]
