"""``torch.fx.passes``: analyses and transformations over fx graphs."""
from ember.fx.passes import graph_drawer, shape_prop, split_module  # noqa: F401
