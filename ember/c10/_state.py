"""Process-wide defaults that several layers read (the default factory device)."""
from ember.c10.device import CPU

default_device = CPU
