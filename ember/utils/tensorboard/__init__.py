"""``ember.utils.tensorboard`` (``torch.utils.tensorboard``): :class:`SummaryWriter` writes TensorBoard event files
with the protocol buffers and the event-file writer of the ``tensorboard`` package (the optional extra
``ember[tensorboard]``), so TensorBoard reads them as it reads PyTorch's. Importing this module without that package
raises ImportError, as PyTorch's does."""
import tensorboard

if not hasattr(tensorboard, "__version__"):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")

del tensorboard

from ember.utils.tensorboard.writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "SummaryWriter"]
