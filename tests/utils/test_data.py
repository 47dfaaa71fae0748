"""ember.utils.data against PyTorch: datasets, samplers and random_split draw the same indices for the same
seed, collation of nested structures and its errors, and the DataLoader with 0 and 2 worker processes
(same batches, worker seeding, IterableDataset sharding, failures, timeouts, no orphaned workers)."""
import collections
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import ember
import ember.utils.data as eud

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")
import torch.utils.data as tud  # noqa: E402

Point = collections.namedtuple("Point", "x y")


def lists(obj):
    """Batches as plain Python values, for comparing ember's with PyTorch's."""
    if isinstance(obj, (ember.Tensor, torch.Tensor)):
        return ("tensor", str(obj.dtype).split(".")[-1], obj.tolist())
    if isinstance(obj, dict):
        return {k: lists(v) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return (type(obj).__name__,) + tuple(lists(v) for v in obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(lists(v) for v in obj)
    return obj


def make_dataset(ud):
    class Nested(ud.Dataset):
        def __len__(self):
            return 23

        def __getitem__(self, i):
            return {"img": np.full((2, 3), i, np.float32), "label": i, "w": i / 3, "name": f"n{i}",
                    "pair": (i, np.int64(2 * i)), "pt": Point(np.float64(i), [i, i + 1]), "flag": i % 2 == 0}
    return Nested()


# -- samplers and splits -----------------------------------------------------------------------------


@pytest.mark.parametrize("case", [
    lambda lib, ud, g: list(ud.RandomSampler(range(10), generator=g)),
    lambda lib, ud, g: list(ud.RandomSampler(range(7), num_samples=17, generator=g)),
    lambda lib, ud, g: list(ud.RandomSampler(range(10), replacement=True, num_samples=70, generator=g)),
    lambda lib, ud, g: list(ud.SubsetRandomSampler([3, 9, 4, 1, 7], generator=g)),
    lambda lib, ud, g: list(ud.WeightedRandomSampler([0.1, 0.5, 2.0, 0.3, 1.0], 12, generator=g)),
    lambda lib, ud, g: list(ud.WeightedRandomSampler([0.1, 0.5, 2.0, 0.3, 1.0], 4, replacement=False, generator=g)),
    lambda lib, ud, g: list(ud.BatchSampler(ud.RandomSampler(range(11), generator=g), 3, drop_last=False)),
    lambda lib, ud, g: list(ud.BatchSampler(ud.SequentialSampler(range(11)), 3, drop_last=True)),
    lambda lib, ud, g: [list(s.indices) for s in ud.random_split(range(10), [3, 7], generator=g)],
    lambda lib, ud, g: [list(s.indices) for s in ud.random_split(range(11), [0.5, 0.3, 0.2], generator=g)],
    lambda lib, ud, g: [list(ud.DistributedSampler(range(11), num_replicas=3, rank=r, seed=4)) for r in range(3)],
    lambda lib, ud, g: [list(ud.DistributedSampler(range(11), num_replicas=3, rank=1, drop_last=True,
                                                   shuffle=False))],
])
def test_samplers_draw_pytorchs_indices(case):
    assert case(ember, eud, ember.Generator().manual_seed(3)) == case(torch, tud, torch.Generator().manual_seed(3))


def test_samplers_without_generator_use_the_global_one():
    ember.manual_seed(8)
    torch.manual_seed(8)
    assert list(eud.RandomSampler(range(12))) == list(tud.RandomSampler(range(12)))
    assert list(eud.random_split(range(9), [4, 5])[0].indices) == list(tud.random_split(range(9), [4, 5])[0].indices)


def test_distributed_sampler_set_epoch_reshuffles():
    s, t = eud.DistributedSampler(range(10), 2, 0), tud.DistributedSampler(range(10), 2, 0)
    s.set_epoch(3)
    t.set_epoch(3)
    assert list(s) == list(t) and len(s) == len(t)


def test_datasets():
    x = ember.arange(12.0).reshape(6, 2)
    y = ember.arange(6)
    td = eud.TensorDataset(x, y)
    assert len(td) == 6 and td[2][1].item() == 2
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        eud.TensorDataset(x, ember.arange(5))
    sd = eud.StackDataset(a=td, b=list(range(6)))
    assert sd[1]["b"] == 1 and sd.__getitems__([0, 2])[1]["b"] == 2
    assert eud.StackDataset(td, list("abcdef"))[4][1] == "e"
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        eud.StackDataset(td, [1])
    cd = td + eud.TensorDataset(x[:2], y[:2])
    assert isinstance(cd, eud.ConcatDataset) and len(cd) == 8 and cd[-1][1].item() == 1 and cd[6][1].item() == 0
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        cd[-9]
    sub = eud.Subset(td, [5, 0])
    assert len(sub) == 2 and sub[0][1].item() == 5 and [s[1].item() for s in sub.__getitems__([1, 0])] == [0, 5]

    class Count(eud.IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

        def __len__(self):
            return self.n
    chain = Count(2) + Count(3)
    assert isinstance(chain, eud.ChainDataset) and list(chain) == [0, 1, 0, 1, 2] and len(chain) == 5
    with pytest.raises(ValueError, match="Sum of input lengths does not equal"):
        eud.random_split(range(5), [2, 2])
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        eud.random_split(range(2), [1.0, 0.0])


# -- collation ------------------------------------------------------------------------------------------


def test_default_collate_of_nested_samples_matches_pytorch():
    e, t = make_dataset(eud), make_dataset(tud)
    eb = eud.default_collate([e[i] for i in range(4)])
    tb = tud.default_collate([t[i] for i in range(4)])
    assert lists(eb) == lists(tb)
    assert isinstance(eb["pt"], Point)


@pytest.mark.parametrize("batch", [
    [np.float64(1.5), np.float64(2)], [np.int32(1), np.int32(2)], [True, False], [1.5, 2], [b"a", b"b"],
    [np.array([1, 2], np.int16), np.array([3, 4], np.int16)], [[1, 2], [3, 4]], [(1, "a"), (2, "b")],
])
def test_default_collate_scalars_and_sequences(batch):
    assert lists(eud.default_collate(batch)) == lists(tud.default_collate(batch))


def test_default_convert_matches_pytorch():
    sample = {"a": np.arange(3), "b": (np.float32(2), [np.ones(2)]), "c": "s", "d": Point(np.int64(1), 2)}
    assert lists(eud.default_convert(sample)) == lists(tud.default_convert(sample))


@pytest.mark.parametrize("batch", [
    lambda lib: [lib.zeros(3), lib.zeros(4)],
    lambda lib: [[1, 2], [1]],
    lambda lib: [np.array(["a"]), np.array(["b"])],
    lambda lib: [object(), object()],
])
def test_collate_errors_match_pytorch(batch):
    with pytest.raises(Exception) as te:
        tud.default_collate(batch(torch))
    with pytest.raises(type(te.value)) as ee:
        eud.default_collate(batch(ember))
    assert str(ee.value) == str(te.value)


# -- DataLoader ------------------------------------------------------------------------------------------


class RandomItems:
    """Each item draws from Python's, NumPy's and the framework's global RNGs and reports its worker."""

    def __init__(self, lib, ud):
        self.lib, self.ud = lib, ud

    def __len__(self):
        return 12

    def __getitem__(self, i):
        info = self.ud.get_worker_info()
        wid = -1 if info is None else info.id
        seed = -1 if info is None else info.seed
        return {"i": i, "py": random.random(), "np": float(np.random.rand()), "lib": self.lib.rand(2),
                "worker": wid, "seed": seed}


def _dataset(lib, ud):
    return type("DS", (ud.Dataset,), {"__len__": RandomItems.__len__, "__getitem__": RandomItems.__getitem__,
                                      "__init__": RandomItems.__init__})(lib, ud)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_same_batches_and_worker_seeds_as_pytorch(num_workers):
    def run(lib, ud):
        g = lib.Generator().manual_seed(11)
        dl = ud.DataLoader(_dataset(lib, ud), batch_size=3, shuffle=True, generator=g, num_workers=num_workers)
        lib.manual_seed(2)
        random.seed(2)
        np.random.seed(2)
        return [lists(b) for epoch in range(2) for b in dl]
    assert run(ember, eud) == run(torch, tud)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_nested_collate_through_the_loader(num_workers):
    def run(ud):
        return [lists(b) for b in ud.DataLoader(make_dataset(ud), batch_size=5, num_workers=num_workers,
                                                drop_last=True)]
    assert run(eud) == run(tud)


class Shard:
    """An IterableDataset sharding range(n) by worker."""

    @staticmethod
    def make(ud, n=20):
        class Sharded(ud.IterableDataset):
            def __iter__(self):
                info = ud.get_worker_info()
                if info is None:
                    return iter(range(n))
                return iter(range(info.id, n, info.num_workers))

            def __len__(self):
                return n
        return Sharded()


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("batch_size", [None, 4])
def test_iterable_dataset_sharding(num_workers, batch_size):
    def run(ud):
        return [lists(b) for b in ud.DataLoader(Shard.make(ud), batch_size=batch_size, num_workers=num_workers)]
    assert run(eud) == run(tud)


def test_loader_options():
    ds = eud.TensorDataset(ember.arange(10.0), ember.arange(10))
    seen = []
    dl = eud.DataLoader(ds, batch_size=4, num_workers=2, worker_init_fn=lambda wid: seen.append(wid),
                        prefetch_factor=3, in_order=False, pin_memory=False)
    got = sorted(v for b in dl for v in b[1].tolist())
    assert got == list(range(10)) and len(dl) == 3
    sampler = eud.BatchSampler(eud.SequentialSampler(ds), 3, False)
    assert [b[1].tolist() for b in eud.DataLoader(ds, batch_sampler=sampler)] == [[0, 1, 2], [3, 4, 5], [6, 7, 8],
                                                                                  [9]]
    assert [b[1].item() for b in eud.DataLoader(ds, batch_size=None)][:3] == [0, 1, 2]
    custom = eud.DataLoader(ds, batch_size=5, collate_fn=lambda items: len(items))
    assert list(custom) == [5, 5]
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no accelerator"):
        next(iter(eud.DataLoader(ds, pin_memory=True)))


def test_persistent_workers_keep_their_processes():
    ds = eud.TensorDataset(ember.arange(8))
    dl = eud.DataLoader(ds, batch_size=2, num_workers=2, persistent_workers=True)
    first = [b[0].tolist() for b in dl]
    pids = [w.pid for w in dl._iterator._workers]
    second = [b[0].tolist() for b in dl]
    assert first == second and [w.pid for w in dl._iterator._workers] == pids
    assert all(w.is_alive() for w in dl._iterator._workers)
    workers = dl._iterator._workers
    del dl
    import gc
    gc.collect()
    time.sleep(0.2)
    assert not any(w.is_alive() for w in workers)


class Failing:
    @staticmethod
    def make(ud, action):
        class DS(ud.Dataset):
            def __len__(self):
                return 8

            def __getitem__(self, i):
                if i == 5:
                    action()
                return i
        return DS()


def _raise():
    raise ValueError("bad sample 5")


def _raise_key():
    raise KeyError("missing")


@pytest.mark.parametrize("num_workers", [0, 2])
def test_exception_in_worker_is_reraised_with_its_traceback(num_workers):
    dl = eud.DataLoader(Failing.make(eud, _raise), batch_size=2, num_workers=num_workers)
    with pytest.raises(ValueError) as e:
        list(dl)
    if num_workers:
        msg = str(e.value)
        assert msg.startswith("Caught ValueError in DataLoader worker process ")
        assert "Original Traceback (most recent call last):" in msg and "bad sample 5" in msg and "_raise" in msg
    dl = eud.DataLoader(Failing.make(eud, _raise_key), batch_size=2, num_workers=2)
    with pytest.raises(KeyError) as e:
        list(dl)
    assert "Caught KeyError in DataLoader worker process" in repr(e.value)


def _kill_self():
    os.kill(os.getpid(), signal.SIGKILL)


def test_worker_killed_by_signal_is_reported_quickly():
    dl = eud.DataLoader(Failing.make(eud, _kill_self), batch_size=2, num_workers=2)
    it = iter(dl)
    workers = list(it._workers)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid \d+\) is killed by signal: Killed\. "):
        list(it)
    assert time.monotonic() - t0 < 5
    time.sleep(0.2)
    assert not any(w.is_alive() for w in workers)


def _sleep():
    time.sleep(3)


def test_timeout():
    dl = eud.DataLoader(Failing.make(eud, _sleep), batch_size=2, num_workers=1, timeout=0.5)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0\.5 seconds"):
        list(dl)
    assert time.monotonic() - t0 < 2.5


def test_workers_end_with_the_epoch_and_with_a_dropped_iterator():
    ds = eud.TensorDataset(ember.arange(40))
    it = iter(eud.DataLoader(ds, batch_size=2, num_workers=2))
    workers = list(it._workers)
    next(it)
    del it
    time.sleep(0.3)
    assert not any(w.is_alive() for w in workers)
    it = iter(eud.DataLoader(ds, batch_size=4, num_workers=2))
    workers = list(it._workers)
    assert len(list(it)) == 10
    time.sleep(0.3)
    assert not any(w.is_alive() for w in workers)
    mine = tuple(f"ember-dl-{os.getpid()}-{w.pid}-" for w in workers)
    assert [f for f in os.listdir(eud._utils.shared.SHM_DIR) if f.startswith(mine)] == []


def test_no_worker_outlives_the_program(tmp_path):
    script = tmp_path / "orphan.py"
    script.write_text(
        "import ember, ember.utils.data as ud\n"
        "ds = ud.TensorDataset(ember.arange(100))\n"
        "dl = ud.DataLoader(ds, batch_size=2, num_workers=2, persistent_workers=True)\n"
        "it = iter(dl)\n"
        "next(it)\n"
        "print(' '.join(str(w.pid) for w in it._workers), flush=True)\n")
    root = os.path.dirname(os.path.dirname(ember.__file__))
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=root, env=env)
    assert r.returncode == 0, r.stderr
    pids = [int(p) for p in r.stdout.split()]
    deadline = time.monotonic() + 5
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in pids if _alive(p)]
        time.sleep(0.1)
    assert alive == []


