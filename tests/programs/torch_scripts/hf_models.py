"""The tiny randomly initialised Hugging Face models the programs here train (no download)."""
from transformers import (BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM,
                          T5Config, T5ForConditionalGeneration)


def tiny_model(which):
    """GPT-2, BERT, Llama or T5 with two layers of width 32 and a vocabulary of 100."""
    if which == "gpt2":
        return GPT2LMHeadModel(GPT2Config(vocab_size=100, n_positions=32, n_embd=32, n_layer=2, n_head=2,
                                          bos_token_id=0, eos_token_id=1))
    if which == "bert":
        return BertForMaskedLM(BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                          intermediate_size=64, max_position_embeddings=32))
    if which == "llama":
        return LlamaForCausalLM(LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
                                            bos_token_id=0, eos_token_id=1))
    return T5ForConditionalGeneration(T5Config(vocab_size=100, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
                                               decoder_start_token_id=0, pad_token_id=0, eos_token_id=1))
