"""Hugging Face transformers with torchvision installed: a tiny ViT image classifier with PyTorch's weights, fed by
its image processors (the slow NumPy / PIL one and the fast torchvision one), eval logits and a training step."""
import _harness
from _harness import record

import numpy as np
import torch
from PIL import Image
from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor, ViTImageProcessorFast

rng = np.random.default_rng(0)
images = [Image.fromarray(rng.integers(0, 256, (40 + 7 * i, 50 - 3 * i, 3)).astype(np.uint8)) for i in range(3)]
slow = ViTImageProcessor(size={"height": 32, "width": 32})
fast = ViTImageProcessorFast(size={"height": 32, "width": 32})
pixels_slow = slow(images, return_tensors="pt")["pixel_values"]
pixels_fast = fast(images, return_tensors="pt")["pixel_values"]
record("pixels_slow", pixels_slow)
record("pixels_fast", pixels_fast)

config = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
                   num_attention_heads=2, intermediate_size=64, num_labels=5)
torch.manual_seed(0)
model = _harness.share_weights("vit", ViTForImageClassification(config))
model.eval()
with torch.no_grad():
    out = model(pixel_values=pixels_fast, output_attentions=True)
record("logits", out.logits)
record("attentions", out.attentions)
model.train()
model.config.hidden_dropout_prob = 0.0
for m in model.modules():
    if isinstance(m, torch.nn.Dropout):
        m.p = 0.0
loss = model(pixel_values=pixels_slow, labels=torch.tensor([0, 3, 1])).loss
loss.backward()
record("loss", loss)
record("grads", [p.grad for p in model.parameters() if p.grad is not None][-4:])
print("ok", float(loss))
