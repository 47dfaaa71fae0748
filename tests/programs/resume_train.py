"""Training that checkpoints after every step and resumes exactly (the pattern of docs/serialization.md).

    python resume_train.py CHECKPOINT STEPS OUT

Prints "step N" after each step's checkpoint is written; resumes from CHECKPOINT when it exists; writes
the final parameters to OUT (an ember checkpoint)."""
import os
import sys

import numpy as np

import ember
import ember.nn as nn
from ember.utils.data import DataLoader, TensorDataset


def main(ckpt, total_steps, out):
    rng = np.random.default_rng(0)
    x = ember.tensor(rng.standard_normal((60, 4)).astype(np.float32))
    y = ember.tensor(rng.standard_normal((60, 1)).astype(np.float32))
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 1))
    opt = ember.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.05)
    sched = ember.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=total_steps)
    gen = ember.Generator().manual_seed(1)
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, generator=gen)

    step, skip = 0, 0
    if os.path.exists(ckpt):
        ck = ember.load(ckpt)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        sched.load_state_dict(ck["scheduler"])
        gen.set_state(ck["loader_generator"])   # the generator as it was when this epoch's iterator was made
        ember.set_rng_state(ck["rng"])          # dropout's stream, as it was after the last step
        step, skip = ck["step"], ck["batch_in_epoch"]

    while step < total_steps:
        epoch_generator = gen.get_state()       # before iter(): the iterator draws its seed and order from it
        for batch, (xb, yb) in enumerate(loader):
            if batch < skip:                    # batches this epoch already trained on before the restart
                continue
            opt.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            opt.step()
            sched.step()
            step += 1
            ember.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                        "rng": ember.get_rng_state(), "loader_generator": epoch_generator, "step": step,
                        "batch_in_epoch": batch + 1}, ckpt)
            print(f"step {step}", flush=True)
            if step == total_steps:
                break
        skip = 0
    ember.save(model.state_dict(), out)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
