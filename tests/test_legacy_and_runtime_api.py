"""Storages (``TypedStorage`` and the legacy per-dtype classes), the Tensor methods around memory (``set_``,
``share_memory_``, ``new``, ``resize``, ``apply_`` / ``map_``), inference tensors, and the small modules of
``torch/__init__.py`` (``torch.cpu``, ``torch.signal.windows``, ``torch.multiprocessing``, ``torch.torch_version``,
``torch.types``, ``torch.functional``, ``Stream`` / ``Event``), each against PyTorch."""
import os
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# ---------------------------------------------------------------------------------------------------- storages
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "bool", "float16", "complex64"])
def test_tensor_storage_is_a_typed_storage_as_in_pytorch(dtype):
    data = [1, 0, 3, 1]
    e, t = ember.tensor(data, dtype=getattr(ember, dtype)), torch.tensor(data, dtype=getattr(torch, dtype))
    es, ts = e.storage(), t.storage()
    assert es.size() == ts.size() and len(es) == len(ts) and es.nbytes() == ts.nbytes()
    assert es.element_size() == ts.element_size() and es.tolist() == ts.tolist() and es[1] == ts[1]
    assert es.pickle_storage_type() == ts.pickle_storage_type()
    assert e.storage_type().__name__ == t.storage_type().__name__
    legacy = es.pickle_storage_type()
    assert isinstance(es, getattr(ember, legacy)) and isinstance(ts, getattr(torch, legacy))
    assert not isinstance(es, ember.DoubleStorage if dtype != "float64" else ember.FloatStorage)
    assert es.data_ptr() == e.data_ptr()


def test_typed_storage_shares_memory_and_converts():
    e, t = ember.arange(4.0), torch.arange(4.0)
    es, ts = e.storage(), t.storage()
    es[2], ts[2] = 9.0, 9.0
    assert e.tolist() == t.tolist() == [0.0, 1.0, 9.0, 3.0]
    es.fill_(1.5)
    assert e.tolist() == [1.5] * 4
    assert es.double().dtype == ember.float64 and es.long().tolist() == [1, 1, 1, 1]
    assert es.clone().data_ptr() != es.data_ptr()
    with pytest.raises(RuntimeError, match="slices are only supported in UntypedStorage.__getitem__"):
        ts[1:2]
    with pytest.raises(RuntimeError, match="slices are only supported in UntypedStorage.__getitem__"):
        es[1:2]
    with pytest.raises(IndexError, match="out of range for storage of size 4"):
        es[4]


def test_legacy_storage_classes_and_helpers():
    for L in (ember, torch):
        assert L.FloatStorage(3).size() == 3 and L.LongStorage([1, 2]).tolist() == [1, 2]
        assert L.DoubleStorage.dtype == L.float64 and L.Storage is L.FloatStorage
        assert L.is_storage(L.ones(2).storage()) and L.is_storage(L.ones(2).untyped_storage())
        assert not L.is_storage(L.ones(2))
        assert L.tensor(L.FloatStorage([1, 2])).tolist() == [1.0, 2.0]
        assert L.TypedStorage([1.5], dtype=L.float64).tolist() == [1.5]
    assert ember.typename(ember.ones(1)) == torch.typename(torch.ones(1)) == "torch.FloatTensor"
    assert ember.typename(1) == torch.typename(1) == "int"
    assert ember.typename(ember.ones(2).storage()) == "ember.storage.TypedStorage"


def test_typed_storage_warns_once_at_the_callers_line():
    import ember.storage as st
    st._WARNED.clear()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        ember.ones(2).storage()
        ember.ones(2).storage()
    hits = [w for w in rec if "TypedStorage is deprecated" in str(w.message)]
    assert len(hits) == 1 and hits[0].filename == __file__


