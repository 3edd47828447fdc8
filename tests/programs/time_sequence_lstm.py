"""The examples repo's time-sequence prediction: two LSTMCells in float64
learn sine waves, trained for a few steps, then predict future values."""
import math

import torch
import torch.nn as nn
import torch.optim as optim


class Sequence(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm1 = nn.LSTMCell(1, 6)
        self.lstm2 = nn.LSTMCell(6, 6)
        self.linear = nn.Linear(6, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), 6, dtype=torch.double)
        c_t = torch.zeros(input.size(0), 6, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), 6, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), 6, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for _ in range(future):
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


T, L, N = 20, 30, 4
x = torch.arange(L).double().unsqueeze(0) + torch.tensor([[0.0], [3.0], [7.0], [11.0]], dtype=torch.double)
data = torch.sin(x / 1.0 / T * 2 * math.pi)
input = data[:3, :-1]
target = data[:3, 1:]
test_input = data[3:, :-1]
test_target = data[3:, 1:]
seq = Sequence()
seq.double()
with torch.no_grad():
    for i, p in enumerate(seq.parameters()):
        p.copy_(0.2 * torch.cos(torch.arange(p.numel(), dtype=torch.double) * 0.7 + i).reshape(p.shape))
criterion = nn.MSELoss()
optimizer = optim.Adam(seq.parameters(), lr=0.05)
for i in range(6):
    optimizer.zero_grad()
    out = seq(input)
    loss = criterion(out, target)
    loss.backward()
    optimizer.step()
    print("STEP:", i, "loss:", f"{loss.item():.10f}")
with torch.no_grad():
    future = 5
    pred = seq(test_input, future=future)
    loss = criterion(pred[:, :-future], test_target)
    print("test loss:", f"{loss.item():.10f}")
    y = pred.detach().numpy()
print(pred.shape, pred.dtype, y.shape, y.dtype)
print(out.grad_fn, seq.lstm1)
