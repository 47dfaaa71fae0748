"""A torchvision classification model with PyTorch's weights: eval logits, one training step (loss, gradients, the
logits after an SGD step). ``argv[2]``: the model."""
import sys

import _harness
from _harness import record

import numpy as np
import torch
import torch.nn.functional as F
import torchvision

name = sys.argv[2]
small_vit = dict(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64)
builders = {
    "resnet18": lambda: torchvision.models.resnet18(num_classes=10),
    "mobilenet_v3_small": lambda: torchvision.models.mobilenet_v3_small(num_classes=10),
    "efficientnet_b0": lambda: torchvision.models.efficientnet_b0(num_classes=10),
    "convnext_tiny": lambda: torchvision.models.convnext_tiny(num_classes=10),
    "swin_t": lambda: torchvision.models.swin_t(num_classes=10),
    "vit": lambda: torchvision.models.VisionTransformer(num_classes=10, **small_vit),
    "regnet_y_400mf": lambda: torchvision.models.regnet_y_400mf(num_classes=10),
}
size = 32 if name == "vit" else 64
torch.manual_seed(0)
model = builders[name]()
if name == "vit":               # torchvision starts ViT's head at zero: give it weights so the logits say something
    torch.nn.init.normal_(model.heads.head.weight, std=0.5)
model = _harness.share_weights(name, model)
rng = np.random.default_rng(0)
x = torch.tensor(rng.standard_normal((2, 3, size, size)), dtype=torch.float32)
y = torch.tensor([1, 7])

model.eval()
with torch.no_grad():
    record("eval_logits", model(x))

model.train()
for m in model.modules():          # random layers draw the same numbers only as far as the generators agree
    if isinstance(m, torch.nn.Dropout):
        m.p = 0.0
    if isinstance(m, torchvision.ops.StochasticDepth):
        m.p = 0.0
record("train_loss", F.cross_entropy(model(x), y))

# one training step in float64: batch statistics of a few pixels make float32 gradients ill-conditioned (PyTorch
# against itself on another BLAS differs as much), float64 shows whether the computation is the same
model = _harness.reload_state(name, model).double()      # batch statistics of the float32 pass undone
x = x.double()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss = F.cross_entropy(model(x), y)
loss.backward()
record("loss64", loss)
for n, p in model.named_parameters():
    if p.grad is not None:
        record(f"grad64.{n}", p.grad)
opt.step()
model.eval()
with torch.no_grad():
    record("logits64_after_step", model(x))
print(name, float(loss))
