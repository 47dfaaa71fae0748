"""ember.profiler against torch.profiler: the ranges a training step produces (names and nesting), the table's
layout, record_function, schedules and their callbacks, the Chrome trace, FLOPs and memory columns, the legacy
autograd.profiler API, and that an operator call is untouched when no profiler records."""
import json
import os
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch", reason="PyTorch (the oracle) is not installed: pip install torch==2.13.0")


def _train_step_profile(lib, **kw):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(8, 4), lib.nn.ReLU())
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    x, y = lib.randn(5, 8), lib.randn(5, 4)
    with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU], **kw) as prof:
        with lib.profiler.record_function("train_step"):
            loss = lib.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return prof


def _children(events, parent_name):
    parent = next(e for e in events if e.name == parent_name)
    return [e.name for e in sorted(parent.cpu_children, key=lambda e: e.time_range.start)]


def test_a_training_step_gives_pytorchs_ranges():
    """The step's top-level ranges (operators the program calls, the autograd engine's per-node ranges, the
    optimizer's), each node's own range inside its engine range, and linear's t + addmm, as PyTorch names and
    nests them (inside an operator the kernels may differ: ember's mse_loss calls no mean)."""
    got, expected = (_train_step_profile(lib, record_shapes=True) for lib in (ember, torch))
    top = _children(expected.events(), "train_step")
    assert _children(got.events(), "train_step") == top
    assert "autograd::engine::evaluate_function: AddmmBackward0" in top and "Optimizer.step#SGD.step" in top
    for name in top:
        if name.startswith("autograd::engine::evaluate_function: "):
            node = name.split(": ", 1)[1]
            assert _children(got.events(), name)[0] == _children(expected.events(), name)[0] == node
    assert _children(got.events(), "aten::linear") == _children(expected.events(), "aten::linear") == \
        ["aten::t", "aten::addmm"]
    shapes = {e.name: e.input_shapes for e in got.events() if e.cpu_parent is not None and
              e.cpu_parent.name == "train_step"}
    expected_shapes = {e.name: e.input_shapes for e in expected.events() if e.cpu_parent is not None and
                       e.cpu_parent.name == "train_step"}
    for name in ("aten::linear", "aten::relu", "aten::mse_loss", "aten::broadcast_tensors"):
        assert shapes[name] == expected_shapes[name], name


def test_key_averages_table_has_pytorchs_layout():
    got, expected = (_train_step_profile(lib, profile_memory=True) for lib in (ember, torch))
    g, e = (p.key_averages().table(sort_by="cpu_time_total", row_limit=5).splitlines() for p in (got, expected))
    assert g[0] == e[0] and g[1] == e[1] and g[2] == e[2]          # rule, headers, rule: the same columns
    assert len(g) == len(e) == 10 and g[-1].startswith("Self CPU time total: ")
    assert g[3].split()[0] == "train_step"                         # the outermost range has 100% of the time
    assert "100.00%" in g[3]
    avgs = {a.key: a for a in got.key_averages()}
    assert avgs["aten::t"].count == 4 and avgs["aten::addmm"].self_cpu_memory_usage == 80      # 5 x 4 float32
    assert avgs["aten::addmm"].self_cpu_memory_usage == \
        {a.key: a for a in expected.key_averages()}["aten::addmm"].self_cpu_memory_usage
    by_shape = got.key_averages(group_by_input_shape=True)
    assert all(a.input_shapes == "" for a in got.key_averages())
    assert len(by_shape) >= len(got.key_averages())


def test_shapes_column_and_time_units():
    prof = _train_step_profile(ember, record_shapes=True)
    table = prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", time_unit="ms")
    header = table.splitlines()[1]
    assert header.rstrip().endswith("Input Shapes")
    assert "[[5, 8], [4, 8], [4]]" in table and "ms" in table.splitlines()[3]


def test_record_function_nests_and_decorates():
    @ember.profiler.record_function("decorated")
    def f(x):
        return x * 2

    with ember.profiler.profile() as prof:
        with ember.profiler.record_function("outer"):
            with ember.autograd.profiler.record_function("inner"):
                f(ember.ones(3))
    with ember.profiler.record_function("no profiler"):     # a no-op outside a profile
        pass
    ev = {e.name: e for e in prof.events()}
    assert ev["inner"].cpu_parent is ev["outer"] and ev["decorated"].cpu_parent is ev["inner"]
    assert ev["aten::mul"].cpu_parent is ev["decorated"]
    assert ev["outer"].time_range.start <= ev["inner"].time_range.start <= ev["inner"].time_range.end <= \
        ev["outer"].time_range.end
    assert ev["outer"].self_cpu_time_total == pytest.approx(ev["outer"].cpu_time_total - ev["inner"].cpu_time_total)


