"""Summary protocol buffers for each kind of data TensorBoard shows (``torch/utils/tensorboard/summary.py``): the
values, plugin names and layouts are PyTorch's, so TensorBoard's plugins read them alike."""
from __future__ import annotations

import io
from typing import Any

import numpy as np
from tensorboard.compat.proto.histogram_pb2 import HistogramProto
from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ember.utils.tensorboard._convert import convert_to_HWC, make_np

__all__ = ["scalar", "tensor_proto", "histogram", "histogram_raw", "make_histogram", "image", "make_image", "text",
           "hparams", "pr_curve", "pr_curve_raw", "compute_curve", "custom_scalars", "audio", "image_boxes", "video",
           "mesh"]


def _shape(dims: Any) -> TensorShapeProto:
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(d)) for d in dims])


def _plugin(name: str, content: bytes = b"") -> SummaryMetadata:
    return SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=name, content=content))


def scalar(name: str, tensor: Any, collections: Any = None, new_style: bool = False,
           double_precision: bool = False) -> Summary:
    """One number: ``simple_value`` (or, ``new_style``, a float / double tensor for the scalars plugin)."""
    arr = make_np(tensor).squeeze()
    if arr.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions).             Was given size: "
                             f"{arr.size} and {arr.ndim} dimensions.")
    value = float(arr)
    if new_style:
        proto = (TensorProto(double_val=[value], dtype="DT_DOUBLE") if double_precision
                 else TensorProto(float_val=[value], dtype="DT_FLOAT"))
        return Summary(value=[Summary.Value(tag=name, tensor=proto, metadata=_plugin("scalars"))])
    return Summary(value=[Summary.Value(tag=name, simple_value=value)])


_TENSOR_TYPES = {   # dtype name -> (TensorProto dtype, field)
    "float16": ("DT_HALF", "half_val"), "bfloat16": ("DT_BFLOAT16", "half_val"), "float32": ("DT_FLOAT", "float_val"),
    "float64": ("DT_DOUBLE", "double_val"), "int8": ("DT_INT8", "int_val"), "uint8": ("DT_UINT8", "uint32_val"),
    "int16": ("DT_INT16", "int_val"), "int32": ("DT_INT32", "int_val"), "int64": ("DT_INT64", "int64_val"),
    "bool": ("DT_BOOL", "bool_val"), "complex64": ("DT_COMPLEX64", "scomplex_val"),
    "complex128": ("DT_COMPLEX128", "dcomplex_val")}


def tensor_proto(tag: str, tensor: Any) -> Summary:
    """A whole tensor for the tensor plugin. Half types go in ``half_val`` as PyTorch puts them there: each value's
    float32 bit pattern read as an int32. Complex values go as (re, im) pairs."""
    import ember
    if tensor.numel() * tensor.itemsize >= (1 << 31):
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    name = tensor.dtype.name
    if name not in _TENSOR_TYPES:
        raise ValueError(f"{tag} has unsupported tensor dtype {tensor.dtype}")
    dtype, field = _TENSOR_TYPES[name]
    if field == "half_val":
        bits = tensor.detach().cpu().to(ember.float32).numpy().view(np.int32)
        values: list[Any] = bits.reshape(-1).tolist()
    elif field in ("scomplex_val", "dcomplex_val"):
        flat = tensor.detach().cpu().numpy().reshape(-1)
        values = np.stack([flat.real, flat.imag], 1).reshape(-1).tolist()
    else:
        values = tensor.detach().cpu().numpy().reshape(-1).tolist()
    proto = TensorProto(dtype=dtype, tensor_shape=_shape(tensor.shape), **{field: values})
    return Summary(value=[Summary.Value(tag=tag, metadata=_plugin("tensor"), tensor=proto)])


