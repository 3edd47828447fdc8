"""``tapegrad.torch.optim``: ``SGD`` and ``Adam``, with PyTorch's update rules.

    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for x, y in batches:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
"""

from tapegrad.torch.optim.adam import Adam
from tapegrad.torch.optim.optimizer import Optimizer
from tapegrad.torch.optim.sgd import SGD

__all__ = ["SGD", "Adam", "Optimizer"]