# ------------------------------------------------------------------------------------- memory-level Tensor methods
def test_set_points_a_tensor_at_another_tensor_or_storage():
    for L in (ember, torch):
        x = L.arange(4.0)
        y = L.zeros(5).set_(x.untyped_storage(), 1, (2,), (1,))
        assert y.tolist() == [1.0, 2.0] and not y.is_set_to(x)
        z = L.zeros(3).set_(x)
        assert z.is_set_to(x) and z.tolist() == x.tolist()
        z[0] = 7.0
        assert x[0].item() == 7.0
        assert L.zeros(3).set_().shape == (0,)
        with pytest.raises(RuntimeError, match="Could not set tensor of type double to a tensor of type float"):
            x.set_(L.zeros(2, dtype=L.float64))
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            L.ones(2, requires_grad=True).set_(x)
    # past the end of the storage: PyTorch grows the storage (those bytes uninitialized); ember refuses, since the
    # tensors already viewing it would not see a grown copy
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 16"):
        ember.zeros(1).set_(ember.arange(4.0).untyped_storage(), 2, (3,), (1,))


def test_share_memory_is_seen_by_a_forked_process():
    x = ember.arange(4.0)
    assert not x.is_shared()
    assert x.share_memory_() is x and x.is_shared() and x.untyped_storage().is_shared()
    pid = os.fork()
    if pid == 0:
        x.add_(10)
        os._exit(0)
    os.waitpid(pid, 0)
    assert x.tolist() == [10.0, 11.0, 12.0, 13.0]


def test_pinning_needs_an_accelerator_as_in_a_cpu_build():
    if ember.cuda.is_available():
        pytest.skip("a GPU is present: pin_memory pins")
    for L in (ember, torch):
        assert not L.ones(2).is_pinned()
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available."):
            L.ones(2).pin_memory()


def test_legacy_new_resize_apply_map():
    for L in (ember, torch):
        x = L.arange(4.0)
        assert x.new(2, 3).shape == (2, 3) and x.new([1, 2]).tolist() == [1.0, 2.0] and x.new().shape == (0,)
        assert x.new(L.Size([2])).shape == (2,) and x.new([1]).dtype == L.float32
        assert x.resize(2, 2).tolist() == [[0.0, 1.0], [2.0, 3.0]] and x.resize_as(L.ones(4, 1)).shape == (4, 1)
        with pytest.raises(RuntimeError, match="requested resize to 3 \\(3 elements in total\\), but the given tensor "
                                               "has a size of 4 \\(4 elements\\)"):
            x.resize(3)
        m = L.tensor([1.0, 2.0])
        m.apply_(lambda v: v * 10)
        m.map_(L.tensor([1.0, 1.0]), lambda a, b: a + b)
        m.map2_(L.tensor([1.0, 1.0]), L.tensor([2.0, 2.0]), lambda a, b, c: a + b * c)
        assert m.tolist() == [13.0, 23.0]
        assert x.name is None and x.volatile is False and x.const_data_ptr() == x.data_ptr()
        with pytest.raises(RuntimeError, match="reinforce\\(\\) was removed."):
            x.reinforce(1.0)
        p, s = L.nn.Parameter(L.zeros(2)), L.ones(2)
        with L.no_grad():  # as load_state_dict calls it
            assert p.module_load(s).tolist() == [1.0, 1.0] and p.module_load(s, assign=True).tolist() == [1.0, 1.0]
        assert not p.module_load(s, assign=True).requires_grad


def test_inference_tensors_behave_as_pytorch():
    for L in (ember, torch):
        with L.inference_mode():
            x = L.ones(2)
            v = x[:1]
        assert x.is_inference() and v.is_inference() and L.is_inference(x) and not (x + 1).is_inference()
        assert not L.ones(1).is_inference()
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
            x.add_(1)
        if L is torch:  # PyTorch's check runs after the update; ember refuses before writing
            with L.inference_mode():
                x.sub_(1)
        with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor outside InferenceMode"):
            x.requires_grad_()
        with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
            L.ones(2, requires_grad=True) * x
        with L.inference_mode():
            x.add_(1)
        assert x.clone().add_(1).tolist() == [3.0, 3.0]


# ----------------------------------------------------------------------------- torch/__init__.py's small helpers
def test_default_tensor_type_flush_denormal_and_build_facts():
    try:
        for L in (ember, torch):
            L.set_default_tensor_type(L.DoubleTensor)
            assert L.get_default_dtype() == L.float64 and L.ones(1).dtype == L.float64
            L.set_default_tensor_type("torch.FloatTensor")
            assert L.get_default_dtype() == L.float32
            with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
                L.set_default_tensor_type(L.LongTensor)
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)
    assert ember.set_flush_denormal(False) is False
    assert ember.has_lapack and ember.has_spectral and ember.legacy_contiguous_format is ember.contiguous_format
    assert repr(ember.channels_last_3d) == "ember.channels_last_3d"


