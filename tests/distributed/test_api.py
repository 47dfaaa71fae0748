"""The parts of ``torch.distributed`` that need no job: placement values against PyTorch's, and the packages ember
does not have yet (DTensor, DeviceMesh, FSDP, distributed checkpoints) refusing clearly when used."""
import pytest

import ember
import ember.distributed as dist
from ember.distributed import fsdp
from ember.distributed.checkpoint import hf_storage
from ember.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor, init_device_mesh
from ember.distributed.tensor.placement_types import Placement, _StridedShard

torch = pytest.importorskip("torch")


def test_placements_are_pytorchs_values():
    from torch.distributed.tensor import Partial as TP, Replicate as TR, Shard as TS
    from torch.distributed.tensor.placement_types import _StridedShard as TSS
    for ours, theirs in [(Shard(0), TS(0)), (Shard(2), TS(2)), (Replicate(), TR()), (Partial(), TP()),
                         (Partial("avg"), TP("avg")), (_StridedShard(0, split_factor=2), TSS(0, split_factor=2))]:
        assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
        assert (ours.is_shard(), ours.is_replicate(), ours.is_partial()) == \
            (theirs.is_shard(), theirs.is_replicate(), theirs.is_partial())
    assert Shard(1) == Shard(1) and hash(Shard(1)) == hash(Shard(1)) and Shard(1) != Shard(0)
    assert Shard(0).is_shard(0) and not Shard(0).is_shard(1) and isinstance(Replicate(), Placement)
    assert fsdp.MixedPrecisionPolicy(param_dtype=ember.bfloat16).param_dtype is ember.bfloat16
    assert fsdp.CPUOffloadPolicy().pin_memory is True


@pytest.mark.parametrize("use", [lambda: DTensor(), lambda: distribute_tensor(ember.ones(2), None, None),
                                 lambda: init_device_mesh("cpu", (2,)), lambda: fsdp.fully_shard(ember.nn.Linear(2, 2)),
                                 lambda: fsdp.FullyShardedDataParallel(ember.nn.Linear(2, 2)),
                                 lambda: hf_storage.HuggingFaceStorageReader("x"),
                                 lambda: dist.checkpoint.save({}, checkpoint_id="x")])
def test_what_ember_lacks_says_so(use):
    with pytest.raises(NotImplementedError, match="is not implemented in ember yet"):
        use()
    assert not isinstance(ember.ones(1), DTensor)