def _alive(pid) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not running
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_batches_from_workers_arrive_through_shared_memory():
    ds = eud.TensorDataset(ember.arange(4000.0).reshape(40, 100))
    batch = next(iter(eud.DataLoader(ds, batch_size=8, num_workers=1)))[0]
    import mmap
    base = batch.numpy()
    while isinstance(base, np.ndarray):
        base = base.base
    assert isinstance(getattr(base, "obj", base), mmap.mmap)
    assert batch[3, 5].item() == 305.0


@pytest.mark.parametrize("case", [
    lambda lib, ud, ds: ud.DataLoader(ds, num_workers=-1),
    lambda lib, ud, ds: ud.DataLoader(ds, timeout=-1),
    lambda lib, ud, ds: ud.DataLoader(ds, prefetch_factor=2),
    lambda lib, ud, ds: ud.DataLoader(ds, persistent_workers=True),
    lambda lib, ud, ds: ud.DataLoader(ds, sampler=ud.SequentialSampler(ds), shuffle=True),
    lambda lib, ud, ds: ud.DataLoader(ds, batch_sampler=ud.BatchSampler(ud.SequentialSampler(ds), 2, False),
                                      batch_size=3),
    lambda lib, ud, ds: ud.DataLoader(ds, batch_size=None, drop_last=True),
    lambda lib, ud, ds: ud.DataLoader(Shard.make(ud), shuffle=True),
    lambda lib, ud, ds: ud.DataLoader(ds, num_workers=1, multiprocessing_context="nope"),
    lambda lib, ud, ds: ud.DataLoader(ds, multiprocessing_context="fork"),
    lambda lib, ud, ds: setattr(ud.DataLoader(ds), "batch_size", 3),
    lambda lib, ud, ds: ud.RandomSampler(ds, num_samples=0),
    lambda lib, ud, ds: ud.RandomSampler(ds, replacement=1),
    lambda lib, ud, ds: ud.WeightedRandomSampler([[1.0]], 2),
    lambda lib, ud, ds: ud.BatchSampler(ud.SequentialSampler(ds), 0, False),
    lambda lib, ud, ds: ud.DistributedSampler(ds, num_replicas=2, rank=2),
])
def test_errors_match_pytorch(case):
    with pytest.raises(Exception) as te:
        case(torch, tud, list(range(6)))
    with pytest.raises(type(te.value)) as ee:
        case(ember, eud, list(range(6)))
    assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("context", ["spawn", "forkserver"])
