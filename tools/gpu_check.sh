#!/usr/bin/env bash
# The GPU check, one run on a machine with an NVIDIA GPU, CuPy and PyTorch built with CUDA (no install: ember runs
# from this checkout): the CUDA tests on the real device (tests/test_cuda.py: every op-table sample on the GPU
# against the CPU, device moves, training steps; CUDA autocast; checkpoints of device tensors), a probe of
# ember.compile on CUDA tensors, then bench.cuda (the standard workloads, ember against PyTorch on the GPU).
# Logs go to $OUT (default /tmp/gpu_check). Usage: tools/gpu_check.sh [pytest-seconds] [bench-seconds]
set -u
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 CI=true
PY=${PYTHON:-python3}
{ nvidia-smi -L
$PY - <<'PYEOF'
import sys, numpy, numba, cupy, torch
print("python", sys.version.split()[0], "numpy", numpy.__version__, "numba", numba.__version__, "cupy",
      cupy.__version__, "torch", torch.__version__, "cuda", torch.version.cuda)
import ember
print("ember sees", ember.cuda.device_count(), "GPU(s):", ember.cuda.get_device_name(0))
PYEOF
} 2>&1 | tee "$OUT/env.log"
echo "== CUDA tests"
t0=$(date +%s)
timeout "${1:-270}" $PY -m pytest -p no:cacheprovider -o addopts="" -v -n 8 -rf --tb=line --timeout 100 \
    tests/test_cuda.py tests/amp/test_autocast.py::test_cuda_autocast_runs_its_lists_on_a_gpu \
    tests/test_serialization.py::test_map_location tests/aten/test_dispatcher.py::test_one_wrapper_per_op_serves_cpu_and_cuda \
    --junitxml="$OUT/junit.xml" >"$OUT/tests.log" 2>&1
echo "pytest rc $? in $(( $(date +%s) - t0 )) s"
echo "failures by message (count, message):"
grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | sed -E 's/^[^ ]+ [^ ]+ - //' | cut -c1-150 | sort | uniq -c | sort -rn | head -40
if grep -qE "^(FAILED|ERROR)" "$OUT/tests.log"; then grep -E "^(FAILED|ERROR)" "$OUT/tests.log" | cut -c1-200 | head -60
else grep -E " (FAILED|ERROR) " "$OUT/tests.log" | head -60; fi   # (no summary: pytest was stopped)
tail -3 "$OUT/tests.log"
echo "== compile on CUDA"
timeout 45 $PY - <<'PYEOF' 2>&1 | tail -8
import ember, time
ember.manual_seed(0)
m = ember.nn.Sequential(ember.nn.Linear(64, 64), ember.nn.GELU(), ember.nn.Linear(64, 10)).cuda()
x, y = ember.randn(32, 64, device="cuda"), ember.randint(0, 10, (32,), device="cuda")
cm = ember.compile(m)
ref = ember.nn.functional.cross_entropy(m(x), y)
t = time.perf_counter()
loss = ember.nn.functional.cross_entropy(cm(x), y)
loss.backward()
print("compiled on cuda: loss", loss.item(), "eager", ref.item(), "first call", round(time.perf_counter() - t, 2), "s",
      "grad on", m[0].weight.grad.device)
PYEOF
echo "== each bench.cuda workload once in ember (errors shown here; bench.cuda stops at the first)"
timeout 90 $PY - <<'PYEOF' 2>&1 | tail -20
import time, traceback, ember
from bench import cuda
ember.set_default_device("cuda")
for name, w in cuda.BENCH.workloads.items():
    try:
        fn = w.make(ember, False)
        t = time.perf_counter(); fn(); ember.cuda.synchronize(); first = time.perf_counter() - t
        t = time.perf_counter(); fn(); ember.cuda.synchronize()
        print(f"ok   {name}: first call {first:.2f} s, second {1e3 * (time.perf_counter() - t):.1f} ms")
    except Exception as e:
        print(f"FAIL {name}: {type(e).__name__}: {str(e)[:200]} at {traceback.extract_tb(e.__traceback__)[-1][:3]}")
PYEOF
echo "== bench.cuda"
timeout "${2:-150}" $PY -m bench.cuda --rounds 2 --blocks 3 2>&1 | tee "$OUT/bench.log" | tail -25
