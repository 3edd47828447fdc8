"""Char-level RNN name classifier (the NLP-from-scratch tutorial): one-hot
letters, nn.RNN, LogSoftmax, NLLLoss and manual SGD through p.data.add_."""
import string

import torch
import torch.nn as nn

all_letters = string.ascii_letters + " .,;'"
n_letters = len(all_letters)
categories = ["English", "French", "Italian"]
names = [("Smith", 0), ("Dubois", 1), ("Rossi", 2), ("Jones", 0), ("Moreau", 1), ("Bruno", 2)]


def letter_to_index(letter):
    return all_letters.find(letter)


def line_to_tensor(line):
    tensor = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        tensor[li][0][letter_to_index(letter)] = 1
    return tensor


class CharRNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.rnn = nn.RNN(input_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, line_tensor):
        rnn_out, hidden = self.rnn(line_tensor)
        output = self.h2o(hidden[0])
        return self.softmax(output)


rnn = CharRNN(n_letters, 8, len(categories))
print(rnn)
with torch.no_grad():
    for i, p in enumerate(rnn.parameters()):
        p.copy_(0.3 * torch.cos(torch.arange(p.numel()).float() * (i + 1)).reshape(p.shape))
print(line_to_tensor("Jones").size(), line_to_tensor("J").nonzero())

criterion = nn.NLLLoss()
learning_rate = 0.05


def train(category_tensor, line_tensor):
    rnn.zero_grad()
    output = rnn(line_tensor)
    loss = criterion(output, category_tensor)
    loss.backward()
    for p in rnn.parameters():
        p.data.add_(p.grad.data, alpha=-learning_rate)
    return output, loss.item()


for epoch in range(3):
    total = 0.0
    for name, cat in names:
        output, loss = train(torch.tensor([cat], dtype=torch.long), line_to_tensor(name))
        total += loss
    print(f"epoch {epoch} loss {total / len(names):.4f}")

with torch.no_grad():
    output = rnn(line_to_tensor("Rossi"))
    top_n, top_i = output.topk(1)
    print(output.shape, output.grad_fn, categories[top_i[0].item()])
    print(output.exp().sum().round(decimals=4))
