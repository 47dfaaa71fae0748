"""ember.onnx.export: models exported to ONNX pass the checker and run in onnxruntime with ember's outputs (within
1e-4), also at other batch and sequence lengths along dynamic axes; the API's options; the errors."""
import io
import math

import numpy as np
import pytest

import ember

onnx = pytest.importorskip("onnx", reason="the optional extra: pip install onnx onnxruntime")
ort = pytest.importorskip("onnxruntime", reason="the optional extra: pip install onnx onnxruntime")
nn = ember.nn


class Block(nn.Module):
    def __init__(self, c_in, c, stride):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c_in, c, 3, stride, 1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, 1, 1, bias=False), nn.BatchNorm2d(c)
        self.down = (nn.Sequential(nn.Conv2d(c_in, c, 1, stride, bias=False), nn.BatchNorm2d(c))
                     if stride != 1 or c_in != c else None)

    def forward(self, x):
        y = self.b2(self.c2(ember.relu(self.b1(self.c1(x)))))
        return ember.relu(y + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 7, 2, 3, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        self.layers = nn.Sequential(Block(16, 16, 1), Block(16, 32, 2), Block(32, 64, 2))
        self.pool, self.fc = nn.AdaptiveAvgPool2d((1, 1)), nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(ember.flatten(self.pool(self.layers(self.stem(x))), 1))


class Attention(nn.Module):
    def __init__(self, d, heads, block):
        super().__init__()
        self.heads, self.qkv, self.proj = heads, nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.register_buffer("mask", ember.tril(ember.ones(block, block)).view(1, 1, block, block))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in self.qkv(x).split(C, dim=2))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.heads))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        y = nn.functional.softmax(att, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


class GPT(nn.Module):
    def __init__(self, vocab=40, d=16, heads=2, block=12):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(block, d)
        self.ln1, self.attn, self.ln2 = nn.LayerNorm(d), Attention(d, heads, block), nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.lnf, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

    def forward(self, ids):
        x = self.tok(ids) + self.pos(ember.arange(ids.shape[1]))
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return self.head(self.lnf(x))


class Bag(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.fc = nn.Embedding(50, 8, padding_idx=0), nn.Linear(8, 2)

    def forward(self, ids):
        return self.fc(self.emb(ids).mean(1))


def _with_statistics(model):
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.normal_()
            m.running_var.uniform_(0.5, 2.0)
    return model


def _models():
    ember.manual_seed(0)
    cnn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(8, 8, 3, stride=2), nn.AvgPool2d(1), nn.Flatten(), nn.Linear(8 * 3 * 3, 10))
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, batch_first=True), 2)
    return {
        "mlp": (nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3)),
                lambda b, t: ember.randn(b, 8), {0: "batch"}),
        "cnn": (_with_statistics(cnn), lambda b, t: ember.randn(b, 3, 16, 16), {0: "batch"}),
        "resnet": (_with_statistics(ResNet()), lambda b, t: ember.randn(b, 3, 32, 32), {0: "batch"}),
        "gpt": (GPT(), lambda b, t: ember.randint(0, 40, (b, t)), {0: "batch", 1: "seq"}),
        "lstm": (nn.LSTM(4, 8, 2, batch_first=True), lambda b, t: ember.randn(b, t, 4), {0: "batch", 1: "seq"}),
        "gru": (nn.GRU(4, 8, bidirectional=True), lambda b, t: ember.randn(t, b, 4), {0: "seq", 1: "batch"}),
        "transformer_encoder": (enc, lambda b, t: ember.randn(b, t, 16), {0: "batch", 1: "seq"}),
        "embedding": (Bag(), lambda b, t: ember.randint(0, 50, (b, t)), {0: "batch", 1: "seq"}),
    }


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flat(o)]
    return [out]


