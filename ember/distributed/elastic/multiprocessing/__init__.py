"""``ember.distributed.elastic.multiprocessing``."""
from ember.distributed.elastic.multiprocessing import errors  # noqa: F401
