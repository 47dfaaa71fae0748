"""``torch.distributed.checkpoint.default_planner``: not implemented in ember yet."""
from ember.distributed._not_yet import Refused


class DefaultLoadPlanner(Refused):
    _name = "DefaultLoadPlanner (torch.distributed.checkpoint)"


class DefaultSavePlanner(Refused):
    _name = "DefaultSavePlanner (torch.distributed.checkpoint)"
