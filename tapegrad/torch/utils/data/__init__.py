"""``torch.utils.data``: datasets, samplers and the ``DataLoader``, as PyTorch's
(single process: ``num_workers`` is accepted and the batches are made in the
calling process).

    ds = torch.utils.data.TensorDataset(x, y)
    train, val = torch.utils.data.random_split(ds, [0.8, 0.2])
    for xb, yb in torch.utils.data.DataLoader(train, batch_size=32, shuffle=True):
        ...
"""

from tapegrad.torch._missing import missing_names
from tapegrad.torch.utils.data import distributed
from tapegrad.torch.utils.data.collate import default_collate, default_convert
from tapegrad.torch.utils.data.dataloader import DataLoader
from tapegrad.torch.utils.data.dataset import (
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from tapegrad.torch.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
)

__all__ = [
    "BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset", "RandomSampler",
    "Sampler", "SequentialSampler", "Subset", "SubsetRandomSampler", "TensorDataset",
    "default_collate", "default_convert", "distributed", "random_split",
]


__getattr__ = missing_names(__name__, "torch.utils.data")
