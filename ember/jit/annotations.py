"""``ember.jit.annotations`` (``torch/jit/annotations.py``): the type names TorchScript annotations use, which
libraries import for their signatures."""
from typing import Any, Dict, List, Optional, Tuple, Union  # noqa: F401

from ember.nn.functional import BroadcastingList1, BroadcastingList2, BroadcastingList3  # noqa: F401

__all__ = ["Any", "Dict", "List", "Optional", "Tuple", "Union", "BroadcastingList1", "BroadcastingList2",
           "BroadcastingList3"]