def test_from_file_maps_a_file(tmp_path):
    path = str(tmp_path / "data.bin")
    np.arange(6, dtype=np.float32).tofile(path)
    for L in (ember, torch):
        t = L.from_file(path, shared=False, size=6, dtype=L.float32)
        assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        t[0] = 9.0  # copy-on-write: the file keeps its bytes
        assert np.fromfile(path, np.float32)[0] == 0.0
    s = ember.from_file(path, shared=True, size=6, dtype=ember.float32)
    s[1] = 7.0
    del s
    assert np.fromfile(path, np.float32)[1] == 7.0
    with pytest.raises(RuntimeError, match="unable to mmap 400 bytes from file"):
        ember.from_file(path, shared=False, size=100)


def test_cpu_module_streams_and_events():
    for L in (ember, torch):
        assert L.cpu.is_available() and L.cpu.device_count() == 1 and L.cpu.current_device() == "cpu"
        assert L.get_device_module("cpu") is L.cpu
        s = L.cpu.Stream()
        with L.cpu.stream(s):
            assert L.cpu.current_stream() is s
        assert L.cpu.current_stream() is not s
        g = L.Stream()
        assert g.query() and g.device_index == -1 and repr(g).endswith("device_index=-1, stream_id=0")
        e = L.Event()
        assert e.query()
        with pytest.raises(RuntimeError, match="cpu backend doesn't support events."):
            e.record()
    assert ember.cpu.get_capabilities().keys() == torch.cpu.get_capabilities().keys()
    mine, theirs = ember.cpu.get_capabilities(), torch.cpu.get_capabilities()
    assert {k: v for k, v in mine.items() if isinstance(v, bool)} == \
           {k: v for k, v in theirs.items() if isinstance(v, bool)}
    assert issubclass(ember.OutOfMemoryError, RuntimeError) and ember.cuda.OutOfMemoryError is ember.OutOfMemoryError


@pytest.mark.parametrize("name", ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
                                  "general_hamming", "hamming", "hann", "kaiser", "nuttall"])
def test_signal_windows_match_pytorch(name):
    kw = {"a": [0.5, 0.3, 0.2]} if name == "general_cosine" else {}
    for M in (0, 1, 2, 7, 8):
        for sym in (True, False):
            for dt in ("float32", "float64"):
                e = getattr(ember.signal.windows, name)(M, sym=sym, dtype=getattr(ember, dt), **kw)
                t = getattr(torch.signal.windows, name)(M, sym=sym, dtype=getattr(torch, dt), **kw)
                assert e.dtype.name == str(t.dtype).split(".")[-1] and tuple(e.shape) == tuple(t.shape)
                np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6 if dt == "float32" else 1e-14,
                                           atol=1e-7 if dt == "float32" else 1e-15)
    for L in (ember, torch):
        with pytest.raises(ValueError, match="requires non-negative window length, got M=-1"):
            getattr(L.signal.windows, name)(-1, **kw)
        with pytest.raises(ValueError, match="expects float32 or float64 dtypes, got"):
            getattr(L.signal.windows, name)(3, dtype=L.int64, **kw)
    assert ember.windows is ember.signal.windows


def _child(i, path):
    with open(f"{path}.{i}", "w") as f:
        f.write(str(i * i))


def _failing_child(i):
    if i == 1:
        raise ValueError("child one failed")


def test_multiprocessing_spawn_and_sharing_strategies(tmp_path):
    mp = ember.multiprocessing
    assert mp.get_sharing_strategy() in mp.get_all_sharing_strategies() == torch.multiprocessing.\
        get_all_sharing_strategies()
    mp.set_sharing_strategy("file_system")
    assert mp.get_sharing_strategy() == "file_system"
    mp.set_sharing_strategy("file_descriptor")
    assert mp.Queue is not None and mp.Process is not None
    path = str(tmp_path / "out")
    mp.start_processes(_child, args=(path,), nprocs=2, start_method="fork")
    assert [open(f"{path}.{i}").read() for i in range(2)] == ["0", "1"]
    with pytest.raises(mp.ProcessRaisedException, match="-- Process 1 terminated with the following error:"):
        mp.start_processes(_failing_child, nprocs=2, start_method="fork")


