"""DistributedDataParallel on each rank of a job (tests/distributed/test_ddp.py).

Every rank builds the same model, trains a DDP copy on its shard of each batch, and trains a plain copy on the
whole (concatenated) batch itself: the two must agree within float tolerance, and the DDP parameters must be
bitwise equal on every rank. Prints ``OK rank N`` at the end."""
import sys
import warnings

import numpy as np

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
from ember.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
R, N = dist.get_rank(), dist.get_world_size()
B = 4  # rows per rank


def mlp():
    return nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 3))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 8, 3), nn.ReLU(),
                         nn.Flatten(), nn.Linear(8 * 2 * 2, 3))


def batches(shape, steps, seed=0):
    rng = np.random.default_rng(seed)
    return [(ember.tensor(rng.standard_normal((N * B,) + shape).astype(np.float32)),
             ember.tensor(rng.integers(0, 3, N * B))) for _ in range(steps)]


def shard(t):
    return t[R * B:(R + 1) * B]


def same_on_every_rank(model, what):
    flat = ember.cat([p.detach().reshape(-1) for p in model.parameters()])
    everyone = [ember.zeros_like(flat) for _ in range(N)]
    dist.all_gather(everyone, flat)
    for r in range(N):
        assert ember.equal(everyone[r], flat), f"rank {R}: {what}: parameters differ from rank {r}'s"


def close(a_model, b_model, what, tol=1e-5):
    for (n, a), b in zip(a_model.named_parameters(), b_model.parameters()):
        err = (a.detach() - b.detach()).abs().max().item()
        assert err <= tol * (1 + b.abs().max().item()), f"rank {R}: {what}: {n} differs by {err}"


def train(make, shape, opt_cls=ember.optim.SGD, steps=3, ddp_kwargs=None, hook=None, tol=1e-5, what="",
          convert=lambda m: m, seed=0):
    """A DDP copy of ``make()`` (``convert``-ed) on the shards against a plain copy on the whole batches."""
    ember.manual_seed(R)  # different initial weights on each rank: DDP's broadcast makes them rank 0's
    model = convert(make())
    ember.manual_seed(0)
    ref = make()
    ddp = DDP(model, **(ddp_kwargs or {}))
    if R == 0:
        ref.load_state_dict(model.state_dict())
    dist.broadcast_object_list(holder := [ref.state_dict() if R == 0 else None], src=0)
    ref.load_state_dict(holder[0])
    if hook is not None:
        ddp.register_comm_hook(None, hook)
    opt = opt_cls(ddp.parameters(), lr=0.1)
    ref_opt = opt_cls(ref.parameters(), lr=0.1)
    for x, y in batches(shape, steps, seed):
        opt.zero_grad()
        F.cross_entropy(ddp(shard(x)), shard(y)).backward()
        opt.step()
        ref_opt.zero_grad()
        F.cross_entropy(ref(x), y).backward()
        ref_opt.step()
    same_on_every_rank(ddp.module, what)
    close(ddp.module, ref, what, tol)
    return ddp, ref


# MLP and CNN, SGD and Adam, one bucket per parameter and the default buckets
d, _ = train(mlp, (10,), what="mlp sgd")
assert list(d.state_dict())[0] == "module.0.weight" and d.module is d._modules["module"]
train(mlp, (10,), opt_cls=ember.optim.Adam, what="mlp adam", tol=1e-4)
train(cnn, (1, 8, 8), what="cnn sgd")
d, _ = train(mlp, (10,), ddp_kwargs={"bucket_cap_mb": 0.0001}, what="small buckets")
assert [len(b.params) for b in d._buckets] == [2, 1, 1, 1, 1], [len(b.params) for b in d._buckets]  # 104 bytes
d, _ = train(mlp, (10,), ddp_kwargs={"gradient_as_bucket_view": True}, what="gradient_as_bucket_view")
p0 = next(d.module.parameters())
b, k = d._bucket_of[id(p0)]
assert p0.grad.data_ptr() == b.buffer[b.offsets[k]:].data_ptr(), "grad is not a view of its bucket"

