"""``SummaryWriter`` (``torch/utils/tensorboard/writer.py``): logs scalars, histograms, images, figures, text, model
graphs, hyperparameters, embeddings and precision-recall curves to event files in ``log_dir``, through the
``tensorboard`` package's asynchronous ``EventFileWriter`` (a queue flushed every ``flush_secs`` or when
``max_queue`` events wait). Directory layout, tags and file names are PyTorch's, so a run logged by ember and one
logged by PyTorch sit side by side in one TensorBoard."""
from __future__ import annotations

import os
import time
from typing import Any

import numpy as np
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from ember.utils.tensorboard import summary as S
from ember.utils.tensorboard._convert import figure_to_image, make_grid, make_np

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Writes events (summaries, graphs) to one event file in ``log_dir``."""

    def __init__(self, log_dir: Any, max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self) -> str:
        return str(self.event_writer.get_logdir())

    def add_event(self, event: Any, step: Any = None, walltime: float | None = None) -> None:
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary: Any, global_step: Any = None, walltime: float | None = None) -> None:
        self.add_event(event_pb2.Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile: Any, walltime: float | None = None) -> None:
        """A (GraphDef, RunMetadata) pair: the graph, then its run metadata tagged "step1", as PyTorch writes them."""
        graph, stepstats = graph_profile
        self.add_event(event_pb2.Event(graph_def=graph.SerializeToString()), None, walltime)
        tagged = event_pb2.TaggedRunMetadata(tag="step1", run_metadata=stepstats.SerializeToString())
        self.add_event(event_pb2.Event(tagged_run_metadata=tagged), None, walltime)

    def flush(self) -> None:
        self.event_writer.flush()

    def close(self) -> None:
        self.event_writer.close()

    def reopen(self) -> None:
        self.event_writer.reopen()


def _default_bins() -> list[float]:
    """TensorFlow's histogram buckets: +-1e-12 growing by 1.1 up to 1e20, and 0."""
    v, buckets = 1e-12, []
    while v < 1e20:
        buckets.append(v)
        v *= 1.1
    return [-b for b in reversed(buckets)] + [0] + buckets