def test_torch_version_compares_as_pytorchs():
    from ember.torch_version import TorchVersion as E
    from torch.torch_version import TorchVersion as T
    cases = ["1.10.0a", "1.10.0", "1.10.0rc1", "1.10.0.dev20210101", "1.10.0.post1", "2.0", "2.0.0+cu118", "1.2.1",
             "2.13.0+ember0.1.0", "1.10.0b2"]
    for a in cases:
        for b in cases + [(1, 2), (2, 13), (1, 10, 0)]:
            for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__"):
                if isinstance(b, tuple) and op == "__eq__":
                    continue
                assert getattr(E(a), op)(b) == getattr(T(a), op)(b), (a, op, b)


def test_types_and_functional_modules():
    assert ember.types.Number is not None and ember.types.Device is not None and ember.types._size is not None
    for name in ember.functional.__all__:
        assert hasattr(torch.functional, name), name
        assert getattr(ember.functional, name) is getattr(ember, name)


@pytest.mark.parametrize("n,kw", [(1, dict(stride=2, padding=1)), (2, dict(dilation=2)), (2, dict(groups=3)),
                                  (3, dict(padding=1))])
def test_nn_grad_convolution_gradients_match_pytorch(n, kw):
    r = np.random.default_rng(n)
    x = r.standard_normal((2, 3) + (7,) * n)
    w = r.standard_normal((6, 3 // kw.get("groups", 1)) + (3,) * n)
    y = torch.nn.functional.__dict__[f"conv{n}d"](torch.tensor(x), torch.tensor(w), **kw)
    go = r.standard_normal(tuple(y.shape))
    eg, tg = ember.nn.grad, torch.nn.grad
    a = getattr(eg, f"conv{n}d_input")(x.shape, ember.tensor(w), ember.tensor(go), **kw)
    b = getattr(tg, f"conv{n}d_input")(x.shape, torch.tensor(w), torch.tensor(go), **kw)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-10)
    a = getattr(eg, f"conv{n}d_weight")(ember.tensor(x), w.shape, ember.tensor(go), **kw)
    b = getattr(tg, f"conv{n}d_weight")(torch.tensor(x), w.shape, torch.tensor(go), **kw)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-10)
    assert ember.nn.functional.grad is ember.nn.grad and ember.nn.functional.Tensor is ember.Tensor


def test_functional_boolean_dispatch_and_argument_helpers():
    F = ember.nn.functional

    def with_idx(x, flag=False):
        """doc"""
        return ("indices", x)

    def without(x, flag=False):
        return ("plain", x)

    fn = F.boolean_dispatch("flag", 1, False, with_idx, without, "m", "pool")
    assert fn(1) == ("plain", 1) and fn(1, True) == ("indices", 1) and fn(1, flag=True) == ("indices", 1)
    assert fn.__name__ == "pool" and fn.__doc__ == "doc" and F.boolean_dispatched[fn]["index"] == 1
    F.assert_int_or_pair(3, "k", "{} must be an int or a pair")
    with pytest.raises(AssertionError, match="k must be an int or a pair"):
        F.assert_int_or_pair([1, 2, 3], "k", "{} must be an int or a pair")
    assert F.BroadcastingList2[int] is None


@pytest.mark.parametrize("channels,size", [(7, 5), (3, 5), (6, 2), (8, 3), (4, 4), (1, 3)])
def test_cross_map_lrn2d_values_and_gradients_match_pytorch(channels, size):
    r = np.random.default_rng(channels * 10 + size)
    x = r.standard_normal((2, channels, 3, 4))
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    em, tm = ember.nn.CrossMapLRN2d(size, alpha=0.5, k=1.5), torch.nn.CrossMapLRN2d(size, alpha=0.5, k=1.5)
    eo, to = em(ex), tm(tx)
    g = r.standard_normal(tuple(eo.shape))
    eo.backward(ember.tensor(g))
    to.backward(torch.tensor(g))
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-14)
    assert repr(em) == repr(tm)
    for L in (ember, torch):
        with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D instead."):
            L.nn.CrossMapLRN2d(3)(L.ones(2, 3, 4))