def make_histogram(values: np.ndarray, bins: Any, max_bins: int | None = None) -> HistogramProto:
    """The histogram of ``values`` over ``bins`` (NumPy's meaning), merged down to ``max_bins`` and cut to the
    buckets between the first and last non-empty one, with one empty bucket kept on the left."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        step = len(counts) // max_bins
        if len(counts) % step:
            counts = np.pad(counts, [[0, step - len(counts) % step]], mode="constant")
        counts = counts.reshape(-1, step).sum(axis=-1)
        merged = np.empty((counts.size + 1,), limits.dtype)
        merged[:-1] = limits[:-1:step]
        merged[-1] = limits[-1]
        limits = merged
    nonempty = np.cumsum(np.greater(counts, 0))
    start, end = (int(i) for i in np.searchsorted(nonempty, [0, nonempty[-1] - 1], side="right"))
    end += 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return HistogramProto(min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
                          sum_squares=values.dot(values), bucket_limit=limits.tolist(), bucket=counts.tolist())


def histogram(name: str, values: Any, bins: Any, max_bins: int | None = None) -> Summary:
    hist = make_histogram(make_np(values).astype(float), bins, max_bins)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def histogram_raw(name: str, min: float, max: float, num: int, sum: float, sum_squares: float,  # noqa: A002
                  bucket_limits: Any, bucket_counts: Any) -> Summary:
    hist = HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares, bucket_limit=bucket_limits,
                          bucket=bucket_counts)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def make_image(tensor: np.ndarray, rescale: float = 1) -> Summary.Image:
    """An H x W x C uint8 array as a PNG image summary (PIL; resized by ``rescale`` with Lanczos)."""
    from PIL import Image
    height, width, channels = tensor.shape
    img = Image.fromarray(tensor).resize((int(width * rescale), int(height * rescale)), Image.Resampling.LANCZOS)
    with io.BytesIO() as out:
        img.save(out, format="PNG")
        encoded = out.getvalue()
    return Summary.Image(height=height, width=width, colorspace=channels, encoded_image_string=encoded)


def image(tag: str, tensor: Any, rescale: float = 1, dataformats: str = "NCHW") -> Summary:
    """An image or a grid of images: uint8 taken as is, anything else as [0, 1] scaled by 255 (clipped)."""
    arr = _to_uint8(convert_to_HWC(make_np(tensor), dataformats))
    return Summary(value=[Summary.Value(tag=tag, image=make_image(arr, rescale=rescale))])


def _to_uint8(arr: np.ndarray) -> np.ndarray:
    """Image values as uint8: uint8 taken as is, anything else as [0, 1] scaled by 255, clipped."""
    scale = 1 if arr.dtype == np.uint8 else 255
    return (arr.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)


def text(tag: str, text: str) -> Summary:
    """A (markdown) string for the text plugin, under ``tag + "/text_summary"``."""
    meta = _plugin("text", TextPluginData(version=0).SerializeToString())
    proto = TensorProto(dtype="DT_STRING", string_val=[text.encode(encoding="utf_8")], tensor_shape=_shape([1]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=proto)])


def hparams(hparam_dict: Any = None, metric_dict: Any = None, hparam_domain_discrete: Any = None) -> tuple[
        Summary, Summary, Summary]:
    """The hparams plugin's experiment, session-start and session-end summaries. As in PyTorch, ints, floats (and
    bools, which are ints) are numbers, strings strings, one-element tensors numbers; None values are skipped."""
    import ember
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams.api_pb2 import DataType, Experiment, HParamInfo, MetricInfo, MetricName, Status
    from tensorboard.plugins.hparams.metadata import (EXPERIMENT_TAG, PLUGIN_DATA_VERSION, PLUGIN_NAME,
                                                      SESSION_END_INFO_TAG, SESSION_START_INFO_TAG)
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo
    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    discrete = hparam_domain_discrete or {}
    if not isinstance(discrete, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in discrete.items():
        if k not in hparam_dict or not isinstance(v, list) or not all(isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                            f"hparam_dict[{k}].")
    infos, ssi = [], SessionStartInfo()
    for k, v in hparam_dict.items():
        if v is None:
            continue
        if isinstance(v, (int, float)):
            field, kind = "number_value", "DATA_TYPE_FLOAT64"
        elif isinstance(v, str):
            field, kind = "string_value", "DATA_TYPE_STRING"
        elif isinstance(v, ember.Tensor):
            v, field, kind = make_np(v).reshape(-1)[0], "number_value", "DATA_TYPE_FLOAT64"
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
        setattr(ssi.hparams[k], field, v)
        domain = (struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d}) for d in discrete[k]])
                  if k in discrete and not isinstance(hparam_dict[k], ember.Tensor) else None)
        infos.append(HParamInfo(name=k, type=DataType.Value(kind), domain_discrete=domain))

    def summary(tag: str, **content: Any) -> Summary:
        data = HParamsPluginData(version=PLUGIN_DATA_VERSION, **content)
        return Summary(value=[Summary.Value(tag=tag, metadata=_plugin(PLUGIN_NAME, data.SerializeToString()))])
    experiment = Experiment(hparam_infos=infos, metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    return (summary(EXPERIMENT_TAG, experiment=experiment), summary(SESSION_START_INFO_TAG, session_start_info=ssi),
            summary(SESSION_END_INFO_TAG, session_end_info=SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))))


def compute_curve(labels: np.ndarray, predictions: np.ndarray, num_thresholds: int = 127,
                  weights: Any = None) -> np.ndarray:
    """The pr_curves plugin's 6 x num_thresholds table (true / false positives, true / false negatives, precision,
    recall) at thresholds i / (num_thresholds - 1): predictions bucketed by floor, counts summed from the top."""
    weights = 1.0 if weights is None else weights
    buckets = np.int32(np.floor(predictions * (num_thresholds - 1)))
    positive = labels.astype(np.float64)
    span = (0, num_thresholds - 1)
    tp_b, _ = np.histogram(buckets, bins=num_thresholds, range=span, weights=positive * weights)
    fp_b, _ = np.histogram(buckets, bins=num_thresholds, range=span, weights=(1.0 - positive) * weights)
    tp, fp = np.cumsum(tp_b[::-1])[::-1], np.cumsum(fp_b[::-1])[::-1]
    tn, fn = fp[0] - fp, tp[0] - tp
    precision = tp / np.maximum(1e-7, tp + fp)
    recall = tp / np.maximum(1e-7, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


def _pr_summary(tag: str, data: np.ndarray, num_thresholds: int) -> Summary:
    meta = _plugin("pr_curves", PrCurvePluginData(version=0, num_thresholds=num_thresholds).SerializeToString())
    proto = TensorProto(dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(), tensor_shape=_shape(data.shape[:2]))
    return Summary(value=[Summary.Value(tag=tag, metadata=meta, tensor=proto)])


def pr_curve(tag: str, labels: Any, predictions: Any, num_thresholds: int = 127, weights: Any = None) -> Summary:
    num_thresholds = min(num_thresholds, 127)     # PyTorch's cap (larger values break the plugin's protobuf)
    return _pr_summary(tag, compute_curve(labels, predictions, num_thresholds, weights), num_thresholds)


def pr_curve_raw(tag: str, tp: Any, fp: Any, tn: Any, fn: Any, precision: Any, recall: Any,
                 num_thresholds: int = 127, weights: Any = None) -> Summary:
    return _pr_summary(tag, np.stack((tp, fp, tn, fn, precision, recall)), min(num_thresholds, 127))


def custom_scalars(layout: dict[str, dict[str, list[Any]]]) -> Summary:
    """The custom-scalars plugin's layout: {category: {title: ["Multiline" | "Margin", tags]}}."""
    categories = []
    for category, charts in layout.items():
        items = []
        for title, (kind, tags) in charts.items():
            if kind == "Margin":
                if len(tags) != 3:
                    raise AssertionError("Expected 3 tags for a margin chart")
                series = [layout_pb2.MarginChartContent.Series(value=tags[0], lower=tags[1], upper=tags[2])]
                items.append(layout_pb2.Chart(title=title, margin=layout_pb2.MarginChartContent(series=series)))
            else:
                items.append(layout_pb2.Chart(title=title, multiline=layout_pb2.MultilineChartContent(tag=tags)))
        categories.append(layout_pb2.Category(title=category, chart=items))
    proto = TensorProto(dtype="DT_STRING", string_val=[layout_pb2.Layout(category=categories).SerializeToString()],
                        tensor_shape=_shape([]))
    return Summary(value=[Summary.Value(tag="custom_scalars__config__", tensor=proto,
                                        metadata=_plugin("custom_scalars"))])


