"""timm: create_model across its families with PyTorch's weights (eval logits, a float64 training step), and its
training utilities (create_optimizer_v2, schedulers, Mixup / CutMix, ModelEmaV3) over a few steps.
``argv[2]``: a model name, "training", or "sweep:NAME,NAME,..." (eval logits of each at its own input size)."""
import os
import sys

import _harness
from _harness import record

import numpy as np
import timm
import torch
import torch.nn.functional as F

what = sys.argv[2]
rng = np.random.default_rng(0)

if what.startswith("sweep:"):
    for name in what[len("sweep:"):].split(","):
        torch.manual_seed(0)
        model = _harness.share_weights(name, timm.create_model(name, pretrained=False, num_classes=10)).eval()
        size = model.pretrained_cfg.get("input_size", (3, 224, 224))
        with torch.no_grad():
            record(name, model(torch.tensor(rng.standard_normal((1,) + tuple(size)), dtype=torch.float32)))
        os.remove(_harness.state_path(name)) if _harness.ON_EMBER else None
    sys.exit(0)

if what != "training":
    kwargs = {"num_classes": 7}
    if what.startswith(("vit", "deit", "swin")):
        kwargs["img_size"] = 32 if not what.startswith("swin") else 64
    size = kwargs.get("img_size", 48)
    torch.manual_seed(0)
    model = _harness.share_weights(what, timm.create_model(what, pretrained=False, **kwargs))
    x = torch.tensor(rng.standard_normal((2, 3, size, size)), dtype=torch.float32)
    model.eval()
    with torch.no_grad():
        record("eval_logits", model(x))
        record("features", model.forward_features(x))
    cfg = timm.data.resolve_data_config({}, model=model)
    record("data_config", np.array(cfg["input_size"]))
    model = _harness.reload_state(what, model).double()
    model.train()
    for m in model.modules():
        if hasattr(m, "drop_prob"):
            m.drop_prob = 0.0
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    loss = F.cross_entropy(model(x.double()), torch.tensor([1, 5]))
    loss.backward()
    record("loss64", loss)
    for n, p in model.named_parameters():
        if p.grad is not None:
            record(f"grad64.{n}", p.grad)
    print(what, float(loss))
    sys.exit(0)

# training utilities on a small model
from timm.data import Mixup  # noqa: E402
from timm.loss import SoftTargetCrossEntropy  # noqa: E402
from timm.optim import create_optimizer_v2  # noqa: E402
from timm.scheduler import create_scheduler_v2  # noqa: E402
from timm.utils import ModelEmaV3  # noqa: E402

# in float64: Adam-style updates are +-lr for a gradient that is zero up to rounding, whatever its last bits
torch.manual_seed(0)
model = _harness.share_weights("small", timm.create_model("resnet10t", pretrained=False, num_classes=5)).double()
x = torch.tensor(rng.standard_normal((4, 3, 32, 32)), dtype=torch.float64)
y = torch.tensor([0, 1, 2, 3])
# (not Lion: its update is lr * sign(...), so a gradient that is zero up to rounding moves a weight by +-lr)
for opt_name in ("adamw", "sgd", "lamb", "adabelief", "rmsprop"):
    _harness.reload_state("small", model)
    opt = create_optimizer_v2(model, opt=opt_name, lr=1e-2, weight_decay=0.05)
    sched, epochs = create_scheduler_v2(opt, sched="cosine", num_epochs=4, warmup_epochs=1, warmup_lr=1e-4)
    ema = ModelEmaV3(model, decay=0.9)
    lrs = []
    for step in range(3):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        ema.update(model, step=step)
        sched.step(step + 1)
        lrs.append(opt.param_groups[0]["lr"])
    record(f"{opt_name}.loss", loss)
    record(f"{opt_name}.lrs", np.array(lrs))
    record(f"{opt_name}.conv1", model.conv1[0].weight)
    record(f"{opt_name}.fc", model.fc.weight)
    record(f"{opt_name}.ema_fc", ema.module.fc.weight)
    record(f"{opt_name}.epochs", np.array(epochs))

torch.manual_seed(3)
np.random.seed(3)        # Mixup draws its lambda and mode from NumPy's global generator
mixup = Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, label_smoothing=0.1, num_classes=5)
mx, my = mixup(x.clone(), y.clone())
record("mixup", (mx, my))
record("soft_ce", SoftTargetCrossEntropy()(model(mx), my))
print("ok")
