"""Helpers of the fx passes: subgraph matching (``matcher_utils``), partition checks (``fuser_utils``)."""
