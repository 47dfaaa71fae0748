"""``ember.utils.data`` (mirrors ``torch/utils/data``): datasets, samplers, collation and the DataLoader."""
from ember.utils.data import dataloader  # noqa: F401
from ember.utils.data._utils.collate import default_collate, default_convert
from ember.utils.data._utils.worker import get_worker_info
from ember.utils.data.dataloader import DataLoader
from ember.utils.data.dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset,
                                      TensorDataset, random_split)
from ember.utils.data.distributed import DistributedSampler
from ember.utils.data.sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                                      WeightedRandomSampler)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
           "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset",
           "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "default_collate", "default_convert",
           "get_worker_info", "random_split"]