def _check_runs(model, data, path_or_bytes):
    sess = ort.InferenceSession(path_or_bytes, providers=["CPUExecutionProvider"])
    model.eval()
    for b, t in ((2, 5), (3, 7), (1, 9)):
        x = data(b, t)
        with ember.no_grad():
            expected = _flat(model(x))
        got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.shape == tuple(e.shape)
            np.testing.assert_allclose(g, e.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", list(_models()))
def test_models_export_and_run_in_onnxruntime(name, tmp_path):
    model, data, axes = _models()[name]
    model.train()                                     # export switches to eval (TrainingMode.EVAL) and back
    path = tmp_path / f"{name}.onnx"
    program = ember.onnx.export(model, (data(2, 5),), str(path), input_names=["input"],
                                dynamic_axes={"input": axes})
    assert model.training and isinstance(program, ember.onnx._exporter.ONNXProgram)
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    assert proto.opset_import[0].version == 18 and [i.name for i in proto.graph.input] == ["input"]
    dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert {a: dims[a].dim_param for a in axes} == axes
    _check_runs(model, data, str(path))


def test_legacy_exporter_options_and_file_objects():
    model, data, axes = _models()["gpt"]
    buf = io.BytesIO()
    assert ember.onnx.export(model, data(2, 4), buf, dynamo=False, input_names=["ids"], output_names=["logits"],
                             dynamic_axes={"ids": [0, 1], "logits": {0: "b"}}) is None
    proto = onnx.load_from_string(buf.getvalue())
    assert proto.opset_import[0].version == 20 and proto.graph.output[0].name == "logits"
    assert proto.graph.input[0].type.tensor_type.shape.dim[1].dim_param == "ids_dynamic_axes_2"
    assert proto.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "b"
    _check_runs(model, data, buf.getvalue())
    buf2 = io.BytesIO()                               # opset 17 has no Gelu: written out with Erf
    ember.onnx.export(model, data(2, 4), buf2, opset_version=17, input_names=["ids"], dynamic_axes={"ids": [0, 1]})
    assert "Erf" in {n.op_type for n in onnx.load_from_string(buf2.getvalue()).graph.node}
    _check_runs(model, data, buf2.getvalue())


def test_parameters_are_named_initializers_or_inputs():
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)).eval()
    proto = ember.onnx.export(model, ember.randn(2, 4)).model_proto
    assert {"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var"} <= \
        {t.name for t in proto.graph.initializer}
    buf = io.BytesIO()
    ember.onnx.export(model, ember.randn(2, 4), buf, export_params=False)
    inputs = [i.name for i in onnx.load_from_string(buf.getvalue()).graph.input]
    assert inputs[0] == "input" and "0.weight" in inputs and not onnx.load_from_string(buf.getvalue()).graph.initializer


def test_onnx_program_runs_and_is_in_onnx_export():
    seen = []

    class M(nn.Module):
        def forward(self, x, y):
            seen.append(ember.onnx.is_in_onnx_export())
            return x * y + 1, x.sum(1)
    x, y = ember.randn(3, 4), ember.randn(3, 4)
    program = ember.onnx.export(M(), (x, y))
    assert seen and all(seen) and not ember.onnx.is_in_onnx_export()
    out = program(x, y)
    np.testing.assert_allclose(out[0], (x * y + 1).numpy(), rtol=1e-6)
    assert [i.name for i in program.model_proto.graph.input] == ["x", "y"]


def test_an_unsupported_operator_names_itself_and_the_source_line():
    class M(nn.Module):
        def forward(self, x):
            return ember.erfinv(x)                    # the line the error must name
    with pytest.raises(ember.onnx.errors.UnsupportedOperatorError) as info:
        ember.onnx.export(M(), ember.randn(3))
    msg = str(info.value)
    assert "'aten::erfinv'" in msg and "opset version 18" in msg
    assert __file__.split("/")[-1] in msg and "in forward" in msg


def test_dynamic_axes_errors():
    model = nn.Linear(4, 2)
    with pytest.raises(ember.onnx.errors.OnnxExporterError, match="neither input nor output names"):
        ember.onnx.export(model, ember.randn(2, 4), dynamic_axes={"nope": {0: "b"}})

    class Branchy(nn.Module):
        def forward(self, x):
            return x * 2 if x.shape[0] < 3 else x.sum(0)
    with pytest.raises(ember.onnx.errors.OnnxExporterError, match="different operators"):
        ember.onnx.export(Branchy(), ember.randn(2, 4), input_names=["x"], dynamic_axes={"x": {0: "b"}})
    with pytest.raises(ember.onnx.errors.OnnxExporterError, match="opset"):
        ember.onnx.export(model, ember.randn(2, 4), opset_version=11)


def test_constant_folding_precomputes_what_only_depends_on_parameters():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.randn(3, 4))

        def forward(self, x):
            return x @ (self.w * 2).t()
    model, x = M(), ember.randn(2, 4)
    folded = ember.onnx.export(model, x).model_proto
    plain = ember.onnx.export(model, x, do_constant_folding=False).model_proto
    assert {n.op_type for n in folded.graph.node} == {"MatMul", "Identity"}
    assert {"Mul", "Transpose"} <= {n.op_type for n in plain.graph.node}
    for proto in (folded, plain):
        sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
        np.testing.assert_allclose(sess.run(None, {"x": x.numpy()})[0], model(x).detach().numpy(), rtol=1e-5)
    linear = ember.onnx.export(nn.Linear(4, 3), x).model_proto       # a linear layer's weight keeps its name
    gemm = next(n for n in linear.graph.node if n.op_type == "Gemm")
    assert list(gemm.input) == ["input", "weight", "bias"] and gemm.attribute[-1].name == "transB"