class SummaryWriter:
    """Writes entries to event files in ``log_dir`` (default ``runs/<Mon><DD>_<HH-MM-SS>_<host><comment>``) for
    TensorBoard. ``purge_step`` tells TensorBoard to discard what an earlier, crashed run logged at or after that
    step. Also a context manager that closes the writer."""

    def __init__(self, log_dir: Any = None, comment: str = "", purge_step: int | None = None, max_queue: int = 10,
                 flush_secs: int = 120, filename_suffix: str = "") -> None:
        if not log_dir:
            import socket
            from datetime import datetime
            log_dir = os.path.join("runs", datetime.now().strftime("%b%d_%H-%M-%S") + "_" + socket.gethostname()
                                   + comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer: FileWriter | None = None
        self.all_writers: dict[str, FileWriter] | None = None
        self._get_file_writer()
        self.default_bins = _default_bins()

    def _get_file_writer(self) -> FileWriter:
        """The writer of ``log_dir`` (made again after :meth:`close`)."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                self.file_writer.add_event(Event(step=self.purge_step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self) -> Any:
        return self.log_dir

    # -- scalars, tensors, histograms ----------------------------------------------------------------------------
    def add_scalar(self, tag: str, scalar_value: Any, global_step: Any = None, walltime: float | None = None,
                   new_style: bool = False, double_precision: bool = False) -> None:
        self._get_file_writer().add_summary(S.scalar(tag, scalar_value, new_style=new_style,
                                                     double_precision=double_precision), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict[str, Any], global_step: Any = None,
                    walltime: float | None = None) -> None:
        """Several curves on one chart: each in a run of its own, ``log_dir/<main_tag>_<tag>``, under ``main_tag``."""
        walltime = time.time() if walltime is None else walltime
        logdir = self._get_file_writer().get_logdir()
        assert self.all_writers is not None
        for tag, value in tag_scalar_dict.items():
            run = logdir + "/" + main_tag.replace("/", "_") + "_" + tag
            if run not in self.all_writers:
                self.all_writers[run] = FileWriter(run, self.max_queue, self.flush_secs, self.filename_suffix)
            self.all_writers[run].add_summary(S.scalar(main_tag, value), global_step, walltime)

    def add_tensor(self, tag: str, tensor: Any, global_step: Any = None, walltime: float | None = None) -> None:
        self._get_file_writer().add_summary(S.tensor_proto(tag, tensor), global_step, walltime)

    def add_histogram(self, tag: str, values: Any, global_step: Any = None, bins: Any = "tensorflow",
                      walltime: float | None = None, max_bins: int | None = None) -> None:
        """``bins``: "tensorflow" (exponential buckets around 0), or anything ``numpy.histogram`` takes."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(S.histogram(tag, values, bins, max_bins=max_bins), global_step, walltime)

    def add_histogram_raw(self, tag: str, min: float, max: float, num: int, sum: float,  # noqa: A002
                          sum_squares: float, bucket_limits: Any, bucket_counts: Any, global_step: Any = None,
                          walltime: float | None = None) -> None:
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        self._get_file_writer().add_summary(S.histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits,
                                                            bucket_counts), global_step, walltime)

    # -- images, figures, text ----------------------------------------------------------------------------------
    def add_image(self, tag: str, img_tensor: Any, global_step: Any = None, walltime: float | None = None,
                  dataformats: str = "CHW") -> None:
        """One image: uint8 in [0, 255] or float in [0, 1]; ``dataformats`` CHW, HWC, HW, ..."""
        self._get_file_writer().add_summary(S.image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_images(self, tag: str, img_tensor: Any, global_step: Any = None, walltime: float | None = None,
                   dataformats: str = "NCHW") -> None:
        """A batch of images, tiled 8 to a row."""
        self._get_file_writer().add_summary(S.image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_figure(self, tag: str, figure: Any, global_step: Any = None, close: bool = True,
                   walltime: float | None = None) -> None:
        """A matplotlib figure (or a list of them, tiled), rendered and logged as an image."""
        self.add_image(tag, figure_to_image(figure, close), global_step, walltime,
                       dataformats="NCHW" if isinstance(figure, list) else "CHW")

    def add_text(self, tag: str, text_string: str, global_step: Any = None, walltime: float | None = None) -> None:
        self._get_file_writer().add_summary(S.text(tag, text_string), global_step, walltime)

    def add_image_with_boxes(self, tag: str, img_tensor: Any, box_tensor: Any, global_step: Any = None,
                             walltime: float | None = None, rescale: float = 1, dataformats: str = "CHW",
                             labels: Any = None) -> None:
        """An image with boxes (N x 4: xmin, ymin, xmax, ymax) and optional labels (one per box) drawn on it."""
        if labels is not None:
            labels = [labels] if isinstance(labels, str) else labels
            if len(labels) != box_tensor.shape[0]:
                labels = None
        self._get_file_writer().add_summary(S.image_boxes(tag, img_tensor, box_tensor, rescale=rescale,
                                                          dataformats=dataformats, labels=labels),
                                            global_step, walltime)

    def add_audio(self, tag: str, snd_tensor: Any, global_step: Any = None, sample_rate: int = 44100,
                  walltime: float | None = None) -> None:
        """A mono clip, values in [-1, 1]."""
        self._get_file_writer().add_summary(S.audio(tag, snd_tensor, sample_rate=sample_rate), global_step,
                                            walltime)

    def add_video(self, tag: str, vid_tensor: Any, global_step: Any = None, fps: int = 4,
                  walltime: float | None = None) -> None:
        """Clips (N x T x C x H x W, uint8 or float in [0, 1]) as one animated GIF."""
        self._get_file_writer().add_summary(S.video(tag, vid_tensor, fps), global_step, walltime)

    def add_mesh(self, tag: str, vertices: Any, colors: Any = None, faces: Any = None, config_dict: Any = None,
                 global_step: Any = None, walltime: float | None = None) -> None:
        self._get_file_writer().add_summary(S.mesh(tag, vertices, colors, faces, config_dict), global_step, walltime)

    def add_onnx_graph(self, prototxt: Any) -> None:
        """An ONNX model's graph (a path to it, or a loaded ``ModelProto``) for the Graphs tab: its inputs and
        outputs as ``Variable`` nodes, each ONNX node named by its first output."""
        from ember.utils.tensorboard._graph import onnx_graph
        self._get_file_writer().add_event(event_pb2.Event(graph_def=onnx_graph(prototxt).SerializeToString()))

    # -- graph, hyperparameters, embeddings, curves ---------------------------------------------------------------
    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """The model's graph (traced by ``ember.fx`` through every submodule, shapes from running it on
        ``input_to_model``), nodes named by module scope as PyTorch names them (``Net/Linear[fc]/...``)."""
        from ember.utils.tensorboard._graph import graph
        self._get_file_writer().add_graph(graph(model, input_to_model, verbose))

    def add_hparams(self, hparam_dict: dict[str, Any], metric_dict: dict[str, Any],
                    hparam_domain_discrete: dict[str, list[Any]] | None = None, run_name: str | None = None,
                    global_step: Any = None) -> None:
        """Hyperparameters and the metrics they gave, for the HParams dashboard: written to a run of their own,
        ``log_dir/<run_name>`` (default: the time), with each metric also logged as a scalar there."""
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        exp, ssi, sei = S.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        run_name = run_name or str(time.time())
        with SummaryWriter(log_dir=os.path.join(self._get_file_writer().get_logdir(), run_name)) as w:
            fw = w._get_file_writer()
            for s in (exp, ssi, sei):
                fw.add_summary(s, global_step)
            for k, v in metric_dict.items():
                w.add_scalar(k, v, global_step)

    @staticmethod
    def _encode(raw: str) -> str:
        return raw.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")

    def add_embedding(self, mat: Any, metadata: Any = None, label_img: Any = None, global_step: Any = None,
                      tag: str = "default", metadata_header: Any = None) -> None:
        """Points for the projector: ``tensors.tsv`` (and ``metadata.tsv``, ``sprite.png``) in
        ``log_dir/<step:05d>/<tag>``, listed in ``log_dir/projector_config.pbtxt``."""
        from google.protobuf import text_format
        from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo, ProjectorConfig
        mat = make_np(mat)
        global_step = 0 if global_step is None else global_step
        subdir = f"{str(global_step).zfill(5)}/{self._encode(tag)}"
        logdir = self._get_file_writer().get_logdir()
        save_path = os.path.join(logdir, subdir)
        if os.path.exists(save_path):
            if not os.path.isdir(save_path):
                raise NotADirectoryError(f"Path: `{save_path}` exists, but is a file. Cannot proceed.")
            print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
        else:
            os.makedirs(save_path)
        if metadata is not None:
            if mat.shape[0] != len(metadata):
                raise AssertionError("#labels should equal with #data points")
            if metadata_header:
                if len(metadata_header) != len(metadata[0]):
                    raise AssertionError("len of header must be equal to the number of columns in metadata")
                lines = ["\t".join(str(e) for e in row) for row in [metadata_header] + list(metadata)]
            else:
                lines = [str(x) for x in metadata]
            _write(os.path.join(save_path, "metadata.tsv"), ("\n".join(lines) + "\n").encode())
        if label_img is not None:
            if mat.shape[0] != label_img.shape[0]:
                raise AssertionError("#images should equal with #data points")
            _write(os.path.join(save_path, "sprite.png"), _sprite(make_np(label_img)))
        if mat.ndim != 2:
            raise AssertionError("mat should be 2D, where mat.size(0) is the number of data points")
        _write(os.path.join(save_path, "tensors.tsv"),
               "".join("\t".join(str(v) for v in row.tolist()) + "\n" for row in mat).encode())
        if not hasattr(self, "_projector_config"):
            self._projector_config = ProjectorConfig()
        info = EmbeddingInfo(tensor_name=f"{tag}:{str(global_step).zfill(5)}",
                             tensor_path=os.path.join(subdir, "tensors.tsv"))
        if metadata is not None:
            info.metadata_path = os.path.join(subdir, "metadata.tsv")
        if label_img is not None:
            info.sprite.image_path = os.path.join(subdir, "sprite.png")
            info.sprite.single_image_dim.extend([label_img.shape[3], label_img.shape[2]])
        self._projector_config.embeddings.extend([info])
        _write(os.path.join(logdir, "projector_config.pbtxt"),
               text_format.MessageToString(self._projector_config).encode())

    def add_pr_curve(self, tag: str, labels: Any, predictions: Any, global_step: Any = None,
                     num_thresholds: int = 127, weights: Any = None, walltime: float | None = None) -> None:
        """A precision-recall curve of ``predictions`` (probabilities) against binary ``labels``."""
        self._get_file_writer().add_summary(S.pr_curve(tag, make_np(labels), make_np(predictions), num_thresholds,
                                                       weights), global_step, walltime)

    def add_pr_curve_raw(self, tag: str, true_positive_counts: Any, false_positive_counts: Any,
                         true_negative_counts: Any, false_negative_counts: Any, precision: Any, recall: Any,
                         global_step: Any = None, num_thresholds: int = 127, weights: Any = None,
                         walltime: float | None = None) -> None:
        self._get_file_writer().add_summary(S.pr_curve_raw(tag, true_positive_counts, false_positive_counts,
                                                           true_negative_counts, false_negative_counts, precision,
                                                           recall, num_thresholds, weights), global_step, walltime)

    def add_custom_scalars(self, layout: dict[str, dict[str, list[Any]]]) -> None:
        self._get_file_writer().add_summary(S.custom_scalars(layout))

    def add_custom_scalars_multilinechart(self, tags: list[str], category: str = "default",
                                          title: str = "untitled") -> None:
        self.add_custom_scalars({category: {title: ["Multiline", tags]}})

    def add_custom_scalars_marginchart(self, tags: list[str], category: str = "default",
                                       title: str = "untitled") -> None:
        if len(tags) != 3:
            raise AssertionError(f"Expected 3 tags, got {len(tags)}.")
        self.add_custom_scalars({category: {title: ["Margin", tags]}})

    # -- lifetime ----------------------------------------------------------------------------------------------
    def flush(self) -> None:
        """Write every pending event to disk."""
        for writer in (self.all_writers or {}).values():
            writer.flush()

    def close(self) -> None:
        """Flush and close every event file (a later ``add_*`` opens a new one)."""
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def _sprite(images: np.ndarray) -> bytes:
    """N x C x H x W images in [0, 1] tiled into a square PNG, as the projector's sprite."""
    import io

    from PIL import Image
    grid = make_grid(images, ncols=int(np.ceil(images.shape[0] ** 0.5)))
    square = np.zeros((grid.shape[2], grid.shape[2], 3))
    square[:grid.shape[1]] = grid.transpose(1, 2, 0)
    with io.BytesIO() as buf:
        Image.fromarray(np.uint8((square * 255).clip(0, 255))).save(buf, format="PNG")
        return buf.getvalue()
