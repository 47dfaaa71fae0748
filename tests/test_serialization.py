"""ember.save / ember.load against PyTorch in both directions (state_dicts, optimizer states, every dtype,
shared views, non-contiguous tensors, containers), map_location / mmap, atomic saves, and more than 30
crafted malicious or malformed files refused with no side effect."""
import io
import os
import pickle
import signal
import struct
import subprocess
import sys
import tarfile
import time
import warnings
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")

ROOT = os.path.dirname(os.path.dirname(ember.__file__))


def as_np(t):
    """NumPy values of an ember or PyTorch tensor (bfloat16 widened to float32)."""
    t = t.detach()
    return (t.float() if str(t.dtype).endswith("bfloat16") else t).numpy()


def same(a, b):
    assert tuple(a.shape) == tuple(b.shape)
    assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
    np.testing.assert_array_equal(as_np(a), as_np(b))


DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool",
          "complex64", "complex128"]


def sample(lib):
    rng = np.random.default_rng(0)
    base = lib.tensor(rng.standard_normal((4, 6)).astype(np.float32))
    out = {
        "dtypes": {d: lib.tensor(rng.standard_normal(5) * 3).to(getattr(lib, d)) for d in DTYPES},
        "views": [base, base.t(), base[1], base[:, ::2], base[2:, 1:4]],
        "scalar": lib.tensor(3.5), "empty": lib.zeros(0, 3), "param": lib.nn.Parameter(lib.ones(2, 2)),
        "grad": lib.ones(3).requires_grad_(), "cfg": {"lr": 1e-3, "betas": (0.9, 0.95), "big": 2 ** 62,
                                                       "name": "run", "raw": b"\x00\xff", "tags": {1, 2},
                                                       "dtype": lib.float16, "size": lib.Size([2, 3]),
                                                       "dev": lib.device("cpu"), "none": None},
        "nested": OrderedDict([("a", [1, (2, lib.arange(3))]), ("b", {"c": lib.eye(2)})]),
    }
    return out


def check_sample(a, b):
    for d in DTYPES:
        same(a["dtypes"][d], b["dtypes"][d])
    for x, y in zip(a["views"], b["views"]):
        same(x, y)
    for k in ("scalar", "empty", "param", "grad"):
        same(a[k], b[k])
        assert a[k].requires_grad == b[k].requires_grad
    assert type(a["param"]).__name__ == type(b["param"]).__name__ == "Parameter"
    ca, cb = a["cfg"], b["cfg"]
    for k in ("lr", "betas", "big", "name", "raw", "tags", "none"):
        assert ca[k] == cb[k]
    assert str(ca["dtype"]).split(".")[-1] == str(cb["dtype"]).split(".")[-1] == "float16"
    assert tuple(ca["size"]) == tuple(cb["size"]) == (2, 3) and type(cb["size"]).__name__ == "Size"
    assert str(ca["dev"]) == str(cb["dev"]) == "cpu"
    assert isinstance(b["nested"], OrderedDict)
    same(a["nested"]["a"][1][1], b["nested"]["a"][1][1])
    same(a["nested"]["b"]["c"], b["nested"]["b"]["c"])


def storage_ptr(t):
    return t.untyped_storage().data_ptr()


def test_ember_files_load_in_pytorch_weights_only(tmp_path):
    obj = sample(ember)
    ember.save(obj, tmp_path / "e.pt")
    got = torch.load(tmp_path / "e.pt", weights_only=True)
    check_sample(obj, got)
    v = got["views"]
    assert len({storage_ptr(t) for t in v}) == 1          # views share one storage after loading
    v[0][1, 2] = 100.0
    assert v[1][2, 1].item() == 100.0 and v[2][2].item() == 100.0
    with zipfile.ZipFile(tmp_path / "e.pt") as zf:
        names = zf.namelist()
        assert names[0] == "e/data.pkl" and "e/version" in names and "e/byteorder" in names
        data_records = [n for n in names if n.startswith("e/data/")]
        assert len(data_records) == len(DTYPES) + 1 + 6      # the 5 views share one record
        for info in zf.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            with open(tmp_path / "e.pt", "rb") as f:
                f.seek(info.header_offset + 26)
                n, m = struct.unpack("<HH", f.read(4))
            assert (info.header_offset + 30 + n + m) % 64 == 0   # 64-byte aligned records