def test_grad_dtype_as_pytorch():
    for L in (ember, torch):
        x = L.ones(2, requires_grad=True)
        assert x.grad_dtype == L.float32
        x.grad_dtype = L.float64
        (x * 2).sum().backward()
        assert x.grad.dtype == L.float64 and x.grad.tolist() == [2.0, 2.0]
        y = x * 2
        with pytest.raises(RuntimeError, match="grad_dtype can only be accessed on leaf tensors."):
            y.grad_dtype
        with pytest.raises(RuntimeError, match="grad_dtype can only be set on leaf tensors."):
            y.grad_dtype = L.float64
        z = L.ones(2, requires_grad=True)
        z.grad_dtype = None
        assert z.grad_dtype is None
        z.grad = L.ones(2, dtype=L.float64)  # None accepts any dtype
        x.grad = None
        with pytest.raises(RuntimeError, match="attempting to assign a gradient with dtype 'float' to a tensor with "
                                               "grad_dtype 'Double'. The gradient must match"):
            x.grad = L.ones(2)
        with pytest.raises(RuntimeError, match="dtype 'double' to a tensor with grad_dtype 'Float'"):
            L.ones(2).grad = L.ones(2, dtype=L.float64)


def test_deterministic_mode_fills_uninitialized_memory_as_pytorch():
    calls = [lambda L: L.empty(3), lambda L: L.empty(2, dtype=L.int32), lambda L: L.empty(2, dtype=L.bool),
             lambda L: L.empty_like(L.ones(2)), lambda L: L.empty_strided((2,), (1,)), lambda L: L.ones(2).new_empty(2),
             lambda L: L.empty(2, dtype=L.uint8), lambda L: L.empty(2, dtype=L.float64),
             lambda L: L.ones(2).resize_(4)]
    try:
        for L in (ember, torch):
            L.use_deterministic_algorithms(True)
        for call in calls:
            np.testing.assert_array_equal(call(ember).numpy(), call(torch).numpy())
        for L in (ember, torch):
            L.utils.deterministic.fill_uninitialized_memory = False
            assert L.utils.deterministic.fill_uninitialized_memory is False
    finally:
        for L in (ember, torch):
            L.utils.deterministic.fill_uninitialized_memory = True
            L.use_deterministic_algorithms(False)


def test_gradient_layout_contract_and_its_policy():
    for L in (ember, torch):
        p = L.empty(2, 3, 4).permute(2, 0, 1).requires_grad_()
        (p * 2).sum().backward()
        assert p.grad.stride() == p.stride() == (1, 12, 4)
        p = L.empty(2, 3, 4).permute(2, 0, 1).requires_grad_()
        with L.autograd.enforce_grad_layout_policy(False):
            (p * 2).sum().backward()
        assert p.grad.stride() == (6, 3, 1)
        q = L.empty(4, 6)[:, ::2].requires_grad_()  # not dense: row-major
        (q * 2).sum().backward()
        assert q.grad.stride() == (3, 1)
        w = L.zeros(3, 4).t().requires_grad_()
        w.backward(L.ones(4, 3))
        assert w.grad.stride() == (1, 4) and w.grad.tolist() == [[1.0] * 3] * 4


def test_saved_tensors_of_a_node_as_pytorch_shows_them():
    for L in (ember, torch):
        x = L.ones(2, requires_grad=True)
        z = x.pow(2)
        assert z.grad_fn._saved_exponent == 2 and z.grad_fn._saved_self is not None
        assert isinstance(z.grad_fn._raw_saved_self, L.autograd.SavedTensor)
        with pytest.raises(AttributeError):
            z.grad_fn._saved_nothing
        y = x.exp()
        saved = y.grad_fn._raw_saved_result
        saved.register_hooks(lambda t: t * 1, lambda t: t * 3)
        with pytest.raises(RuntimeError, match="Calling register_hooks on a saved tensor whose hooks have already"):
            saved.register_hooks(lambda t: t, lambda t: t)
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [3 * np.e] * 2, rtol=1e-6)
