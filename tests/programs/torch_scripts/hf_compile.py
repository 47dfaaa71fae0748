"""Tiny Hugging Face models (GPT-2, BERT, Llama, T5; no download) trained for three AdamW steps through
torch.compile next to an uncompiled copy, each step from the same seed: the printed losses of the two must be
equal, and explain() says how the model was captured. Run through ``python -m ember`` by tests/test_transformers.py.

    python hf_compile.py {gpt2|bert|llama|t5} WORKDIR
"""
import copy
import sys
import warnings

warnings.simplefilter("ignore")
import torch  # noqa: E402
import transformers  # noqa: E402
from hf_models import tiny_model  # noqa: E402

transformers.logging.set_verbosity_error()
which = sys.argv[1]
torch.manual_seed(0)
m = tiny_model(which)
ids = torch.tensor([[5, 6, 7, 8, 9, 10], [11, 12, 13, 14, 15, 16]])
mask = torch.tensor([[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1]])
ref = copy.deepcopy(m)
compiled = torch.compile(m)
for model, name in ((compiled, "compiled"), (ref, "eager")):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(3):
        torch.manual_seed(step)
        loss = model(input_ids=ids, attention_mask=mask, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        print(f"{name} step {step} loss {loss.item():.6f}")
explained = torch._dynamo.explain(m)(input_ids=ids, attention_mask=mask, labels=ids)
print(f"graphs {explained.graph_count} breaks {explained.graph_break_count}")
