"""Every collective on every dtype against NumPy, run on each rank of a job (tests/distributed/test_collectives.py).

Rank r's data is ``base(r)``: small integers, so every sum, product, min and max is exact in each dtype and
the expected results are computed with NumPy from all ranks' data. Prints ``OK rank N`` at the end."""
import sys
import warnings

import numpy as np

import ember
import ember.distributed as dist

dist.init_process_group("gloo")
R, N = dist.get_rank(), dist.get_world_size()
DTYPES = [ember.float32, ember.float64, ember.float16, ember.bfloat16, ember.int8, ember.uint8, ember.int16,
          ember.int32, ember.int64, ember.bool, ember.complex64, ember.complex128]
SHAPE = (2, 3)


def base(r, dtype, shape=SHAPE):
    """Rank r's tensor: values 0..3 shifted by the rank (bools alternate), exact in every dtype."""
    k = int(np.prod(shape))
    v = (np.arange(k) + r) % 4 + (1 if dtype != ember.bool else 0)
    if dtype == ember.bool:
        v = (np.arange(k) + r) % 2
    if dtype.is_complex:
        v = v + 1j * ((np.arange(k) * (r + 1)) % 3)
    return ember.tensor(v.reshape(shape)).to(dtype)


def np_of(t):
    return t.to(ember.complex128 if t.dtype.is_complex else
                (ember.bool if t.dtype == ember.bool else ember.float64)).numpy()


def same(t, expected, what):
    """``t`` equals ``expected`` (computed in float64 / int64) rounded to ``t``'s dtype."""
    got = np_of(t)
    expected = np_of(ember.tensor(np.asarray(expected)).to(t.dtype))
    if got.shape != np.shape(expected) or not np.array_equal(got, expected):
        raise AssertionError(f"rank {R}: {what}: got {got.tolist()} expected {np.asarray(expected).tolist()}")


def everyone(dtype, shape=SHAPE):
    return np.stack([np_of(base(r, dtype, shape)) for r in range(N)])


NP_OPS = {dist.ReduceOp.SUM: lambda a: a.sum(0), dist.ReduceOp.PRODUCT: lambda a: a.prod(0),
          dist.ReduceOp.MIN: lambda a: a.min(0), dist.ReduceOp.MAX: lambda a: a.max(0)}
INT_OPS = {dist.ReduceOp.BAND: np.bitwise_and.reduce, dist.ReduceOp.BOR: np.bitwise_or.reduce,
           dist.ReduceOp.BXOR: np.bitwise_xor.reduce}


def expected_reduce(dtype, op):
    a = everyone(dtype)
    if dtype == ember.bool:
        return {dist.ReduceOp.SUM: a.any(0), dist.ReduceOp.MAX: a.any(0), dist.ReduceOp.BOR: a.any(0),
                dist.ReduceOp.PRODUCT: a.all(0), dist.ReduceOp.MIN: a.all(0), dist.ReduceOp.BAND: a.all(0),
                dist.ReduceOp.BXOR: np.logical_xor.reduce(a, 0)}[op]
    if op in INT_OPS:
        return INT_OPS[op](a.astype(np.int64), 0)
    if op == dist.ReduceOp.AVG:  # the exact sum divided as ``tensor / N`` divides in the dtype
        if not (dtype.is_floating_point or dtype.is_complex):
            return np.trunc(a.sum(0) / N)
        return np_of(ember.tensor(a.sum(0)).to(dtype) / N)
    return NP_OPS[op](a)


def ops_for(dtype):
    if dtype == ember.bool:
        return [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX, dist.ReduceOp.BAND,
                dist.ReduceOp.BOR, dist.ReduceOp.BXOR]
    if dtype.is_complex:
        return [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.AVG]
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX, dist.ReduceOp.AVG]
    return ops if dtype.is_floating_point else ops + list(INT_OPS)


