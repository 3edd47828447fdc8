"""torch.func tutorial: model ensembling with stack_module_state and vmap."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state, vmap


class SimpleMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 5)
        self.fc2 = nn.Linear(5, 3)

    def forward(self, x):
        x = x.flatten(1)
        return self.fc2(F.relu(self.fc1(x)))


num_models = 4
models = [SimpleMLP() for _ in range(num_models)]
for k, m in enumerate(models):
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.linspace(-0.5, 0.5 + 0.1 * k, p.numel()).reshape(p.shape))

minibatch = torch.linspace(-2, 2, 24).reshape(4, 2, 3)
predictions_diff = [m(minibatch) for m in models]

params, buffers = stack_module_state(models)
print(sorted(params), {k: tuple(v.shape) for k, v in params.items()})
print(params["fc1.weight"].requires_grad)

base_model = copy.deepcopy(models[0]).to("meta")


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))


minibatches = minibatch.unsqueeze(0).expand(num_models, -1, -1, -1)
predictions1_vmap = vmap(fmodel)(params, buffers, minibatches)
print(predictions1_vmap.shape)
print(torch.allclose(predictions1_vmap, torch.stack(predictions_diff), atol=1e-6))
predictions2_vmap = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
print(torch.allclose(predictions2_vmap, torch.stack(predictions_diff), atol=1e-6))
print(predictions2_vmap[1].argmax(dim=1))
