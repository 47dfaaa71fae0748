"""ember.utils.tensorboard.SummaryWriter against PyTorch's: the same calls write the same events (everything but the
wall time), the same embedding files, and TensorBoard's EventAccumulator reads each kind back."""
import glob
import os

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytest.importorskip("tensorboard", reason="the optional extra: pip install tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader  # noqa: E402

from ember.utils.tensorboard import SummaryWriter  # noqa: E402


def _events(log_dir):
    """{run dir relative to log_dir: [event without its wall time, serialized]} of every event file."""
    runs = {}
    for path in sorted(glob.glob(os.path.join(log_dir, "**", "events.out.tfevents.*"), recursive=True)):
        events = []
        for event in EventFileLoader(path).Load():
            event.wall_time = 0
            events.append(event.SerializeToString(deterministic=True))
        runs[os.path.relpath(os.path.dirname(path), log_dir)] = events
    return runs


def _both(tmp_path, log):
    """Runs ``log(lib, writer)`` with each library's SummaryWriter in a directory of its own; their events."""
    out = {}
    for lib in (torch, ember):
        from torch.utils.tensorboard import SummaryWriter as TorchWriter
        d = str(tmp_path / lib.__name__)
        with (TorchWriter if lib is torch else SummaryWriter)(d) as w:
            log(lib, w)
        out[lib.__name__] = _events(d)
    return out["ember"], out["torch"]


def test_scalars_histograms_images_text_and_curves_match_pytorch(tmp_path):
    rng = np.random.default_rng(0)
    values = rng.standard_normal(1000).astype(np.float32)
    img = rng.random((3, 10, 12)).astype(np.float32)
    imgs = rng.random((5, 1, 6, 7)).astype(np.float32)
    labels, preds = rng.random(200) > 0.5, rng.random(200)

    def log(lib, w):
        for step in range(3):
            w.add_scalar("loss", 1.0 / (step + 1), step)
        w.add_scalar("acc", lib.tensor(0.75), 4, new_style=True)
        w.add_scalar("acc64", 0.1, 5, new_style=True, double_precision=True)
        w.add_scalar("np", np.float32(2.5), 6)
        w.add_scalars("run", {"train": 1.0, "val": 2.0}, 1)
        w.add_scalars("run", {"train": 0.5, "val": 1.5}, 2)
        w.add_histogram("w", lib.tensor(values), 1)
        w.add_histogram("w_auto", lib.tensor(values), 2, bins="auto")
        w.add_histogram("w_np", values, 3, bins=50, max_bins=7)
        w.add_histogram_raw("raw", -1.0, 1.0, 4, 0.5, 2.0, [0.0, 1.0], [1, 3], 4)
        w.add_image("chw", lib.tensor(img), 1)
        w.add_image("hwc_u8", lib.tensor((img.transpose(1, 2, 0) * 255).astype(np.uint8)), 1, dataformats="HWC")
        w.add_image("hw", lib.tensor(img[0]), 1, dataformats="HW")
        w.add_images("batch", lib.tensor(imgs), 2)
        w.add_text("note", "**bold** text", 3)
        w.add_pr_curve("pr", lib.tensor(labels), lib.tensor(preds), 1)
        w.add_pr_curve("pr_few", labels, preds, 2, num_thresholds=200)
        w.add_tensor("t32", lib.tensor(values[:6].reshape(2, 3)), 1)
        w.add_tensor("t16", lib.tensor(values[:4]).half(), 1)
        w.add_custom_scalars_multilinechart(["loss", "acc"])
        w.add_custom_scalars_marginchart(["loss", "acc", "acc64"], category="c", title="m")
    got, expected = _both(tmp_path, log)
    assert sorted(got) == sorted(expected) == [".", "run_train", "run_val"]
    for run in expected:
        assert got[run] == expected[run], run


def test_figures_hparams_and_purge_step_match_pytorch(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def figure(i):
        fig = plt.figure(figsize=(2, 1.5), dpi=50)
        plt.plot([0, 1, 2], [i, 2 * i, i])
        return fig

    def log(lib, w):
        w.add_figure("fig", figure(1), 1)
        w.add_figure("figs", [figure(2), figure(3)], 2)
        w.add_hparams({"lr": 0.1, "bs": 32, "opt": "sgd", "flag": True, "none": None, "t": lib.tensor([0.5])},
                      {"hparam/acc": 0.9}, hparam_domain_discrete={"opt": ["sgd", "adam"], "bs": [32, 64]},
                      run_name="trial")
    got, expected = _both(tmp_path, log)
    assert got == expected
    for lib in (torch, ember):
        from torch.utils.tensorboard import SummaryWriter as TorchWriter
        d = str(tmp_path / ("purge_" + lib.__name__))
        with (TorchWriter if lib is torch else SummaryWriter)(d, purge_step=5) as w:
            w.add_scalar("x", 1.0, 5)
        assert len(_events(d)["."]) == 4                  # file version, file version at 5, session start, scalar
    assert _events(str(tmp_path / "purge_ember")) == _events(str(tmp_path / "purge_torch"))


def test_embeddings_write_pytorchs_files(tmp_path):
    rng = np.random.default_rng(1)
    mat = rng.standard_normal((9, 4)).astype(np.float32)
    images = rng.random((9, 3, 5, 5)).astype(np.float32)
    for lib in (torch, ember):
        from torch.utils.tensorboard import SummaryWriter as TorchWriter
        with (TorchWriter if lib is torch else SummaryWriter)(str(tmp_path / lib.__name__)) as w:
            w.add_embedding(lib.tensor(mat), metadata=list("abcdefghi"), label_img=lib.tensor(images), tag="a/b")
            w.add_embedding(lib.tensor(mat), metadata=[[i, i % 2] for i in range(9)], metadata_header=["i", "odd"],
                            global_step=3)
    files = sorted(os.path.relpath(p, tmp_path / "torch") for p in glob.glob(str(tmp_path / "torch" / "**" / "*"),
                                                                             recursive=True)
                   if os.path.isfile(p) and "tfevents" not in p)
    assert "projector_config.pbtxt" in files and "00000/a%2fb/sprite.png" in files
    for f in files:
        assert (tmp_path / "ember" / f).read_bytes() == (tmp_path / "torch" / f).read_bytes(), f


def test_event_accumulator_reads_every_kind_back(tmp_path):
    class Net(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = ember.nn.Linear(4, 3)
            self.seq = ember.nn.Sequential(ember.nn.ReLU(), ember.nn.Linear(3, 2), ember.nn.BatchNorm1d(2))

        def forward(self, x):
            if x.shape[0] > 1:                              # Python control flow: the trace runs real tensors
                x = x * 1.0
            return self.seq(self.fc(x)) * 2

    net = Net().train()
    with SummaryWriter(str(tmp_path)) as w:
        w.add_scalar("loss", 0.5, 1)
        w.add_histogram("h", ember.randn(100), 1)
        w.add_image("img", ember.rand(3, 4, 4), 1)
        w.add_text("t", "hello", 1)
        w.add_graph(net, ember.randn(5, 4))
    assert net.training                                     # traced in eval mode, then restored
    ea = EventAccumulator(str(tmp_path), size_guidance={"tensors": 0})
    ea.Reload()
    tags = ea.Tags()
    assert tags["scalars"] == ["loss"] and tags["histograms"] == ["h"] and tags["images"] == ["img"]
    assert tags["graph"] and tags["run_metadata"] == ["step1"] and "t/text_summary" in tags["tensors"]
    assert ea.Scalars("loss")[0].value == 0.5 and ea.Histograms("h")[0].histogram_value.num == 100
    assert ea.Images("img")[0].width == 4
    assert ea.Tensors("t/text_summary")[0].tensor_proto.string_val == [b"hello"]
    nodes = {n.name: n for n in ea.Graph().node}
    linear = nodes["Net/Linear[fc]/addmm"]
    assert linear.op == "aten::addmm" and list(linear.input) == ["Net/Linear[fc]/bias/bias", "Net/mul",
                                                                  "Net/Linear[fc]/t"]
    assert nodes["Net/Linear[fc]/weight/weight"].op == "prim::GetAttr"
    assert nodes["Net/Sequential[seq]/ReLU[0]/relu"].op == "aten::relu"
    assert nodes["Net/Sequential[seq]/BatchNorm1d[2]/running_var/running_var"].op == "prim::GetAttr"
    assert nodes["Net/mul"].op == "aten::mul" and list(nodes["Net/mul"].input)[0] == "input/x"
    shape = nodes["output/output.1"].attr["_output_shapes"].list.shape[0]
    assert [d.size for d in shape.dim] == [5, 2]


def test_writer_lifetime_and_default_log_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_exp")
    assert w.get_logdir().startswith("runs" + os.sep) and w.get_logdir().endswith("_exp")
    w.add_scalar("a", 1.0, 0)
    w.flush()
    assert len(_events(w.get_logdir())["."]) == 2
    w.close()
    w.close()                                               # a second close is harmless
    w.add_scalar("a", 2.0, 1)                               # and a later add opens a new file
    w.close()
    assert len(glob.glob(os.path.join(w.get_logdir(), "events.out.tfevents.*"))) == 2
    with pytest.raises(TypeError, match="hparam_dict and metric_dict should be dictionary"):
        w.add_hparams([], {})
    with pytest.raises(AssertionError, match="Tensor should contain one element"):
        w.add_scalar("v", ember.ones(3))
    with pytest.raises(ValueError, match="The input has no element"):
        w.add_histogram("e", np.array([]))
    w.close()


def test_audio_boxes_mesh_and_onnx_graphs_match_pytorch(tmp_path, capsys):
    rng = np.random.default_rng(3)
    sound = np.sin(np.linspace(0, 40, 800)).astype(np.float32)
    img = rng.random((3, 32, 40)).astype(np.float32)
    boxes = np.array([[2, 3, 20, 25], [10, 5, 38, 30]], dtype=np.float32)
    verts = rng.random((1, 6, 3)).astype(np.float32)
    faces = np.array([[[0, 1, 2], [3, 4, 5]]], dtype=np.int32)
    colors = rng.integers(0, 255, (1, 6, 3)).astype(np.uint8)
    onnx = pytest.importorskip("onnx")
    model_path = str(tmp_path / "m.onnx")
    ember.onnx.export(ember.nn.Sequential(ember.nn.Linear(3, 2), ember.nn.ReLU()), ember.randn(1, 3), model_path)

    def log(lib, w):
        w.add_audio("sound", lib.tensor(sound), 1, sample_rate=8000)
        w.add_image_with_boxes("boxed", lib.tensor(img), lib.tensor(boxes), 1, labels=["cat", "dog"])
        w.add_image_with_boxes("boxed_nolabel", lib.tensor(img), lib.tensor(boxes), 2, labels="one label only")
        w.add_mesh("mesh", lib.tensor(verts), colors=lib.tensor(colors), faces=lib.tensor(faces),
                   config_dict={"camera": {"cls": "PerspectiveCamera"}}, global_step=1)
        w.add_onnx_graph(model_path)
    got, expected = _both(tmp_path, log)
    capsys.readouterr()                                     # PyTorch prints the ONNX names it reads
    assert got == expected
    assert onnx.load(model_path).graph.node


def test_video_is_an_animated_gif(tmp_path):
    from PIL import Image
    clips = ember.rand(3, 5, 3, 8, 10)                      # 3 clips of 5 frames, padded to 4, in a row (PyTorch)
    with SummaryWriter(str(tmp_path)) as w:
        w.add_video("clip", clips, 1, fps=10)
    ea = EventAccumulator(str(tmp_path))
    ea.Reload()
    event = ea.Images("clip")[0]
    gif = Image.open(__import__("io").BytesIO(event.encoded_image_string))
    assert gif.format == "GIF" and gif.n_frames == 5 and gif.size == (40, 8) == (event.width, event.height)
    assert gif.info["duration"] == 100