def audio(tag: str, tensor: Any, sample_rate: int = 44100) -> Summary:
    """A mono clip in [-1, 1] (clipped, with PyTorch's warning) as a 16-bit WAV."""
    import wave
    arr = make_np(tensor).squeeze()
    if abs(arr).max() > 1:
        print("warning: audio amplitude out of range, auto clipped.")
        arr = arr.clip(-1, 1)
    if arr.ndim != 1:
        raise AssertionError("input tensor should be 1 dimensional.")
    pcm = (arr * np.iinfo(np.int16).max).astype("<i2")
    with io.BytesIO() as out:
        with wave.open(out, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(sample_rate)
            w.writeframes(pcm.data)
        encoded = out.getvalue()
    clip = Summary.Audio(sample_rate=sample_rate, num_channels=1, length_frames=pcm.shape[-1],
                         encoded_audio_string=encoded, content_type="audio/wav")
    return Summary(value=[Summary.Value(tag=tag, audio=clip)])


def _draw_box(image: Any, box: Any, label: str | None) -> Any:
    """A red rectangle (2 px) and, with ``label``, the label on a red band at the box's bottom left."""
    from PIL import ImageDraw, ImageFont
    font = ImageFont.load_default()
    draw = ImageDraw.Draw(image)
    left, top, right, bottom = box
    draw.line([(left, top), (left, bottom), (right, bottom), (right, top), (left, top)], width=2, fill="Red")
    if label:
        x0, y0, x1, y1 = font.getbbox(label)
        width, height = x1 - x0, y1 - y0
        margin = np.ceil(0.05 * height)
        draw.rectangle([(left, bottom - height - 2 * margin), (left + width, bottom)], fill="Red")
        draw.text((left + margin, bottom - height - margin), label, fill="black", font=font)
    return image


def image_boxes(tag: str, tensor_image: Any, tensor_boxes: Any, rescale: float = 1, dataformats: str = "CHW",
                labels: Any = None) -> Summary:
    """An image with boxes (N x 4: xmin, ymin, xmax, ymax, in pixels) drawn on it."""
    from PIL import Image
    img = Image.fromarray(_to_uint8(convert_to_HWC(make_np(tensor_image), dataformats)))
    boxes = make_np(tensor_boxes)
    for i in range(boxes.shape[0]):
        img = _draw_box(img, boxes[i, :4], None if labels is None else labels[i])
    return Summary(value=[Summary.Value(tag=tag, image=make_image(np.asarray(img), rescale=rescale))])


def video(tag: str, tensor: Any, fps: int = 4) -> Summary:
    """A batch of clips (N x T x C x H x W) tiled into one animated GIF, ``fps`` frames a second (PyTorch writes it
    with moviepy; ember with PIL)."""
    from PIL import Image
    arr = make_np(tensor)
    b, t, c, h, w = arr.shape
    if arr.dtype == np.uint8:
        arr = np.float32(arr) / 255.0
    if b & (b - 1):                              # pad the batch to a power of two, as PyTorch does
        arr = np.concatenate((arr, np.zeros((2 ** b.bit_length() - b, t, c, h, w))), axis=0)
    rows = 2 ** ((b.bit_length() - 1) // 2)
    cols = arr.shape[0] // rows
    frames = arr.reshape(rows, cols, t, c, h, w).transpose(2, 0, 4, 1, 5, 3).reshape(t, rows * h, cols * w, c)
    frames = (frames.astype(np.float32) * 255).clip(0, 255).astype(np.uint8)
    images = [Image.fromarray(f if c == 3 else f[..., 0]) for f in frames]
    with io.BytesIO() as out:
        images[0].save(out, format="GIF", save_all=True, append_images=images[1:], duration=int(1000 / fps),
                       loop=0)
        encoded = out.getvalue()
    img = Summary.Image(height=rows * h, width=cols * w, colorspace=c, encoded_image_string=encoded)
    return Summary(value=[Summary.Value(tag=tag, image=img)])


def mesh(tag: str, vertices: Any, colors: Any, faces: Any, config_dict: Any, display_name: str | None = None,
         description: str | None = None) -> Summary:
    """A 3-d mesh for the mesh plugin: vertices (B x N x 3), faces (B x F x 3) and colors (B x N x 3), each a
    float tensor summary with the plugin's metadata."""
    import json

    from tensorboard.plugins.mesh import metadata
    from tensorboard.plugins.mesh.plugin_data_pb2 import MeshPluginData
    config = "{}" if config_dict is None else json.dumps(config_dict, sort_keys=True)
    parts = [(v, kind) for v, kind in ((vertices, MeshPluginData.VERTEX), (faces, MeshPluginData.FACE),
                                       (colors, MeshPluginData.COLOR)) if v is not None]
    components = metadata.get_components_bitmask([kind for _, kind in parts])
    values = []
    for v, kind in parts:
        arr = make_np(v)
        meta = metadata.create_summary_metadata(tag, display_name, kind, components, arr.shape, description,
                                                json_config=config)
        proto = TensorProto(dtype="DT_FLOAT", float_val=arr.reshape(-1).tolist(), tensor_shape=_shape(arr.shape[:3]))
        values.append(Summary.Value(tag=metadata.get_instance_name(tag, kind), tensor=proto, metadata=meta))
    return Summary(value=values)
