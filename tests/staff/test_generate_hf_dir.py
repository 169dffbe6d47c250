"""`cs336 generate --hf-dir PATH` on a local Hugging Face checkpoint: a small random
transformers LlamaForCausalLM saved with save_pretrained next to an offline WordLevel
tokenizer.json. Greedy tokens must equal transformers' own greedy generate on the same model;
a missing or corrupt directory must give one line on stderr and exit code 1."""

import argparse
import json
import re

import pytest
import torch

from cs336_basics.generation.generate import generate
from cs336_basics.generation.generate_cli import load
from cs336_basics.staff.cli import main

pytestmark = pytest.mark.slow  # second tier: a transformers checkpoint written and loaded

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

VOCAB = 300
PROMPT = "w3 w14 w15 w92 w65 w35"
NEW_TOKENS = 8


def _save_tokenizer(path) -> None:
    """A WordLevel tokenizer over w0 ... w{VOCAB-1}, split on whitespace: built here, no download."""
    vocab = {f"w{i}": i for i in range(VOCAB)}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="w0"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    tok.decoder = tokenizers.decoders.WordPiece(prefix="##")  # joins words with spaces
    tok.save(str(path / "tokenizer.json"))


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory):
    """(directory, transformers model): 2 layers, hidden 64, 4 heads, 2 key/value heads."""
    path = tmp_path_factory.mktemp("tiny_llama")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, rope_theta=10000.0, rms_norm_eps=1e-5,
        tie_word_embeddings=False, bos_token_id=1, eos_token_id=None, pad_token_id=0,
    )  # fmt: skip
    model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():  # random init is small (std 0.02): scale up so the greedy path is not flat
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(10.0)
    model.save_pretrained(path, safe_serialization=True)
    _save_tokenizer(path)
    return path, model


def _cli_args(path, *extra) -> list[str]:
    return ["generate", PROMPT, "--hf-dir", str(path), "--no-chat", "--max-new-tokens", str(NEW_TOKENS),
            "--temperature", "0", *extra]  # fmt: skip


def _hf_greedy(model, ids: list[int]) -> list[int]:
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                             do_sample=False, pad_token_id=0)  # fmt: skip
    return out[0, len(ids) :].tolist()


def test_hf_dir_greedy_tokens_equal_transformers_generate(hf_dir):
    path, theirs = hf_dir
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    from cs336_basics.generation.generate_cli import add_command

    add_command(sub)
    args = parser.parse_args(_cli_args(path))
    ours, tokenizer, ids, eos = load(args)  # what `cs336 generate --hf-dir` runs
    assert ids == [3, 14, 15, 92, 65, 35] and eos == []
    tokens = list(generate(ours, ids, args.max_new_tokens, args.temperature, args.top_p, eos))
    expected = _hf_greedy(theirs, ids)
    assert len(set(expected)) > 1, "the random model's greedy path is constant: the test would not see a wrong head"
    assert tokens == expected


def test_hf_dir_cli_prints_the_same_ids_and_exits_0(hf_dir, capsys):
    path, theirs = hf_dir
    assert main(_cli_args(path, "--show-ids")) == 0
    err = capsys.readouterr().err
    printed = json.loads(re.search(r"\[ids (\[.*?\])\]", err).group(1))
    assert printed == _hf_greedy(theirs, [3, 14, 15, 92, 65, 35])


def _assert_one_line_error(capsys, code, pattern, status=1):
    out = capsys.readouterr()
    assert code == status
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.err, out.err
    assert re.search(pattern, lines[0]), lines[0]


def test_hf_dir_missing_gives_one_line_and_exit_2(tmp_path, capsys):
    code = main(_cli_args(tmp_path / "nowhere"))  # refused with the command's arguments (cli_types.py)
    _assert_one_line_error(capsys, code, r"^cs336 generate: error: argument --hf-dir: .*nowhere", status=2)


def test_hf_dir_corrupt_weights_give_one_line_and_exit_1(hf_dir, tmp_path, capsys):
    path, _ = hf_dir
    (tmp_path / "config.json").write_text((path / "config.json").read_text())
    (tmp_path / "model.safetensors").write_bytes(b"\x00\x01 not a safetensors file")
    code = main(_cli_args(tmp_path))
    _assert_one_line_error(capsys, code, r"^cs336 generate: cannot read the checkpoint in ")


def test_hf_dir_corrupt_config_gives_one_line_and_exit_1(tmp_path, capsys):
    (tmp_path / "config.json").write_text("{not json")
    code = main(_cli_args(tmp_path))
    _assert_one_line_error(capsys, code, r"^cs336 generate: cannot read the checkpoint in ")
