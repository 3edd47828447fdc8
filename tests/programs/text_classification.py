"""Text classification with nn.EmbeddingBag (the AG_NEWS tutorial's model):
a flat batch of token ids with offsets, mean pooling, a linear head,
CrossEntropyLoss, clip_grad_norm_ and accuracy."""
import torch
import torch.nn as nn
import torch.nn.functional as F

vocab = {w: i for i, w in enumerate("<unk> the a goal match team score stock market price rises falls".split())}
texts = [("the team score a goal", 0), ("the stock market falls", 1), ("match goal", 0),
         ("price rises", 1), ("the market price falls", 1), ("a team match", 0)]


def text_pipeline(t):
    return [vocab.get(w, 0) for w in t.split()]


def collate_batch(batch):
    label_list, text_list, offsets = [], [], [0]
    for _text, _label in batch:
        label_list.append(_label)
        processed = torch.tensor(text_pipeline(_text), dtype=torch.int64)
        text_list.append(processed)
        offsets.append(processed.size(0))
    label_list = torch.tensor(label_list, dtype=torch.int64)
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    text_list = torch.cat(text_list)
    return label_list, text_list, offsets


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        with torch.no_grad():
            self.embedding.weight.copy_(torch.linspace(-0.5, 0.5, self.embedding.weight.numel())
                                        .reshape(self.embedding.weight.shape).sin())
            self.fc.weight.copy_(torch.linspace(-0.5, 0.5, self.fc.weight.numel()).reshape(self.fc.weight.shape))
            self.fc.bias.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


model = TextClassificationModel(len(vocab), 4, 2)
print(model)
labels, text, offsets = collate_batch(texts)
print(text, offsets)
criterion = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=2.0)
for epoch in range(4):
    optimizer.zero_grad()
    predicted_label = model(text, offsets)
    loss = criterion(predicted_label, labels)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
    optimizer.step()
    acc = (predicted_label.argmax(1) == labels).sum().item() / labels.size(0)
    print(epoch, f"{loss.item():.4f}", f"{norm.item():.4f}", acc)
print(predicted_label.grad_fn, model.embedding(text, offsets).grad_fn)
bag = nn.EmbeddingBag(5, 2, mode="sum")
with torch.no_grad():
    bag.weight.copy_(torch.arange(10.0).reshape(5, 2))
print(bag(torch.tensor([[0, 1], [2, 4]])))
print(bag(torch.tensor([1, 2, 3]), torch.tensor([0, 1])))
mx = nn.EmbeddingBag.from_pretrained(torch.arange(10.0).reshape(5, 2), mode="max")
print(mx(torch.tensor([4, 0, 1, 3]), torch.tensor([0, 2])), mx.weight.requires_grad)
w = torch.arange(10.0).reshape(5, 2).requires_grad_()
out = F.embedding_bag(torch.tensor([0, 2, 2, 1]), w, torch.tensor([0, 3]), mode="sum",
                      per_sample_weights=torch.tensor([1.0, 0.5, 2.0, -1.0]))
print(out)
out.sum().backward()
print(w.grad)
