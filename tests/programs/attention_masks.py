"""Attention with masks: nn.MultiheadAttention (key_padding_mask, attn_mask,
averaged and per-head weights), nn.Transformer.generate_square_subsequent_mask,
a TransformerDecoder greedy decode loop in eval mode, and
F.scaled_dot_product_attention with is_causal."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def fill(module, scale=0.3):
    with torch.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(scale * torch.sin(torch.arange(p.numel()).float() * 0.61 + i).reshape(p.shape))
    return module


mha = fill(nn.MultiheadAttention(embed_dim=4, num_heads=2, batch_first=True))
q = torch.cos(torch.arange(2 * 3 * 4).float()).reshape(2, 3, 4)
kv = torch.sin(torch.arange(2 * 5 * 4).float()).reshape(2, 5, 4)
pad = torch.tensor([[False, False, False, True, True], [False, False, False, False, False]])
out, w = mha(q, kv, kv, key_padding_mask=pad)
print(out.shape, w.shape, out.grad_fn is not None)
print(w.round(decimals=4))
print(w[0, :, 3:].abs().sum().item())
out2, w2 = mha(q, kv, kv, need_weights=True, average_attn_weights=False)
print(w2.shape, torch.allclose(w2.mean(dim=1), mha(q, kv, kv)[1], atol=1e-6))
_, none_w = mha(q, kv, kv, need_weights=False)
print(none_w)
mask = nn.Transformer.generate_square_subsequent_mask(4)
print(mask)
x = torch.cos(torch.arange(1 * 4 * 4).float() * 0.3).reshape(1, 4, 4)
self_out, self_w = mha(x, x, x, attn_mask=mask)
print(self_w.round(decimals=4))
bool_mask = torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1)
print(torch.allclose(self_out, mha(x, x, x, attn_mask=bool_mask)[0], atol=1e-6))

sdpa = F.scaled_dot_product_attention(x, x, x, is_causal=True)
manual = torch.softmax((x @ x.transpose(-2, -1)) / 2.0 + mask, dim=-1) @ x
print(torch.allclose(sdpa, manual, atol=1e-6))

layer = nn.TransformerDecoderLayer(d_model=4, nhead=2, dim_feedforward=8, dropout=0.0, batch_first=True)
decoder = fill(nn.TransformerDecoder(layer, num_layers=2), 0.2)
embed = fill(nn.Embedding(6, 4), 1.0)
proj = fill(nn.Linear(4, 6), 0.5)
decoder.eval()
memory = kv[:1]
tokens = torch.tensor([[1]])
with torch.no_grad():
    for _ in range(4):
        tgt = embed(tokens)
        h = decoder(tgt, memory, tgt_mask=nn.Transformer.generate_square_subsequent_mask(tokens.size(1)))
        nxt = proj(h[:, -1]).argmax(dim=-1, keepdim=True)
        tokens = torch.cat([tokens, nxt], dim=1)
print(tokens, tokens.dtype, h.shape)