for dtype in DTYPES:
    # all_reduce / reduce: every op valid for the dtype, also async and on a non-contiguous view
    for op in ops_for(dtype):
        if op == dist.ReduceOp.AVG and dtype in (ember.uint8, ember.int8) and N > 2:
            continue  # sums overflow the 8-bit range before the division, as in PyTorch
        if op == dist.ReduceOp.PRODUCT and dtype in (ember.int8, ember.uint8, ember.float16, ember.bfloat16) \
                and N > 2:
            continue  # 4^4 overflows 8 bits; float16 / bfloat16 products stay exact only for 2 ranks
        t = base(R, dtype)
        dist.all_reduce(t, op=op)
        exp = expected_reduce(dtype, op)
        same(t, exp, f"all_reduce {op!r} {dtype}")
        t = base(R, dtype)
        dist.reduce(t, dst=N - 1, op=op)
        same(t, exp if R == N - 1 else np_of(base(R, dtype)), f"reduce {op!r} {dtype}")
    t = base(R, dtype)
    w = dist.all_reduce(t, async_op=True)
    w.wait()
    assert w.is_completed() and w.is_success()
    same(t, expected_reduce(dtype, dist.ReduceOp.SUM), f"async all_reduce {dtype}")
    big = base(R, dtype, (3, 2)).t()  # a transposed (non-contiguous) view, written back in place
    v0 = big._version
    dist.all_reduce(big)
    assert big._version > v0
    same(big, expected_reduce(dtype, dist.ReduceOp.SUM).reshape(3, 2).T if dtype != ember.bool else
         np.stack([np_of(base(r, dtype, (3, 2)).t()) for r in range(N)]).any(0), f"all_reduce non-contiguous {dtype}")

    # broadcast
    for src in range(N):
        t = base(R, dtype)
        dist.broadcast(t, src=src)
        same(t, np_of(base(src, dtype)), f"broadcast from {src} {dtype}")

    # all_gather (list and into one tensor, concatenated and stacked)
    outs = [ember.zeros(SHAPE, dtype=dtype) for _ in range(N)]
    dist.all_gather(outs, base(R, dtype))
    for r in range(N):
        same(outs[r], np_of(base(r, dtype)), f"all_gather[{r}] {dtype}")
    cat = ember.zeros((N * SHAPE[0], SHAPE[1]), dtype=dtype)
    dist.all_gather_into_tensor(cat, base(R, dtype))
    same(cat, np.concatenate(everyone(dtype)), f"all_gather_into_tensor {dtype}")
    stk = ember.zeros((N,) + SHAPE, dtype=dtype)     # stacked: gloo wants the input as one of the output's chunks
    dist.all_gather_into_tensor(stk, base(R, dtype).unsqueeze(0))
    same(stk, everyone(dtype), f"all_gather_into_tensor stacked {dtype}")

    # gather / scatter, to and from every root
    for root in range(N):
        gl = [ember.zeros(SHAPE, dtype=dtype) for _ in range(N)] if R == root else None
        dist.gather(base(R, dtype), gl, dst=root)
        if R == root:
            for r in range(N):
                same(gl[r], np_of(base(r, dtype)), f"gather[{r}] to {root} {dtype}")
        out = ember.zeros(SHAPE, dtype=dtype)
        dist.scatter(out, [base(r + 10 * root, dtype) for r in range(N)] if R == root else None, src=root)
        same(out, np_of(base(R + 10 * root, dtype)), f"scatter from {root} {dtype}")

    # reduce_scatter (list and tensor), when the dtype sums
    if dtype != ember.bool:
        ins = [base(R + 3 * i, dtype) for i in range(N)]
        out = ember.zeros(SHAPE, dtype=dtype)
        dist.reduce_scatter(out, ins)
        same(out, sum(np_of(base(r + 3 * R, dtype)) for r in range(N)), f"reduce_scatter {dtype}")
        full = ember.cat([base(R + 3 * i, dtype) for i in range(N)])
        out = ember.zeros(SHAPE, dtype=dtype)
        dist.reduce_scatter_tensor(out, full)
        same(out, sum(np_of(base(r + 3 * R, dtype)) for r in range(N)), f"reduce_scatter_tensor {dtype}")

    # all_to_all_single: even split, then uneven split sizes; all_to_all with lists
    inp = ember.stack([base(R * N + j, dtype) for j in range(N)])
    out = ember.zeros_like(inp)
    dist.all_to_all_single(out, inp)
    same(out, np.stack([np_of(base(r * N + R, dtype)) for r in range(N)]), f"all_to_all_single {dtype}")
    sizes = [j + 1 for j in range(N)]  # rank R sends j+1 rows to rank j, so receives R+1 rows from each
    inp = ember.cat([base(R * N + j, dtype, (j + 1, 2)) for j in range(N)])
    out = ember.zeros((N * (R + 1), 2), dtype=dtype)
    dist.all_to_all_single(out, inp, output_split_sizes=[R + 1] * N, input_split_sizes=sizes)
    same(out, np.concatenate([np_of(base(r * N + R, dtype, (R + 1, 2))) for r in range(N)]),
         f"all_to_all_single uneven {dtype}")
    outs = [ember.zeros((R + 1, 2), dtype=dtype) for _ in range(N)]
    dist.all_to_all(outs, [base(R * N + j, dtype, (j + 1, 2)) for j in range(N)])
    for r in range(N):
        same(outs[r], np_of(base(r * N + R, dtype, (R + 1, 2))), f"all_to_all[{r}] {dtype}")

    # point to point: a ring of send/recv, then isend/irecv and batch_isend_irecv the other way round
    nxt, prv = (R + 1) % N, (R - 1) % N
    t = ember.zeros(SHAPE, dtype=dtype)
    if R % 2 == 0:
        dist.send(base(R, dtype), dst=nxt)
        src = dist.recv(t, src=prv)
    else:
        src = dist.recv(t)
        dist.send(base(R, dtype), dst=nxt)
    assert src == prv, (src, prv)
    same(t, np_of(base(prv, dtype)), f"send/recv {dtype}")
    t = ember.zeros(SHAPE, dtype=dtype)
    works = [dist.isend(base(R, dtype), dst=prv), dist.irecv(t, src=nxt)]
    for w in works:
        w.wait()
    same(t, np_of(base(nxt, dtype)), f"isend/irecv {dtype}")
    t = ember.zeros(SHAPE, dtype=dtype)
    ops = [dist.P2POp(dist.isend, base(R + 5, dtype), nxt), dist.P2POp(dist.irecv, t, prv)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    same(t, np_of(base(prv + 5, dtype)), f"batch_isend_irecv {dtype}")

# objects
objs = [None] * N
dist.all_gather_object(objs, {"rank": R, "data": list(range(R))})
assert objs == [{"rank": r, "data": list(range(r))} for r in range(N)], objs
lst = [R, "x" * R, None] if R == 1 else [None, None, None]
dist.broadcast_object_list(lst, src=1)
assert lst == [1, "x", None], lst
got = [None] * N if R == 0 else None
dist.gather_object(("g", R), got, dst=0)
assert R != 0 or got == [("g", r) for r in range(N)], got
out = [None]
dist.scatter_object_list(out, [{"to": r} for r in range(N)] if R == N - 1 else None, src=N - 1)
assert out == [{"to": R}], out
t = ember.arange(4.0)
objs = [None] * N
dist.all_gather_object(objs, t * R)  # tensors travel pickled
assert all(ember.equal(objs[r], ember.arange(4.0) * r) for r in range(N))

# groups: the even ranks; the others are left out and warned
evens = dist.new_group([r for r in range(N) if r % 2 == 0])
if R % 2 == 0:
    assert dist.get_world_size(evens) == (N + 1) // 2 and dist.get_rank(evens) == R // 2
    assert dist.get_process_group_ranks(evens) == list(range(0, N, 2))
    t = ember.tensor([float(R)])
    dist.all_reduce(t, group=evens)
    same(t, np.array([float(sum(range(0, N, 2)))]), "all_reduce in a group")
    t = ember.tensor([float(R)])
    last = (N - 1) // 2 * 2
    dist.broadcast(t, src=last, group=evens)  # a global rank
    same(t, np.array([float(last)]), "broadcast in a group from a global rank")
    t = ember.tensor([float(R)])
    dist.broadcast(t, group=evens, group_src=0)
    same(t, np.array([0.0]), "broadcast in a group from a group rank")
    assert dist.get_global_rank(evens, 0) == 0 and dist.get_group_rank(evens, R) == R // 2
else:
    assert evens is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(evens) == -1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert dist.all_reduce(ember.ones(1), group=evens) is None
    assert "does not belong to the given group" in str(caught[0].message)

# errors in PyTorch's words
def raises(exc, text, fn):
    try:
        fn()
    except exc as e:
        assert text in str(e), (text, str(e))
    else:
        raise AssertionError(f"no {exc.__name__}: {text}")


raises(TypeError, "Expected parameter `tensor` of type torch.Tensor", lambda: dist.all_reduce([1.0]))
raises(ValueError, "Must specify global_rank or group_rank", lambda: dist.broadcast(ember.ones(1)))
raises(ValueError, "Can't specify both group_rank and global_rank", lambda: dist.broadcast(ember.ones(1), 0,
                                                                                       group_src=0))
raises(ValueError, "does not support", lambda: dist.all_reduce(ember.ones(1, dtype=ember.complex64),
                                                               op=dist.ReduceOp.MAX))
raises(RuntimeError, "Cannot use ReduceOp.BAND with non-integral dtype",
       lambda: dist.all_reduce(ember.ones(1), op=dist.ReduceOp.BAND))
raises(ValueError, "should not be the same as the rank of the current process", lambda: dist.send(ember.ones(1), R))
raises(ValueError, "Invalid usage of tensors with different dtypes",
       lambda: dist.all_gather([ember.ones(1)] * N, ember.ones(1, dtype=ember.float64)))
# gloo's checks (PyTorch's words): the output's chunks along dim 0, one per rank, each of the input's sizes
raises(RuntimeError, f"ProcessGroupGloo::allgather: invalid output tensor list at index 0 (expected length {N}, got "
       f"{N - 1})", lambda: dist.all_gather_into_tensor(ember.ones(N - 1), ember.ones(1)))
raises(RuntimeError, "ProcessGroupGloo::allgather: invalid tensor size at index 0 (expected (2), got (1, 2))",
       lambda: dist.all_gather_into_tensor(ember.ones(N, 2), ember.ones(2)))
raises(ValueError, "trying to initialize the default process group twice!", lambda: dist.init_process_group("gloo"))
if R == 0:
    raises(ValueError, "must be specified on destination rank", lambda: dist.gather(ember.ones(1), None, dst=0))

# CUDA tensors: staged through the host (on tests/fake_cupy.py's stand-in when there is no GPU)
def cuda_checks():
    t = ember.full((2, 3), float(R + 1)).cuda()
    dist.all_reduce(t)
    assert t.device.type == "cuda" and not isinstance(t._data, np.ndarray)
    same(t.cpu(), np.full((2, 3), float(sum(range(1, N + 1)))), "all_reduce on cuda")
    t = ember.full((4,), float(R)).cuda()
    dist.broadcast(t, src=N - 1)
    same(t.cpu(), np.full(4, float(N - 1)), "broadcast on cuda")
    outs = [ember.zeros(2).cuda() for _ in range(N)]
    dist.all_gather(outs, ember.full((2,), float(R)).cuda())
    assert all(o.device.type == "cuda" for o in outs)
    same(ember.stack([o.cpu() for o in outs]), np.repeat(np.arange(N, dtype=float)[:, None], 2, 1), "all_gather cuda")


if ember.cuda.is_available():
    cuda_checks()
else:
    from tests import fake_cupy
    with fake_cupy.install():
        cuda_checks()

# functional collectives: new tensors, the argument untouched; all_to_all_single_autograd differentiates
import ember.distributed._functional_collectives as funcol  # noqa: E402

world = dist.group.WORLD
x = ember.full((2, 3), float(R + 1))
y = funcol.wait_tensor(funcol.all_reduce(x, "sum", world))
same(y, np.full((2, 3), float(sum(range(1, N + 1)))), "functional all_reduce")
same(x, np.full((2, 3), float(R + 1)), "functional all_reduce leaves its argument")
g = funcol.all_gather_tensor(ember.full((2, 1), float(R)), 1, world)
same(g, np.repeat(np.arange(N, dtype=float)[None, :], 2, 0), "all_gather_tensor along dim 1")
rs = funcol.reduce_scatter_tensor(ember.arange(2.0 * N).reshape(2, N) * (R + 1), "sum", 1, world)
same(rs, (np.arange(2.0 * N).reshape(2, N) * sum(range(1, N + 1)))[:, R:R + 1], "reduce_scatter_tensor along dim 1")
inp = ember.cat([ember.full((j + 1, 2), float(R * N + j)) for j in range(N)]).requires_grad_(True)
out = funcol.all_to_all_single_autograd(inp, [R + 1] * N, [j + 1 for j in range(N)], world)
same(out.detach(), np.concatenate([np.full((R + 1, 2), float(r * N + R)) for r in range(N)]), "all_to_all autograd")
(out * (R + 1)).sum().backward()  # each row's gradient is its receiver's factor
same(inp.grad, np.concatenate([np.full((j + 1, 2), float(j + 1)) for j in range(N)]), "all_to_all_single backward")

# Work.get_future: chained callbacks run when the chain is waited on (DDP's comm hooks are built on it)
t = ember.full((3,), float(R + 1))
fut = dist.all_reduce(t, async_op=True).get_future()
doubled = fut.then(lambda f: f.value()[0] * 2)
same(doubled.wait(), np.full(3, 2.0 * sum(range(1, N + 1))), "get_future().then()")
assert fut.done() and fut.value()[0] is t
futs = [dist.all_reduce(ember.ones(2), async_op=True).get_future() for _ in range(3)]
assert len(ember.futures.collect_all(futs).wait()) == 3 and all(f.done() for f in futs)

dist.barrier()
dist.monitored_barrier()
w = dist.barrier(async_op=True)
w.wait()
dist.destroy_process_group()
assert not dist.is_initialized()
raises(ValueError, "Default process group has not been initialized", lambda: dist.get_rank())
print(f"OK rank {R}", flush=True)
sys.exit(0)