# comm hooks: fp16 / bf16 compression (looser tolerance), a custom hook that sees every bucket once per step
train(mlp, (10,), hook=default_hooks.fp16_compress_hook, tol=2e-3, what="fp16 hook")
train(mlp, (10,), hook=default_hooks.bf16_compress_hook, tol=2e-2, what="bf16 hook")
seen = []


def counting_hook(state, bucket):
    seen.append((bucket.index(), bucket.is_last(), len(bucket.parameters())))
    return default_hooks.allreduce_hook(state, bucket)


d, _ = train(mlp, (10,), hook=counting_hook, steps=2, what="custom hook")
nb = len(d._buckets)
assert sorted(seen) == sorted([(i, i == nb - 1, len(d._buckets[i].params)) for i in range(nb)] * 2), seen
try:
    d.register_comm_hook(None, counting_hook)
except RuntimeError as e:
    assert "can only be called once" in str(e)
else:
    raise AssertionError("a second comm hook was accepted")

# no_sync: the first micro-batch accumulates locally, the second reduces the sum
ember.manual_seed(0)
model, ref = mlp(), mlp()
ref.load_state_dict(model.state_dict())
ddp = DDP(model)
(x1, y1), (x2, y2) = batches((10,), 2, seed=5)
with ddp.no_sync():
    F.cross_entropy(ddp(shard(x1)), shard(y1)).backward()
local = next(ddp.module.parameters()).grad.clone()
F.cross_entropy(ddp(shard(x2)), shard(y2)).backward()
(F.cross_entropy(ref(x1), y1) + F.cross_entropy(ref(x2), y2)).backward()
for a, b in zip(ddp.module.parameters(), ref.parameters()):
    assert (a.grad - b.grad).abs().max().item() < 1e-5, "no_sync accumulation differs from the full batch"
assert not ember.equal(local, next(ddp.module.parameters()).grad)


# unused parameters
class Branchy(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.never = nn.Linear(4, 4)
        self.sometimes = nn.Linear(4, 4)

    def forward(self, x, use):
        h = self.a(x)
        return self.sometimes(h) if use else h


ember.manual_seed(0)
m = DDP(Branchy(), find_unused_parameters=True)
x = ember.randn(B, 4)
m(x, use=(R == 0)).sum().backward()  # "sometimes" is used on rank 0 only
assert m.module.never.weight.grad is None, "a parameter no rank used got a gradient"
g = m.module.sometimes.weight.grad
gs = [ember.zeros_like(g) for _ in range(N)]
dist.all_gather(gs, g)
assert all(ember.equal(gs[0], t) for t in gs), "the gradient of a parameter used on one rank differs across ranks"
ember.manual_seed(0)
m = DDP(Branchy())
m(x, use=False).sum().backward()
try:
    m(x, use=False)
except RuntimeError as e:
    assert "Expected to have finished reduction in the prior iteration" in str(e), str(e)
    assert f"Parameter indices which did not receive grad for rank {R}: 2 3 4 5" in str(e), str(e)
    assert "never.weight" in str(e)
else:
    raise AssertionError("unused parameters without find_unused_parameters were not reported")

# SyncBatchNorm against BatchNorm on the whole batch: uneven shards (rank r has r + 2 rows), 2 steps
sizes = [r + 2 for r in range(N)]
lo, hi = sum(sizes[:R]), sum(sizes[:R + 1])
ember.manual_seed(3)
sbn, bn = nn.SyncBatchNorm(5), nn.BatchNorm2d(5)
with ember.no_grad():
    bn.weight.uniform_()
    bn.bias.uniform_()
sbn.load_state_dict(bn.state_dict())
for step in range(2):
    full = ember.randn(sum(sizes), 5, 3, 3, requires_grad=True)
    wts = ember.randn(sum(sizes), 5, 3, 3)
    part = full.detach()[lo:hi].clone().requires_grad_(True)
    out = sbn(part)
    (out * wts[lo:hi]).sum().backward()
    ref = bn(full)
    (ref * wts).sum().backward()
    assert (out - ref[lo:hi]).abs().max().item() < 1e-5, "SyncBatchNorm output"
    assert (part.grad - full.grad[lo:hi]).abs().max().item() < 1e-4, "SyncBatchNorm input gradient"
    for a, b in ((sbn.weight, bn.weight), (sbn.bias, bn.bias)):
        g = a.grad.clone()
        dist.all_reduce(g)
        assert (g - b.grad).abs().max().item() < 1e-4, "SyncBatchNorm parameter gradient (summed over ranks)"
        a.grad = b.grad = None
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert (getattr(sbn, name).double() - getattr(bn, name).double()).abs().max().item() < 1e-6, name
sbn.eval()
bn.eval()
x = ember.randn(2, 5, 3, 3)
assert ember.allclose(sbn(x), bn(x)), "SyncBatchNorm in evaluation"


# a CNN with BatchNorm, converted to SyncBatchNorm under DDP, trains as the plain CNN on the whole batch
def bn_cnn():
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(4 * 4 * 4, 3))