def test_schedule_matches_pytorch_and_calls_on_trace_ready_per_window():
    for kw in (dict(wait=1, warmup=1, active=2, repeat=2, skip_first=1), dict(wait=2, warmup=0, active=1),
               dict(wait=3, warmup=1, active=2, skip_first_wait=1)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e, t = ember.profiler.schedule(**kw), torch.profiler.schedule(**kw)
        assert [e(i).name for i in range(14)] == [t(i).name for i in range(14)]
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        ember.profiler.schedule(wait=0, warmup=0, active=0)
    steps = {}
    for lib in (ember, torch):
        windows = []

        def ready(p):
            windows.append((p.step_num, sorted(e.name for e in p.events() if e.name.startswith("ProfilerStep"))))
        x = lib.ones(4)
        with lib.profiler.profile(schedule=lib.profiler.schedule(wait=1, warmup=1, active=2, repeat=2),
                                  on_trace_ready=ready) as p:
            for _ in range(10):
                x = x + 1
                p.step()
        steps[lib.__name__] = windows
    assert steps["ember"] == steps["torch"]
    assert len(steps["ember"]) == 2 and steps["ember"][0] == (4, ["ProfilerStep*", "ProfilerStep*"])


def test_chrome_trace_parses_with_nested_events(tmp_path):
    prof = _train_step_profile(ember, record_shapes=True)
    path = str(tmp_path / "trace.json")
    prof.export_chrome_trace(path)
    doc = json.load(open(path))
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert {e["tid"] for e in xs} == {xs[0]["tid"]} and doc["displayTimeUnit"] == "ms"
    step = next(e for e in xs if e["name"] == "train_step")
    assert step["cat"] == "user_annotation"
    addmm = next(e for e in xs if e["name"] == "aten::addmm")
    assert addmm["cat"] == "cpu_op" and addmm["args"]["Input Dims"] == [[4], [5, 8], [8, 4], [], []]
    for e in xs:                                    # every range lies inside the step's
        assert step["ts"] <= e["ts"] and e["ts"] + e["dur"] <= step["ts"] + step["dur"] + 1e-3
    assert any(e["ph"] == "M" and e["name"] == "thread_name" for e in doc["traceEvents"])


def test_tensorboard_trace_handler_writes_a_trace_per_window(tmp_path):
    handler = ember.profiler.tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w0")
    with ember.profiler.profile(schedule=ember.profiler.schedule(wait=0, warmup=1, active=1, repeat=3),
                                on_trace_ready=handler) as p:
        for _ in range(6):
            ember.ones(3).sum()
            p.step()
    files = sorted(os.listdir(tmp_path / "tb"))
    assert len(files) == 3 and all(f.startswith("w0.") and f.endswith(".pt.trace.json") for f in files)
    json.load(open(tmp_path / "tb" / files[0]))


def test_flops_match_pytorch():
    rng = np.random.default_rng(0)
    a, b, c = rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), rng.standard_normal(5)
    x, w = rng.standard_normal((2, 3, 8, 8)), rng.standard_normal((6, 3, 3, 3))
    flops = {}
    for lib in (ember, torch):
        t = [lib.tensor(v, dtype=lib.float32) for v in (a, b, c, x, w)]
        with lib.profiler.profile(with_flops=True) as p:
            lib.mm(t[0], t[1])
            lib.addmm(t[2], t[0], t[1])
            lib.bmm(lib.ones(2, 3, 4), lib.ones(2, 4, 5))
            t[0] * t[0]
            t[0] + t[0]
            lib.nn.functional.conv2d(t[3], t[4], stride=2, padding=1)
        flops[lib.__name__] = sorted(e.flops for e in p.events() if e.flops)
    assert flops["ember"] == flops["torch"] == sorted([120, 120, 240, 12, 12, 10368])
    table = p.key_averages().table()
    assert "Total KFLOPs" in table or "Total FLOPs" in table


def test_with_stack_records_the_callers_frames():
    with ember.profiler.profile(with_stack=True) as prof:
        ember.ones(2).sum()
    ev = next(e for e in prof.events() if e.name == "aten::sum")
    assert ev.stack and ev.stack[0].startswith(__file__) and "test_with_stack_records_the_callers_frames" in \
        ev.stack[0]
    assert "Source Location" in prof.key_averages(group_by_stack_n=2).table()


def test_legacy_autograd_profiler():
    x = ember.randn(4, 4, requires_grad=True)
    with ember.autograd.profiler.profile(record_shapes=True) as prof:
        (x @ x).sum().backward()
    names = {e.name for e in prof.function_events}
    assert {"aten::matmul", "aten::sum", "autograd::engine::evaluate_function: MmBackward0"} <= names
    assert prof.self_cpu_time_total > 0 and prof.total_average().count == len(prof.function_events)
    assert "Self CPU time total" in str(prof)
    unfinished = ember.autograd.profiler.profile()
    with pytest.raises(RuntimeError, match="Profiler didn't finish running"):
        unfinished.key_averages()


def test_an_operator_call_is_untouched_without_a_profiler():
    from ember.aten.dispatcher import OperatorHandle
    plain = OperatorHandle.call
    with ember.profiler.profile():
        assert OperatorHandle.call is not plain
        with pytest.raises(RuntimeError, match="Profiler is already enabled"):
            ember.autograd.profiler.profile().__enter__()
    assert OperatorHandle.call is plain and ember.autograd.profiler.recorder is None
    try:                                           # an exception inside the block still restores it
        with ember.profiler.profile():
            raise ValueError("boom")
    except ValueError:
        pass
    assert OperatorHandle.call is plain


@pytest.mark.parametrize("workers", [0, 2])
def test_dataloader_batches_are_ranges_as_in_pytorch(workers):
    names = {}
    for lib in (ember, torch):
        loader = lib.utils.data.DataLoader(lib.utils.data.TensorDataset(lib.randn(8, 2)), batch_size=4,
                                           num_workers=workers)
        with lib.profiler.profile() as prof:
            for _ in loader:
                pass
        names[lib.__name__] = [e.name for e in prof.events() if "DataLoader" in e.name]
    assert names["ember"] == names["torch"] and len(names["ember"]) == 3     # two batches and the end
