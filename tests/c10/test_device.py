import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


@pytest.mark.parametrize("spec", ["cpu", "meta", "cuda", "cuda:1", "cpu:0"])
def test_device_parsing_matches_pytorch(spec):
    e, t = ember.device(spec), torch.device(spec)
    assert (e.type, e.index) == (t.type, t.index)
    assert str(e) == str(t)
    assert repr(e) == repr(t)


def test_device_from_type_and_index():
    assert ember.device("cuda", 2) == ember.device("cuda:2")
    assert ember.device(1) == ember.device("cuda:1")
    assert ember.device("cpu") == "cpu"
    assert hash(ember.device("cuda:0")) == hash(ember.device("cuda", 0))


@pytest.mark.parametrize("bad", ["gpu", "cuda:x", "cuda:-1", "cuda:01"])
def test_bad_device_strings_are_refused(bad):
    with pytest.raises(RuntimeError):
        torch.device(bad)
    with pytest.raises(RuntimeError):
        ember.device(bad)


def test_cuda_reports_no_gpu_without_cupy_or_device():
    assert ember.cuda.is_available() is False or ember.cuda.device_count() > 0
    if not ember.cuda.is_available():
        assert ember.cuda.device_count() == 0
        assert ember.cuda.is_bf16_supported() is False


def test_tensor_device_attributes():
    x = ember.zeros(2)
    assert x.device == ember.device("cpu") and x.is_cpu and not x.is_cuda and x.get_device() == -1
    m = ember.zeros(2, device="meta")
    assert m.is_meta and m.device.type == "meta"
