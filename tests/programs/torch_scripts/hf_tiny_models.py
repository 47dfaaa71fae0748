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
from transformers import (BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel, LlamaConfig,  # noqa: E402
                          LlamaForCausalLM, T5Config, T5ForConditionalGeneration)

transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()
which, workdir = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
if which == "gpt2":
    m = GPT2LMHeadModel(GPT2Config(vocab_size=100, n_positions=32, n_embd=32, n_layer=2, n_head=2, bos_token_id=0,
                                   eos_token_id=1))
elif which == "bert":
    m = BertForMaskedLM(BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=64, max_position_embeddings=32))
elif which == "llama":
    m = LlamaForCausalLM(LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
                                     bos_token_id=0, eos_token_id=1))
else:
    m = T5ForConditionalGeneration(T5Config(vocab_size=100, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                                            decoder_start_token_id=0, pad_token_id=0, eos_token_id=1))
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
