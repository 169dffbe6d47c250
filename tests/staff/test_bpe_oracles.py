"""The BPE cases' stored outputs against code that is not ours: every train_bpe case's table is
what the recounting trainer (tests/oracles.py) gives on the stored corpus, and every tokenizer
case's output is what Hugging Face tokenizers (Rust) gives with the stored vocabulary and merges."""

import pytest
import torch

from cs336_basics.fixture_io import load_fixture
from cs336_basics.staff.cases import cases_of
from cs336_basics.tokenizer import tensors as T
from tests.oracles import hf_tokenizer, train_bpe_by_recounting

pytestmark = pytest.mark.slow  # second tier: the recounting trainer on every BPE case

# the cases whose output is the merge table, or token ids / code points (other adapters' outputs
# are checks of their own: laziness, ids given to tokens)
TRAIN = [c for c in cases_of("train_bpe") if c.adapter == "run_train_bpe_on_text"]
TOKENIZE = [c for c in cases_of("tokenizer") if c.adapter != "run_tokenizer_encode_iterable_lazily"]


@pytest.mark.parametrize("case", TRAIN, ids=[c.name for c in TRAIN])
def test_train_bpe_case_equals_the_recounting_trainer(case):
    fx = load_fixture(case.name, case.directory)
    kw = fx.kwargs
    vocab, merges = train_bpe_by_recounting(T.tensor_to_text(kw["corpus"]), kw["vocab_size"], kw["special_tokens"])
    assert torch.equal(T.bpe_table(vocab, merges, kw["special_tokens"], kw["vocab_size"]), fx.expected.long())


@pytest.mark.parametrize("case", TOKENIZE, ids=[c.name for c in TOKENIZE])
def test_tokenizer_case_equals_hf_tokenizers(case):
    fx = load_fixture(case.name, case.directory)
    kw = fx.kwargs
    vocab = T.tensors_to_vocab(kw["token_bytes"], kw["token_offsets"])
    hf = hf_tokenizer(vocab, T.tensor_to_merges(kw["merges"], vocab), kw["special_tokens"])
    missing = [t.encode() for t in kw["special_tokens"] or [] if t.encode() not in vocab.values()]
    vocab |= {len(vocab) + i: t for i, t in enumerate(missing)}  # added after the vocabulary, as HF adds them
    if "text" in kw:  # encode and encode_iterable: the ids of the whole text
        expected = T.token_starts(hf.encode(T.tensor_to_text(kw["text"])).ids, vocab, T.tensor_to_bytes(kw["text"]))
    else:
        ids = kw["ids"].tolist()
        text = hf.decode(ids, skip_special_tokens=False)
        expected = T.code_points(text, sum(len(vocab[i]) for i in ids))
    assert torch.equal(expected, fx.expected.long())
