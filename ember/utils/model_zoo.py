"""``ember.utils.model_zoo`` (``torch/utils/model_zoo.py``): the old name of the hub's weight loader, which
torchvision and older programs import."""
from ember.hub import load_state_dict_from_url as load_url, tqdm  # noqa: F401
