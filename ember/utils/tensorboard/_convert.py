"""Values to NumPy arrays and images to the layout TensorBoard wants (``torch/utils/tensorboard/_convert_np.py``,
``_utils.py``)."""
from __future__ import annotations

from typing import Any

import numpy as np


def make_np(x: Any) -> np.ndarray:
    """A tensor, an array or a Python / NumPy scalar (as a 1-element array) as a NumPy array; bfloat16 as float16."""
    import ember
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, ember.Tensor):
        if x.device.type == "meta":
            return np.random.randn(1)
        if x.dtype == ember.bfloat16:
            x = x.to(ember.float16)
        return np.asarray(x.detach().cpu().numpy())
    raise NotImplementedError(f"Got {type(x)}, but numpy array or torch tensor are expected.")


def make_grid(images: np.ndarray, ncols: int = 8) -> np.ndarray:
    """N x C x H x W images (C 1 or 3) tiled into one 3 x (H rows) x (W cols) canvas, row by row."""
    if not isinstance(images, np.ndarray):
        raise AssertionError("plugin error, should pass numpy array here")
    if images.shape[1] == 1:
        images = np.concatenate([images, images, images], 1)
    if images.ndim != 4 or images.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    n, _, h, w = images.shape
    ncols = min(n, ncols)
    nrows = -(-n // ncols)
    canvas = np.zeros((3, h * nrows, w * ncols), dtype=images.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[:, y * h:(y + 1) * h, x * w:(x + 1) * w] = images[i]
    return canvas


def convert_to_HWC(tensor: np.ndarray, input_format: str) -> np.ndarray:  # noqa: N802 - PyTorch's name
    """An image (HW, CHW / HWC, ...) or a batch of them (NCHW, ...; tiled by :func:`make_grid`) as H x W x C with
    three channels (grey repeated)."""
    if len(set(input_format)) != len(input_format):
        raise AssertionError(f"You can not use the same dimension shorthand twice.         input_format: "
                             f"{input_format}")
    if len(tensor.shape) != len(input_format):
        raise AssertionError(f"size of input tensor and input format are different.         tensor shape: "
                             f"{tensor.shape}, input_format: {input_format}")
    input_format = input_format.upper()
    if len(input_format) == 4:
        nchw = tensor.transpose([input_format.find(c) for c in "NCHW"])
        return make_grid(nchw).transpose(1, 2, 0)
    if len(input_format) == 3:
        hwc = tensor.transpose([input_format.find(c) for c in "HWC"])
        return np.concatenate([hwc, hwc, hwc], 2) if hwc.shape[2] == 1 else hwc
    if len(input_format) == 2:
        hw = tensor.transpose([input_format.find(c) for c in "HW"])
        return np.stack([hw, hw, hw], 2)
    raise AssertionError(f"size of input tensor and input format are different. tensor shape: {tensor.shape}, "
                         f"input_format: {input_format}")


def figure_to_image(figures: Any, close: bool = True) -> np.ndarray:
    """A matplotlib figure rendered (Agg) to a C x H x W uint8 RGB array, or a list of them to N x C x H x W."""
    import matplotlib.backends.backend_agg as agg
    import matplotlib.pyplot as plt

    def render(figure: Any) -> np.ndarray:
        canvas = agg.FigureCanvasAgg(figure)
        canvas.draw()
        data = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8)
        w, h = figure.canvas.get_width_height()
        chw = np.moveaxis(data.reshape([h, w, 4])[:, :, :3], 2, 0)
        if close:
            plt.close(figure)
        return chw

    if isinstance(figures, list):
        return np.stack([render(f) for f in figures])
    return render(figures)
