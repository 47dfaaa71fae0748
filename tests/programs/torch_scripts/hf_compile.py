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
from transformers import (BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel, LlamaConfig,  # noqa: E402
                          LlamaForCausalLM, T5Config, T5ForConditionalGeneration)

transformers.logging.set_verbosity_error()
which = sys.argv[1]
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
