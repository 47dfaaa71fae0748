"""``torch.distributed.checkpoint.state_dict``: not implemented in ember yet."""
from ember.distributed._not_yet import Refused, refusing

get_model_state_dict = refusing("get_model_state_dict (torch.distributed.checkpoint)")
set_model_state_dict = refusing("set_model_state_dict (torch.distributed.checkpoint)")
get_optimizer_state_dict = refusing("get_optimizer_state_dict (torch.distributed.checkpoint)")
set_optimizer_state_dict = refusing("set_optimizer_state_dict (torch.distributed.checkpoint)")
get_state_dict = refusing("get_state_dict (torch.distributed.checkpoint)")
set_state_dict = refusing("set_state_dict (torch.distributed.checkpoint)")


class StateDictOptions(Refused):
    _name = "StateDictOptions (torch.distributed.checkpoint)"
