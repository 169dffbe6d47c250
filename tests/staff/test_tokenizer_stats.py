"""`cs336 tokenizer-stats` (cs336_basics/tokenizer_stats): train_bpe timed by phase gives
train_bpe's own result; bytes per token, throughput and longest tokens by their definitions; the
command runs on the course corpus and on a run directory's tokenizer."""

import itertools

import numpy as np
import pytest

from cs336_basics.cli import main
from cs336_basics.corpus import EOT
from cs336_basics.tokenizer.tokenizer import Tokenizer
from cs336_basics.tokenizer.train_bpe import train_bpe
from cs336_basics.tokenizer_stats import measure as M
from cs336_basics.tokenizer_stats.phases import train_bpe_by_phase
from cs336_basics.train.toy_stories import toy_stories

PHASES = ["pre-tokenization", "counting", "merging"]
SMALL = ["--vocab-size", "300", "--max-train-chars", "20000", "--documents", "3"]


@pytest.mark.parametrize("vocab_size", [257, 300, 420])
def test_tokenizer_stats_phases_give_the_same_vocab_and_merges(tmp_path, vocab_size):
    text = toy_stories(np.random.default_rng(3), 40) + "naïve café " * 5
    (tmp_path / "t.txt").write_text(text, encoding="utf-8")
    run = train_bpe_by_phase(text, vocab_size, [EOT])
    assert (run.vocab, run.merges) == train_bpe(tmp_path / "t.txt", vocab_size, [EOT])
    assert list(run.seconds) == PHASES and all(s >= 0 for s in run.seconds.values())


def test_tokenizer_stats_bytes_per_token_of_a_byte_tokenizer_is_one():
    tok = Tokenizer({b: bytes([b]) for b in range(256)}, [])
    assert M.compression_ratio(tok, ["héllo", "wörld!"]) == 1.0


def test_tokenizer_stats_bytes_per_token_counts_utf8_bytes_over_all_documents():
    vocab = {b: bytes([b]) for b in range(256)} | {256: b"ab", 257: b"abab"}
    tok = Tokenizer(vocab, [(b"a", b"b"), (b"ab", b"ab")])
    # "abab" is 1 token of 4 bytes, "abc" 2 tokens ("ab", "c") of 3 bytes: 7 bytes / 3 tokens
    assert M.compression_ratio(tok, ["abab", "abc"]) == 7 / 3


def test_tokenizer_stats_throughput_is_bytes_per_cpu_second(monkeypatch):
    clock = itertools.count(step=0.25)
    monkeypatch.setattr(M.time, "process_time", lambda: next(clock))
    tok = Tokenizer({b: bytes([b]) for b in range(256)}, [])
    assert M.encode_throughput(tok, ["abc", "é"]) == 5 / 0.25


def test_tokenizer_stats_sample_is_seeded_and_without_repeats():
    docs = [f"doc {i}" for i in range(50)]
    first = M.sample_documents(docs, 10, seed=4)
    assert first == M.sample_documents(docs, 10, seed=4) and len(set(first)) == 10
    assert M.sample_documents(docs[:3], 10) == docs[:3]


def test_tokenizer_stats_longest_tokens_are_longest_first_then_by_id():
    vocab = {0: b"a", 1: b"abc", 2: b"xy", 3: b"zzz"}
    assert M.longest_tokens(vocab, 3) == [(1, b"abc"), (3, b"zzz"), (2, b"xy")]


def test_tokenizer_stats_command_runs_on_the_course_corpus(capsys):
    assert main(["tokenizer-stats", *SMALL]) == 0
    out = capsys.readouterr().out
    assert all(f"{phase} " in out for phase in PHASES)
    rows = [line.split() for line in out.splitlines() if line.startswith(("course-bpe", "template-bpe"))]
    assert [row[0] for row in rows] == ["course-bpe", "template-bpe"] and all(len(row) == 3 for row in rows)
    assert "825 GB in" in out and "longest:" in out


def test_tokenizer_stats_command_adds_a_run_directorys_tokenizer(tmp_path, capsys):
    run = train_bpe_by_phase(toy_stories(np.random.default_rng(0), 30), 280, [EOT])
    Tokenizer(run.vocab, run.merges, [EOT]).to_files(tmp_path / "vocab.json", tmp_path / "merges.txt")
    assert main(["tokenizer-stats", *SMALL, "--run", str(tmp_path)]) == 0
    assert any(line.startswith(f"run {tmp_path.name} ") for line in capsys.readouterr().out.splitlines())


@pytest.mark.parametrize("argv, named", [(["--text", "/no/such.txt"], "/no/such.txt"),
                                         (["--run", "/no/run"], "/no/run"), (["--documents", "0"], "--documents")])  # fmt: skip
def test_tokenizer_stats_bad_input_is_one_line_naming_it(argv, named, capsys):
    assert main(["tokenizer-stats", *SMALL, *argv]) == 2  # refused by its argument's check (cli_types.py)
    err = capsys.readouterr().err
    assert named in err and err.count("\n") == 1


def test_tokenizer_stats_says_when_a_tokenizer_is_short_of_the_vocabulary(capsys):
    """The template stories run out of pairs to merge long before a large vocabulary: the output
    says so on one line, in the training section and under the bytes-per-token table."""
    run = train_bpe_by_phase("the cat sat. the cat ran.", 400, [EOT])
    assert len(run.vocab) < 400 and not run.unmerged_pairs
    assert main(["tokenizer-stats", "--vocab-size", "5000", "--max-train-chars", "20000", "--documents", "3"]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if "requested tokens" in line]
    assert any(line.startswith("  note: template-bpe stopped at ") for line in notes)
    assert all("of 5,000 requested tokens (no pair left to merge" in line for line in notes)