F = nn.functional
_FUNCTIONS = {
    "silu": F.silu, "leaky_relu": lambda x: F.leaky_relu(x, 0.1), "elu": F.elu, "selu": F.selu,
    "hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid, "softplus": lambda x: F.softplus(x * 10),
    "softplus_beta": lambda x: F.softplus(x, beta=2.0), "mish": F.mish, "logsigmoid": F.logsigmoid,
    "glu": lambda x: F.glu(x, 1), "relu6": F.relu6, "clamp": lambda x: x.clamp(-0.5, 0.5),
    "clamp_min": lambda x: x.clamp(min=0.1), "maximum": lambda x: ember.maximum(x, x.flip(3)),
    "sign_round": lambda x: (x * 3).round() + x.sign(), "pad": lambda x: F.pad(x, (1, 2, 0, 1), value=0.5),
    "crop": lambda x: F.pad(x, (-1, 0, 0, -2)), "flip": lambda x: x.flip(2, 3),
    "index_select": lambda x: x.index_select(1, ember.tensor([0, 2])),
    "gather": lambda x: x.gather(1, ember.zeros(2, 1, 6, 6, dtype=ember.int64)),
    "repeat": lambda x: x.repeat(2, 1, 1, 1, 1), "pixel_shuffle": lambda x: F.pixel_shuffle(x, 2),
    "cumsum": lambda x: x.cumsum(1), "argmax": lambda x: x.argmax(1), "argmax_all": lambda x: x.argmax(),
    "max_dim": lambda x: x.max(1), "min_all": lambda x: x.min(), "topk": lambda x: x.topk(2, 1),
    "std": lambda x: x.std(1), "var_keepdim": lambda x: x.var((2, 3), keepdim=True, correction=0),
    "normalize": lambda x: F.normalize(x, dim=1), "norm_l1": lambda x: ember.linalg.vector_norm(x, 1, dim=(1, 2)),
    "group_norm": lambda x: F.group_norm(x, 2, ember.arange(4.0) / 2 + 0.5, ember.arange(4.0) - 1),
    "instance_norm": F.instance_norm, "up_nearest": lambda x: F.interpolate(x, scale_factor=2),
    "up_bilinear": lambda x: F.interpolate(x, size=(9, 11), mode="bilinear"),
    "up_bilinear_corners": lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
    "adaptive_max": lambda x: F.adaptive_max_pool2d(x, 1), "adaptive_max_3": lambda x: F.adaptive_max_pool2d(x, 3),
    "prelu": lambda x: F.prelu(x, ember.tensor([0.1, 0.2, 0.3, 0.4])), "softmin": lambda x: F.softmin(x, 1),
    "where": lambda x: ember.where(x > 0, x, 0.5), "chunk": lambda x: x.chunk(2, 1)[1],
}


class _Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


@pytest.mark.parametrize("name", list(_FUNCTIONS))
def test_more_operators_match_onnxruntime(name):
    ember.manual_seed(1)
    model = _Fn(_FUNCTIONS[name])
    x = ember.randn(2, 4, 6, 6)
    with ember.no_grad():
        expected = _flat(model(x))
    proto = ember.onnx.export(model, x, input_names=["x"], dynamic_axes={"x": {0: "batch"}}).model_proto
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    got = sess.run(None, {"x": x.numpy()})
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e.numpy(), rtol=1e-4, atol=1e-5)
    x3 = ember.randn(3, 4, 6, 6)                       # another batch size
    with ember.no_grad():
        np.testing.assert_allclose(sess.run(None, {"x": x3.numpy()})[0], _flat(model(x3))[0].numpy(), rtol=1e-4,
                                   atol=1e-5)


def test_dynamo_export_goes_through_ember_export_with_dynamic_shapes():
    """``dynamo=True`` exports the ``ExportedProgram`` of ``ember.export`` (or one given): a ``Dim`` (or a string)
    names the ONNX dimension, the sizes the program computes from it are ``Shape`` / ``Gather`` arithmetic, and
    onnxruntime runs the model at other sizes with ember's numbers."""
    from tests.test_export import gpt_block
    ember.manual_seed(0)
    model = gpt_block(ember).eval()
    T = ember.export.Dim("seq", min=2, max=63)
    program = ember.onnx.export(model, (ember.randn(2, 8, 32),), dynamic_shapes={"x": {1: T}})
    dims = [d.dim_param or d.dim_value for d in program.model_proto.graph.input[0].type.tensor_type.shape.dim]
    assert dims == [2, "seq", 32]
    for t in (3, 17):
        x = ember.randn(2, t, 32)
        np.testing.assert_allclose(program(x)[0], model(x).detach().numpy(), rtol=1e-4, atol=1e-4)
    # an ExportedProgram, and a string naming a dimension
    mlp = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).eval()
    ep = ember.export.export(mlp, (ember.randn(3, 4),), dynamic_shapes=({0: ember.export.Dim("batch")},))
    by_program = ember.onnx.export(ep)
    by_name = ember.onnx.export(mlp, (ember.randn(3, 4),), dynamic_shapes=({0: "batch"},))
    x = ember.randn(7, 4)
    for p in (by_program, by_name):
        assert p.model_proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
        np.testing.assert_allclose(p(x)[0], mlp(x).detach().numpy(), rtol=1e-5, atol=1e-6)
