"""``torch.distributed._composable``."""
