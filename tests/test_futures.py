"""``ember.futures`` against ``torch.futures``: results, errors, ``then`` chains, ``collect_all`` / ``wait_all``."""
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("L", [torch, ember], ids=["torch", "ember"])
def test_future_results_chains_and_errors(L):
    f = L.futures.Future()
    seen = []
    f.add_done_callback(lambda fut: seen.append(fut.value()))
    chained = f.then(lambda fut: fut.value() + 1).then(lambda fut: fut.value() * 10)
    assert not f.done() and not chained.done()
    f.set_result(1)
    assert f.done() and f.wait() == 1 and seen == [1] and chained.wait() == 20
    with pytest.raises(RuntimeError, match="Attempting to mark a completed Future as complete again"):
        f.set_result(2)
    g = L.futures.Future()
    g.set_exception(ValueError("x"))
    with pytest.raises(ValueError, match="x"):
        g.wait()
    h = g.then(lambda fut: fut.value() + 1)
    with pytest.raises(RuntimeError, match="Got the following error when running the callback: ValueError: x"):
        h.wait()
    late = L.futures.Future()
    late.set_result(5)
    out = []
    late.add_done_callback(lambda fut: out.append(fut.wait()))
    assert out == [5]


@pytest.mark.parametrize("L", [torch, ember], ids=["torch", "ember"])
def test_collect_all_and_wait_all(L):
    fs = [L.futures.Future() for _ in range(3)]
    allf = L.futures.collect_all(fs)
    for i, f in enumerate(fs):
        assert not allf.done()
        f.set_result(i)
    assert [f.value() for f in allf.wait()] == [0, 1, 2]
    assert L.futures.wait_all(fs) == [0, 1, 2]
    assert L.futures.collect_all([]).wait() == []
