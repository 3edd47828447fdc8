"""Variable-length sequences: pad_sequence, pack_padded_sequence into a
bidirectional LSTM, pad_packed_sequence back, the last valid hidden states
gathered for a classifier, and one training step."""
import torch
import torch.nn as nn
from torch.nn.utils.rnn import (
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
)

seqs = [torch.tensor([1, 2, 3, 4]), torch.tensor([5, 6]), torch.tensor([7, 8, 9])]
lengths = torch.tensor([len(s) for s in seqs])
padded = pad_sequence(seqs, batch_first=True, padding_value=0)
print(padded, lengths)
print(pad_sequence(seqs).shape)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 3, padding_idx=0)
        self.lstm = nn.LSTM(3, 4, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(8, 2)

    def forward(self, x, lengths):
        emb = self.embed(x)
        packed = pack_padded_sequence(emb, lengths, batch_first=True, enforce_sorted=False)
        out, (h, c) = self.lstm(packed)
        unpacked, out_lengths = pad_packed_sequence(out, batch_first=True)
        feats = torch.cat([h[-2], h[-1]], dim=1)
        return self.fc(feats), unpacked, out_lengths, packed


model = Classifier()
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(0.3 * torch.sin(torch.arange(p.numel()).float() * 0.37 + i).reshape(p.shape))
    model.embed.weight[0].zero_()
logits, unpacked, out_lengths, packed = model(padded, lengths)
print(type(packed).__name__, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
print(packed.data.shape, unpacked.shape, out_lengths)
print(unpacked[1, 2:].abs().sum().item())
print(logits.round(decimals=4))
loss = nn.CrossEntropyLoss()(logits, torch.tensor([0, 1, 1]))
loss.backward()
print(f"{loss.item():.4f}", model.embed.weight.grad[0], model.lstm.weight_hh_l0_reverse.grad.shape)
ps = pack_sequence([torch.tensor([1.0, 2.0, 3.0]), torch.tensor([4.0, 5.0])])
print(ps.data, ps.batch_sizes)
print(pad_packed_sequence(ps, batch_first=True, padding_value=-1.0))
