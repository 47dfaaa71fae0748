"""Tiny randomly initialised Hugging Face models (GPT-2, BERT, Llama, T5; no download) trained for three AdamW
steps, then greedy generation and a save / from_pretrained round trip: run unmodified on PyTorch and, through
``python -m ember``, on ember (tests/test_transformers.py compares what they print).

    python hf_tiny_models.py {gpt2|bert|llama|t5} WORKDIR
"""
import sys
import warnings

warnings.simplefilter("ignore")
import torch  # noqa: E402
import transformers  # noqa: E402
from hf_models import tiny_model  # noqa: E402

transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()
which, workdir = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
m = tiny_model(which)
ids = torch.tensor([[5, 6, 7, 8, 9, 10], [11, 12, 13, 14, 15, 16]])
mask = torch.tensor([[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1]])  # left padding, as batched generation pads
opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
for step in range(3):
    out = m(input_ids=ids, attention_mask=mask, labels=ids)
    out.loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
    opt.step()
    opt.zero_grad()
    print("loss", round(out.loss.item(), 5), "grad norm", round(grad_norm.item(), 4))
m.eval()
with torch.no_grad():
    print("logits", [round(x, 4) for x in out.logits[0, -1, :5].tolist()])
    if which != "bert":
        g = m.generate(ids, attention_mask=mask, max_new_tokens=5, do_sample=False, pad_token_id=0)
        print("generate", g.tolist())
m.save_pretrained(workdir)
m2 = type(m).from_pretrained(workdir)
with torch.no_grad():
    print("reloaded loss", round(m2(input_ids=ids, attention_mask=mask, labels=ids).loss.item(), 5))