def test_other_start_methods(context):
    ds = eud.TensorDataset(ember.arange(10.0).reshape(5, 2))
    dl = eud.DataLoader(ds, batch_size=2, num_workers=2, multiprocessing_context=context)
    assert [b[0].tolist() for b in dl] == [[[0.0, 1.0], [2.0, 3.0]], [[4.0, 5.0], [6.0, 7.0]], [[8.0, 9.0]]]


def test_zero_dim_and_empty_tensors_cross_the_process_boundary():
    class D(eud.Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return ember.tensor(float(i)), ember.zeros(0, 2), ember.ones(2, dtype=ember.bfloat16)
    got = list(eud.DataLoader(D(), batch_size=None, num_workers=1))
    assert [tuple(a.shape) for a, _, _ in got] == [(), (), ()] and got[2][0].item() == 2.0
    assert tuple(got[0][1].shape) == (0, 2) and got[0][2].dtype == ember.bfloat16


class ThreadCount:
    """Reports the framework's intra-op thread count where each item is loaded."""

    def __init__(self, lib):
        self.lib = lib

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return self.lib.get_num_threads()


def test_workers_run_one_thread_each_like_pytorch():
    def run(lib, ud):
        return [int(v) for b in ud.DataLoader(ThreadCount(lib), batch_size=2, num_workers=2) for v in b]
    assert run(ember, eud) == run(torch, tud) == [1, 1, 1, 1]
