"""``tapegrad.torch.optim``: ``SGD``, ``Adam``, ``AdamW``, ``RMSprop`` and
``Adagrad`` with PyTorch's update rules, and ``lr_scheduler``.

    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10)
    for x, y in batches:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        sched.step()
"""


from tapegrad.torch._missing import missing_names
from tapegrad.torch.optim import lr_scheduler
from tapegrad.torch.optim.adagrad import Adagrad
from tapegrad.torch.optim.adam import Adam
from tapegrad.torch.optim.adamw import AdamW
from tapegrad.torch.optim.optimizer import Optimizer
from tapegrad.torch.optim.rmsprop import RMSprop
from tapegrad.torch.optim.sgd import SGD

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler"]


__getattr__ = missing_names(__name__, "torch.optim")
