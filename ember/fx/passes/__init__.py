"""``torch.fx.passes``: analyses and transformations over fx graphs."""
from ember.fx.passes import shape_prop  # noqa: F401