d, ref = train(bn_cnn, (1, 8, 8), convert=nn.SyncBatchNorm.convert_sync_batchnorm, tol=1e-4, seed=7,
               what="sync bn cnn")
assert isinstance(d.module[1], nn.SyncBatchNorm)
assert (d.module[1].running_var - ref[1].running_var).abs().max().item() < 1e-5

# broadcast_buffers: rank 0's buffers before each forward that follows a synced one (PyTorch's
# require_forward_param_sync): so the first forward under no_grad or no_sync still takes them, the next does not,
# and neither does the first synced forward after it
d = DDP(nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)))
d.eval()
d.module[1].running_mean.fill_(float(R))
d(ember.randn(2, 3))
assert ember.equal(d.module[1].running_mean, ember.zeros(4)), "buffers not taken from rank 0"
d.module[1].running_mean.fill_(float(R))
with ember.no_grad():
    d(ember.randn(2, 3))
assert ember.equal(d.module[1].running_mean, ember.zeros(4)), "the forward after a synced one broadcasts"
d.module[1].running_mean.fill_(float(R))
with d.no_sync():
    d(ember.randn(2, 3))
d(ember.randn(2, 3))
assert ember.equal(d.module[1].running_mean, ember.full((4,), float(R))), "buffers synced after an unsynced forward"
d(ember.randn(2, 3))
assert ember.equal(d.module[1].running_mean, ember.zeros(4)), "buffers not taken after a synced forward"

# PyTorch 2.13's forward_sync_buffers: False still broadcasts at construction; broadcast_buffers=False does not
for kw, at_init in (({"broadcast_buffers": False}, False), ({"forward_sync_buffers": False}, True)):
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    m[1].running_mean.fill_(float(R))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        d = DDP(m, **kw)
    assert [w.category for w in caught] == ([FutureWarning] if "broadcast_buffers" in kw else []), kw
    want = ember.zeros(4) if at_init and R else ember.full((4,), float(R))
    assert ember.equal(m[1].running_mean, want), f"buffers at construction with {kw}"
    m[1].running_mean.fill_(float(R))
    d.eval()
    d(ember.randn(2, 3))
    assert ember.equal(m[1].running_mean, ember.full((4,), float(R))), f"buffers before forward with {kw}"
    assert d.broadcast_buffers is False and d.forward_sync_buffers is False

# DistributedSampler takes the rank and the world size from the process group
sampler = ember.utils.data.DistributedSampler(list(range(10)), shuffle=False)
padded = (list(range(10)) * 2)[:10 + (-10) % N]  # padded with the first indices to a multiple of N
assert sampler.num_replicas == N and sampler.rank == R and list(sampler) == padded[R::N]

# errors in PyTorch's words
try:
    DDP(nn.Linear(2, 2).requires_grad_(False))
except RuntimeError as e:
    assert "doesn't have any parameter that requires a gradient" in str(e)
try:
    DDP(nn.Linear(2, 2), device_ids=[0])
except ValueError as e:
    assert "device_ids and output_device arguments only work with" in str(e)

dist.destroy_process_group()
print(f"OK rank {R}", flush=True)
sys.exit(0)