def test_pytorch_files_load_in_ember(tmp_path):
    obj = sample(torch)
    torch.save(obj, tmp_path / "t.pt")
    got = ember.load(tmp_path / "t.pt")
    check_sample(obj, got)
    v = got["views"]
    assert len({storage_ptr(t) for t in v}) == 1
    v[0][1, 2] = 100.0
    assert v[1][2, 1].item() == 100.0
    got2 = ember.load(io.BytesIO((tmp_path / "t.pt").read_bytes()))
    check_sample(obj, got2)


def _models(lib):
    lib.manual_seed(0)
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 5)), \
        nn.LSTM(3, 4, num_layers=2)


def test_state_dicts_and_optimizer_states_round_trip_and_outputs_agree(tmp_path):
    cnn, lstm = _models(ember)
    opt = ember.optim.AdamW(list(cnn.parameters()) + list(lstm.parameters()), lr=0.01)
    x = ember.randn(2, 1, 6, 6)
    for _ in range(2):
        opt.zero_grad()
        (cnn(x).sum() + lstm(ember.randn(5, 2, 3))[0].sum()).backward()
        opt.step()
    ember.save({"cnn": cnn.state_dict(), "lstm": lstm.state_dict(), "opt": opt.state_dict(), "epoch": 3},
               tmp_path / "ck.pt")
    ck = torch.load(tmp_path / "ck.pt", weights_only=True)
    tcnn, tlstm = _models(torch)
    tcnn.load_state_dict(ck["cnn"])
    tlstm.load_state_dict(ck["lstm"])
    topt = torch.optim.AdamW(list(tcnn.parameters()) + list(tlstm.parameters()), lr=0.01)
    topt.load_state_dict(ck["opt"])
    cnn.eval()
    tcnn.eval()
    xt = torch.tensor(x.numpy())
    np.testing.assert_allclose(cnn(x).detach().numpy(), tcnn(xt).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert topt.state_dict()["param_groups"] == opt.state_dict()["param_groups"]
    # and back: PyTorch's file into fresh ember modules
    torch.save({"cnn": tcnn.state_dict(), "opt": topt.state_dict()}, tmp_path / "back.pt")
    back = ember.load(tmp_path / "back.pt")
    cnn2, _ = _models(ember)
    cnn2.load_state_dict(back["cnn"])
    cnn2.eval()
    np.testing.assert_allclose(cnn2(x).detach().numpy(), cnn(x).detach().numpy(), rtol=0, atol=0)
    opt2 = ember.optim.AdamW(list(cnn2.parameters()) + list(_models(ember)[1].parameters()), lr=0.01)
    opt2.load_state_dict(back["opt"])
    assert opt2.state_dict()["state"][0]["step"].item() == 2.0


def test_a_single_parameter_after_an_optimizer_step_saves_only_itself(tmp_path):
    m = ember.nn.Sequential(ember.nn.Linear(200, 200), ember.nn.Linear(200, 3))
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    m(ember.randn(2, 200)).sum().backward()
    opt.step()
    ember.save(m[1].weight, tmp_path / "w.pt")
    assert os.path.getsize(tmp_path / "w.pt") < 10_000
    same(torch.load(tmp_path / "w.pt"), m[1].weight)


def test_whole_modules_both_ways_need_weights_only_false_or_allowlisting(tmp_path):
    torch.save(torch.nn.Linear(2, 3), tmp_path / "t.pt")
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL torch.nn.modules.linear.Linear"):
        ember.load(tmp_path / "t.pt")
    assert type(ember.load(tmp_path / "t.pt", weights_only=False)) is ember.nn.Linear
    with ember.serialization.safe_globals([ember.nn.Linear]):
        m = ember.load(tmp_path / "t.pt")
    assert isinstance(m, ember.nn.Linear) and m.weight.shape == (3, 2)
    assert ember.serialization.get_unsafe_globals_in_checkpoint(tmp_path / "t.pt") == [
        "torch.nn.modules.linear.Linear"]
    ember.save(ember.nn.Linear(2, 3), tmp_path / "e.pt")
    assert isinstance(torch.load(tmp_path / "e.pt", weights_only=False), torch.nn.Linear)


def test_map_location(tmp_path):
    torch.save({"a": torch.ones(2)}, tmp_path / "t.pt")
    for loc in ("cpu", ember.device("cpu"), {"cpu": "cpu"}, lambda storage, location: storage):
        assert ember.load(tmp_path / "t.pt", map_location=loc)["a"].device.type == "cpu"
    # a checkpoint whose storages were saved on a GPU
    data = _rewrite_pickle(tmp_path / "t.pt", lambda p: p.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0"))
    if not ember.cuda.is_available():
        with pytest.raises(RuntimeError, match="Attempted to deserialize object on a CUDA device"):
            ember.load(io.BytesIO(data))
    assert ember.load(io.BytesIO(data), map_location="cpu")["a"].tolist() == [1.0, 1.0]


def test_mmap(tmp_path):
    torch.save({"a": torch.arange(6.0)}, tmp_path / "t.pt")
    got = ember.load(tmp_path / "t.pt", mmap=True)
    got["a"].add_(1)                                    # copy-on-write: the file is unchanged
    assert ember.load(tmp_path / "t.pt")["a"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    with pytest.raises(ValueError, match="f must be a file path in order to use the mmap argument"):
        ember.load(io.BytesIO((tmp_path / "t.pt").read_bytes()), mmap=True)
    torch.save(torch.ones(2), tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match="mmap can only be used with files saved with"):
        ember.load(tmp_path / "old.pt", mmap=True)


def test_legacy_format_is_read(tmp_path):
    obj = {"x": torch.arange(5.0), "y": torch.ones(2, 3, dtype=torch.int64).t(), "z": torch.tensor(7)}
    torch.save(obj, tmp_path / "old.pt", _use_new_zipfile_serialization=False)
    got = ember.load(tmp_path / "old.pt")
    for k in obj:
        same(obj[k], got[k])


def test_environment_variables_and_pickle_module(tmp_path, monkeypatch):
    torch.save(torch.nn.Linear(2, 2), tmp_path / "t.pt")
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.warns(UserWarning, match="TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected"):
        assert isinstance(ember.load(tmp_path / "t.pt"), ember.nn.Linear)
    with pytest.raises(pickle.UnpicklingError):                 # an explicit weights_only=True still wins
        ember.load(tmp_path / "t.pt", weights_only=True)
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(RuntimeError, match="Only one of"):
        ember.load(tmp_path / "t.pt")
    monkeypatch.delenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")
    with pytest.raises(pickle.UnpicklingError):                 # forced even against weights_only=False
        ember.load(tmp_path / "t.pt", weights_only=False)
    monkeypatch.delenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD")
    with pytest.raises(RuntimeError, match="Can not safely load weights when explicit pickle_module is specified"):
        ember.load(tmp_path / "t.pt", pickle_module=pickle, weights_only=True)
    assert isinstance(ember.load(tmp_path / "t.pt", pickle_module=pickle), ember.nn.Linear)


# -- atomic saves -----------------------------------------------------------------------------------------


def test_a_failing_save_leaves_the_previous_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "ck.pt"
    ember.save({"v": ember.ones(3)}, path)
    before = path.read_bytes()

    def broken(fh, *args):
        fh.write(b"PK partial")
        raise OSError("disk full")
    monkeypatch.setattr(ember.serialization, "_write_zip", broken)
    with pytest.raises(OSError, match="disk full"):
        ember.save({"v": ember.zeros(3)}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ck.pt"]


def test_sigkill_during_saves_never_corrupts_the_checkpoint(tmp_path):
    path = tmp_path / "ck.pt"
    script = (
        "import sys, ember\n"
        "x = ember.randn(2_000_000)\n"
        "i = 0\n"
        "while True:\n"
        "    ember.save({'i': i, 'x': x}, sys.argv[1])\n"
        "    print(i, flush=True)\n"
        "    i += 1\n")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.Popen([sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE, env=env, text=True)
    try:
        assert p.stdout.readline().strip() == "0"
        time.sleep(0.37)                     # somewhere in the middle of a later save
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    got = ember.load(path)
    assert got["x"].shape == (2_000_000,) and isinstance(got["i"], int)
    assert torch.load(path)["x"].shape == (2_000_000,)


# -- malicious and malformed files -----------------------------------------------------------------------

SENTINEL = "/tmp/ember_pwned_sentinel"


def make_zip(pkl: bytes, extra=None, version=b"3\n", prefix="archive", compress=zipfile.ZIP_STORED, order=None):
    buf = io.BytesIO()
    records = OrderedDict([("data.pkl", pkl), ("byteorder", b"little")])
    if version is not None:
        records["version"] = version
    records.update(extra or {})
    with zipfile.ZipFile(buf, "w", compress) as zf:
        for name, data in records.items():
            zf.writestr(name if name.startswith("/") or name.startswith("..") else f"{prefix}/{name}", data)
    return buf.getvalue()


def _rewrite_pickle(path, fn):
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        prefix = names[0].split("/")[0]
        records = {n.split("/", 1)[1]: zf.read(n) for n in names}
    records["data.pkl"] = fn(records["data.pkl"])
    pkl = records.pop("data.pkl")
    records.pop("byteorder", None)
    version = records.pop("version")
    return make_zip(pkl, records, version=version, prefix=prefix)


def _g(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _s(text):
    b = text.encode()
    return b"X" + struct.pack("<I", len(b)) + b


CALL_SENTINEL = _s(f"touch {SENTINEL}") + b"\x85R."


def _tensor_pickle(numel=4, offset=0, size=(4,), stride=(1,), key="0", storage=b"FloatStorage"):
    size_b = b"(" + b"".join(b"J" + struct.pack("<i", s) for s in size) + b"t"
    stride_b = b"(" + b"".join(b"J" + struct.pack("<i", s) for s in stride) + b"t"
    pid = b"(" + _s("storage") + _g("torch", storage.decode()) + _s(key) + _s("cpu") + b"J" + \
        struct.pack("<i", numel) + b"tQ"
    return b"\x80\x02" + _g("torch._utils", "_rebuild_tensor_v2") + b"(" + pid + b"J" + struct.pack("<i", offset) + \
        size_b + stride_b + b"\x89" + _g("collections", "OrderedDict") + b")Rt" + b"R."


GOOD = make_zip(_tensor_pickle(), {"data/0": np.arange(4, dtype=np.float32).tobytes()})

MALICIOUS = {
    "os.system": make_zip(b"\x80\x02" + _g("os", "system") + CALL_SENTINEL),
    "posix.system": make_zip(b"\x80\x02" + _g("posix", "system") + CALL_SENTINEL),
    "nt.system": make_zip(b"\x80\x02" + _g("nt", "system") + CALL_SENTINEL),
    "subprocess.call": make_zip(b"\x80\x02" + _g("subprocess", "call") + CALL_SENTINEL),
    "builtins.eval": make_zip(b"\x80\x02" + _g("builtins", "eval") +
                              _s(f"__import__('os').system('touch {SENTINEL}')") + b"\x85R."),
    "__builtin__.exec": make_zip(b"\x80\x02" + _g("__builtin__", "exec") +
                                 _s(f"open('{SENTINEL}', 'w')") + b"\x85R."),
    "builtins.getattr": make_zip(b"\x80\x02" + _g("builtins", "getattr") + _g("collections", "OrderedDict") +
                                 _s("fromkeys") + b"\x86R."),
    "builtins.__import__": make_zip(b"\x80\x02" + _g("builtins", "__import__") + _s("os") + b"\x85R."),
    "builtins.open": make_zip(b"\x80\x02" + _g("builtins", "open") + _s(SENTINEL) + _s("w") + b"\x86R."),
    "sys.modules": make_zip(b"\x80\x02" + _g("sys", "modules") + b"."),
    "copyreg._reconstructor": make_zip(b"\x80\x02" + _g("copyreg", "_reconstructor") + b"."),
    "numpy.core.multiarray._reconstruct": make_zip(b"\x80\x02" + _g("numpy.core.multiarray", "_reconstruct") + b"."),
    "torch.load itself": make_zip(b"\x80\x02" + _g("torch", "load") + _s(SENTINEL) + b"\x85R."),
    "ember.serialization.load": make_zip(b"\x80\x02" + _g("ember.serialization", "load") + _s("x") + b"\x85R."),
    "allowed class called with a payload": make_zip(b"\x80\x02" + _g("torch", "FloatStorage") + _s("x") + b"\x85R."),
    "NEWOBJ of a forbidden class": make_zip(b"\x80\x02" + _g("collections", "OrderedDict") + b")\x81."),
    "BUILD on a list": make_zip(b"\x80\x02]}\x8fb."),
    "SETITEM on a list": make_zip(b"\x80\x02]K\x01K\x02s."),
    "APPEND to a dict": make_zip(b"\x80\x02}K\x01a."),
    "INST opcode": make_zip(b"\x80\x02(ios\nsystem\n."),
    "STACK_GLOBAL (protocol 4)": make_zip(b"\x80\x04" + _s("os") + _s("system") + b"\x93."),
    "FRAME (protocol 4)": make_zip(b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00N."),
    "REDUCE on a non-callable": make_zip(b"\x80\x02K\x01)R."),
    "persistent id not a storage": make_zip(b"\x80\x02(" + _s("module") + _s("os") + b"tQ."),
    "memo get of a missing index": make_zip(b"\x80\x02h\x07."),
    "stack underflow": make_zip(b"\x80\x02t."),
    "STOP with pending objects": make_zip(b"\x80\x02K\x01K\x02."),
    "huge BINUNICODE length": make_zip(b"\x80\x02X\xff\xff\xff\x7f."),
    "truncated pickle": make_zip(_tensor_pickle()[:40], {"data/0": np.zeros(4, np.float32).tobytes()}),
    "storage record too small": make_zip(_tensor_pickle(numel=4), {"data/0": np.zeros(2, np.float32).tobytes()}),
    "storage record too large": make_zip(_tensor_pickle(numel=4), {"data/0": np.zeros(9, np.float32).tobytes()}),
    "missing storage record": make_zip(_tensor_pickle(key="5"), {"data/0": np.zeros(4, np.float32).tobytes()}),
    "tensor past its storage (offset)": make_zip(_tensor_pickle(offset=3, size=(4,)),
                                                 {"data/0": np.zeros(4, np.float32).tobytes()}),
    "tensor past its storage (stride)": make_zip(_tensor_pickle(size=(2, 2), stride=(1000, 1)),
                                                 {"data/0": np.zeros(4, np.float32).tobytes()}),
    "negative size": make_zip(_tensor_pickle(size=(-4,)), {"data/0": np.zeros(4, np.float32).tobytes()}),
    "unknown storage type": make_zip(_tensor_pickle(storage=b"EvilStorage"),
                                     {"data/0": np.zeros(4, np.float32).tobytes()}),
    "missing version record": make_zip(_tensor_pickle(), {"data/0": b"\x00" * 16}, version=None),
    "version out of range": make_zip(_tensor_pickle(), {"data/0": b"\x00" * 16}, version=b"11"),
    "record outside the folder": make_zip(_tensor_pickle(), {"../../evil": b"x", "data/0": b"\x00" * 16}),
    "compressed records (zip bomb)": make_zip(_tensor_pickle(numel=5_000_000, size=(5_000_000,)),
                                              {"data/0": bytes(20_000_000)}, compress=zipfile.ZIP_DEFLATED),
    "TorchScript archive": make_zip(b"\x80\x02N.", {"constants.pkl": b"\x80\x02).", "code/x.py": b"..."}),
    "bogus byteorder": make_zip(_tensor_pickle(), {"data/0": b"\x00" * 16, "byteorder": b"middle"}),
}


def _tar_checkpoint():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name in ("storages", "tensors", "pickle"):
            info = tarfile.TarInfo(name)
            info.size = 2
            tf.addfile(info, io.BytesIO(b"\x80\x02"))
    return buf.getvalue()


MALFORMED = {
    "empty file": b"",
    "random bytes": np.random.default_rng(0).integers(0, 256, 300, dtype=np.uint8).tobytes(),
    "truncated zip": GOOD[: len(GOOD) // 2],
    "zip tail cut": GOOD[:-10],
    "legacy tar": _tar_checkpoint(),
    "raw pickle of os.system": b"\x80\x02" + _g("os", "system") + CALL_SENTINEL,
}


def _duplicate_records():
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("archive/data.pkl", _tensor_pickle())
            zf.writestr("archive/version", b"3\n")
            zf.writestr("archive/data/0", b"\x00" * 16)
            zf.writestr("archive/data/0", b"\x00" * 16)
    return buf.getvalue()


MALFORMED["duplicate records"] = _duplicate_records()


def test_the_good_crafted_file_loads():
    assert ember.load(io.BytesIO(GOOD)).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert torch.load(io.BytesIO(GOOD)).tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("name", list(MALICIOUS) + list(MALFORMED))
def test_malicious_and_malformed_files_are_refused_without_side_effects(name, tmp_path):
    data = MALICIOUS.get(name, MALFORMED.get(name))
    if os.path.exists(SENTINEL):
        os.unlink(SENTINEL)
    path = tmp_path / "evil.pt"
    path.write_bytes(data)
    for f in (path, io.BytesIO(data)):
        with pytest.raises((pickle.UnpicklingError, RuntimeError, ValueError, EOFError)) as e:
            ember.load(f)
        assert str(e.value)
        assert not os.path.exists(SENTINEL)
    assert len(MALICIOUS) + len(MALFORMED) >= 30


def test_unsupported_global_message_names_it_and_how_to_allowlist():
    with pytest.raises(pickle.UnpicklingError) as e:
        ember.load(io.BytesIO(MALICIOUS["subprocess.call"]))
    msg = str(e.value)
    assert msg.startswith("Weights only load failed.")
    assert "Unsupported global: GLOBAL subprocess.call was not an allowed global by default" in msg
    assert "ember.serialization.add_safe_globals([call])" in msg
    with pytest.raises(pickle.UnpicklingError, match="whose module os is blocked"):
        ember.load(io.BytesIO(MALICIOUS["os.system"]))
    with pytest.raises(pickle.UnpicklingError, match="whose module os is blocked"), \
            ember.serialization.safe_globals([os.system]):
        ember.load(io.BytesIO(MALICIOUS["os.system"]))


# -- safetensors -----------------------------------------------------------------------------------------

ST_DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool",
             "complex64"]


def test_safetensors_both_ways(tmp_path):
    pytest.importorskip("safetensors")
    import safetensors.torch as stt

    import ember.utils.safetensors as est
    rng = np.random.default_rng(0)
    e = {d: ember.tensor(rng.standard_normal((2, 3)) * 3).to(getattr(ember, d)) for d in ST_DTYPES}
    e["scalar"] = ember.tensor(2.5)
    e["empty"] = ember.zeros(0, 4)
    e["strided"] = ember.arange(12.0).reshape(3, 4).t()
    est.save_file(e, tmp_path / "e.safetensors", metadata={"format": "pt"})
    t = stt.load_file(tmp_path / "e.safetensors")
    for k in e:
        same(e[k], t[k])
    stt.save_file({k: v.contiguous() for k, v in t.items()}, tmp_path / "t.safetensors")
    back = est.load_file(tmp_path / "t.safetensors")
    for k in e:
        same(e[k], back[k])
    assert ember.load(tmp_path / "t.safetensors")["bfloat16"].dtype == ember.bfloat16
    blob = est.save({"a": ember.ones(2)})
    assert est.load(blob)["a"].tolist() == [1.0, 1.0]


def test_safetensors_shared_tensors_and_models(tmp_path):
    pytest.importorskip("safetensors")
    import ember.utils.safetensors as est
    base = ember.arange(6.0)
    with pytest.raises(RuntimeError, match="Some tensors share memory"):
        est.save_file({"a": base, "b": base[2:]}, tmp_path / "x.safetensors")
    est.save_file({"a": base[:3], "b": base[3:]}, tmp_path / "ok.safetensors")   # disjoint views are fine
    with pytest.raises(ValueError, match="complex128"):
        est.save_file({"c": ember.zeros(2, dtype=ember.complex128)}, tmp_path / "c.safetensors")

    class Tied(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = ember.nn.Embedding(5, 3)
            self.out = ember.nn.Linear(3, 5, bias=False)
            self.out.weight = self.emb.weight
    m = Tied()
    est.save_model(m, tmp_path / "m.safetensors")
    m2 = Tied()
    missing, unexpected = est.load_model(m2, tmp_path / "m.safetensors")
    assert missing == [] and unexpected == []
    same(m2.out.weight, m.emb.weight)
    assert m2.out.weight is m2.emb.weight
    # a model trained a step (parameters re-pointed into one optimizer buffer) saves without complaint
    lin = ember.nn.Linear(4, 2)
    opt = ember.optim.SGD(lin.parameters(), lr=0.1)
    lin(ember.ones(1, 4)).sum().backward()
    opt.step()
    est.save_model(lin, tmp_path / "lin.safetensors")
    same(est.load_file(tmp_path / "lin.safetensors")["weight"], lin.weight)


@pytest.mark.parametrize("blob", [b"", b"\x08\x00\x00\x00\x00\x00\x00\x00[1,2,3]", b"\xff" * 8 + b"{}",
                                  b"\x10\x00\x00\x00\x00\x00\x00\x00" + b'{"a":{"dtype":"F32","shape":[4],'
                                  b'"data_offsets":[0,99]}}'])
def test_malformed_safetensors_are_refused(blob, tmp_path):
    pytest.importorskip("safetensors")
    import ember.utils.safetensors as est
    with pytest.raises(Exception) as e:
        est.load(blob)
    assert str(e.value)


# -- exact resume --------------------------------------------------------------------------------------------

RESUME = os.path.join(os.path.dirname(__file__), "programs", "resume_train.py")


def _run_resume(ckpt, out, steps, kill_after=None):
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.Popen([sys.executable, RESUME, str(ckpt), str(steps), str(out)], stdout=subprocess.PIPE,
                         env=env, text=True)
    if kill_after is None:
        assert p.wait(timeout=120) == 0
        return None
    line = ""
    while line != f"step {kill_after}":
        line = p.stdout.readline().strip()
        assert line, "the training process ended before it could be killed"
    p.send_signal(signal.SIGKILL)           # the next step (and its checkpoint write) may be under way
    p.wait()
    return p.returncode


@pytest.mark.parametrize("kill_after", [3, 7, 8, 13])
def test_killed_and_resumed_training_ends_bit_identical(tmp_path, kill_after):
    steps = 16                                   # 8 batches per epoch: kills mid-epoch and at its end
    _run_resume(tmp_path / "ref.ck", tmp_path / "ref.pt", steps)
    assert _run_resume(tmp_path / "ck", tmp_path / "out.pt", steps, kill_after) == -signal.SIGKILL
    assert not (tmp_path / "out.pt").exists()
    _run_resume(tmp_path / "ck", tmp_path / "out.pt", steps)
    ref, got = ember.load(tmp_path / "ref.pt"), ember.load(tmp_path / "out.pt")
    assert list(ref) == list(got)
    for k in ref:
        assert np.array_equal(ref[k].numpy(), got[k].numpy()), k
    assert ember.load(tmp_path / "ck")["step"] == steps
