"""The leaderboard: `cs336 evaluate` (cs336_basics/evaluate.py) gives one number per run, every
time; `cs336 submit --checkpoint` puts the run's entry in the zip (cs336_basics/leaderboard.py);
the grader (staff/grader/leaderboard.py) evaluates it in the sandbox with the submission's model
code and gets the same number; hostile entries (a pickle, a huge tensor, a configuration that does
not match its weights, a corrupt file, a model that raises) get a message and no entry."""

import io
import json
import math
import pickle
import shutil
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
import safetensors.torch
import torch

from cs336_basics import REPO
from cs336_basics import evaluate as E
from cs336_basics import leaderboard as L
from cs336_basics.cli import main
from cs336_basics.nn.modules.transformer_lm import TransformerLM, TransformerLMConfig
from cs336_basics.staff.grader.config import load_config
from cs336_basics.staff.grader.grade import GradeReport
from cs336_basics.staff.grader.leaderboard import Entry, evaluate_entry
from cs336_basics.staff.grader.report import to_gradescope
from cs336_basics.submit import write_submission
from cs336_basics.train.config import TrainConfig
from cs336_basics.train.loop import train
from cs336_basics.train.run_dir import load_trained

CONFIG = load_config()
GRADER = replace(CONFIG, limits=replace(CONFIG.limits, total_s=3600))
PWNED = "cs336-leaderboard-pickle-ran"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """4 steps of a tiny model on the course corpus, at the evaluation's context length."""
    out = tmp_path_factory.mktemp("leaderboard") / "run"
    train(TrainConfig(out_dir=str(out), vocab_size=300, context_length=E.EVAL_CONTEXT, d_model=32, num_layers=1,
                      num_heads=2, d_ff=64, batch_size=4, max_steps=4, warmup_steps=1, eval_interval=4,
                      eval_batches=1, checkpoint_interval=4, threads=1, progress=False, device="cpu"))  # fmt: skip
    return out


@pytest.fixture(scope="module")
def entry(run_dir) -> dict[str, bytes]:
    return L.entry_files(run_dir)


def _evaluate(run_dir: Path) -> E.Evaluation:
    model, tokenizer = load_trained(run_dir)
    return E.evaluate_model(model, tokenizer, model.config.vocab_size)


def _zip(tmp_path: Path, files: dict[str, bytes]) -> Path:
    out, _, _ = write_submission(REPO, tmp_path / "submission.zip", files)
    return out


def test_leaderboard_evaluate_gives_the_same_number_every_run(run_dir, capsys):
    assert main(["evaluate", "--checkpoint", str(run_dir)]) == 0
    first = capsys.readouterr().out
    assert main(["evaluate", "--checkpoint", str(run_dir)]) == 0
    assert capsys.readouterr().out == first and "nats/token" in first and "bits/byte" in first


def test_leaderboard_bits_per_byte_is_the_summed_loss_over_the_predicted_bytes():
    vocab = {0: b"a", 1: b"bc", 2: b"def"}
    logits = torch.zeros(1, 2, 3)  # uniform: ln 3 nats per token
    result = E.summarise([E.token_losses(logits, torch.tensor([[1, 2]]))], [torch.tensor([[1, 2]])], vocab)
    assert result.nats_per_token == pytest.approx(math.log(3), rel=1e-15)
    assert result.bits_per_byte == pytest.approx(2 * math.log2(3) / 5, rel=1e-15)


def test_leaderboard_windows_predict_every_token_after_the_first_once():
    ids = list(range(2 * 128 + 40))
    parts = E.batches(ids, vocab_size=1000)
    targets = torch.cat([y.flatten() for _, y in parts]).tolist()
    assert targets == ids[1:]
    assert all(x.shape[-1] <= 128 and (y - x == 1).all() for x, y in parts)


def test_leaderboard_submit_puts_the_entry_in_the_zip(run_dir, tmp_path):
    assert main(["submit", "--checkpoint", str(run_dir), "--no-tests", "-o", str(tmp_path / "s.zip")]) == 0
    names = zipfile.ZipFile(tmp_path / "s.zip").namelist()
    assert {f"leaderboard/{n}" for n in (L.CONFIG, L.VOCAB, L.MERGES, L.WEIGHTS)} <= set(names)
    assert not any(n.startswith("leaderboard/") and n.endswith(".pt") for n in names)


def test_leaderboard_grader_entry_equals_cs336_evaluate_within_agreement(run_dir, entry, tmp_path):
    # two processes, whose kernels may round the float32 logits otherwise: equal within
    # E.AGREEMENT, and shown alike (the leaderboard's values and message, cs336 evaluate's line)
    expected = _evaluate(run_dir)
    got = evaluate_entry(_zip(tmp_path, entry), GRADER)
    pairs = [(got.nats_per_token, expected.nats_per_token), (got.bits_per_byte, expected.bits_per_byte)]
    assert all(E.agree(a, b) for a, b in pairs), (pairs, got.message)
    assert [b["value"] for b in got.gradescope()] == [float(E.shown(b)) for _, b in pairs]
    assert f"validation loss {E.shown(expected.nats_per_token)} nats/token" in got.message


def test_leaderboard_results_json_carries_the_entry_as_shown():
    report = GradeReport("s", [], {}, leaderboard=Entry(3.25, 1.123456789, "leaderboard: ..."))
    board = to_gradescope(report)["leaderboard"]
    assert [(b["name"], b["value"], b["order"]) for b in board] == [
        ("validation loss (nats/token)", 3.25, "asc"), ("bits per byte", 1.1235, "asc")]  # fmt: skip
    assert "leaderboard" not in to_gradescope(GradeReport("s", [], {}, leaderboard=Entry(None, None, "no entry")))


def test_leaderboard_agreement_is_far_below_the_last_shown_decimal():
    # a loss below 10 nats moves by at most a thousandth of one step of the last shown digit: two
    # evaluations round to different shown digits about once in a thousand, at the most they differ
    assert 10 * E.AGREEMENT <= 10.0 ** -(E.SHOWN_DECIMALS + 3) * (1 + 1e-9)  # (1 + 1e-9): the powers round
    assert E.agree(5.696435988960844, 5.6964359889364635) and not E.agree(5.6964, 5.6965)


class _Pwn:
    def __reduce__(self):
        return (Path.touch, (Path("/tmp") / PWNED,))


def _with(entry: dict, **changes) -> dict:
    return {**entry, **{getattr(L, k): v for k, v in changes.items()}}


def _huge_header(entry: dict) -> bytes:
    """The entry's weights with the embedding declared as 10^12 elements (the file stays small)."""
    raw = entry[L.WEIGHTS]
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + n])
    header["token_embeddings.weight"]["shape"] = [10**6, 10**6]
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + raw[8 + n :]


def _hostile(entry: dict) -> dict[str, tuple[dict, str]]:
    """name: (entry files, what the message must name)"""
    buf = io.BytesIO()
    torch.save({"model": {}, "x": _Pwn()}, buf)
    other = TransformerLM(TransformerLMConfig(300, 128, 48, 1, 2, 64)).state_dict()
    config = entry[L.CONFIG].decode()
    return {
        "pickle": (_with(entry, WEIGHTS=pickle.dumps(_Pwn())), "safetensors"),
        "torch_save_zip": (_with(entry, WEIGHTS=buf.getvalue()), "safetensors"),
        "huge_tensor": (_with(entry, WEIGHTS=_huge_header(entry)), "token_embeddings.weight"),
        "weights_of_another_config": (_with(entry, WEIGHTS=safetensors.torch.save(other)), "shape"),
        "config_of_other_weights": (
            _with(entry, CONFIG=config.replace("num_layers = 1", "num_layers = 2").encode()),
            "missing",
        ),  # fmt: skip
        "huge_config": (_with(entry, CONFIG=config.replace("d_model = 32", "d_model = 4096").encode()), "parameters"),
        "truncated": (_with(entry, WEIGHTS=entry[L.WEIGHTS][:-1000]), "byte range"),
        "not_toml": (_with(entry, CONFIG=b"\x00\xff"), L.CONFIG),
        "oversized_vocab_file": (_with(entry, VOCAB=b" " * (L.MAX_BYTES[L.VOCAB] + 1)), L.VOCAB),
    }


@pytest.mark.parametrize("name", ["pickle", "torch_save_zip", "huge_tensor", "weights_of_another_config",
                                  "config_of_other_weights", "huge_config", "truncated", "not_toml",
                                  "oversized_vocab_file"])  # fmt: skip
def test_leaderboard_hostile_entry_gets_a_message_and_no_entry(entry, name):
    files, named = _hostile(entry)[name]
    with pytest.raises(L.LeaderboardError, match=named):
        L.check_entry(files)
    assert not (Path("/tmp") / PWNED).exists()


def test_leaderboard_grader_gives_a_hostile_entry_a_message_not_a_crash(entry, tmp_path):
    got = evaluate_entry(_zip(tmp_path, _hostile(entry)["pickle"][0]), GRADER)
    assert got.nats_per_token is None and "safetensors" in got.message
    assert not (Path("/tmp") / PWNED).exists()


def _changed_submission(tmp_path: Path, entry: dict, file: str, old: str, new: str) -> Path:
    """A directory submission: the reference package with `old` replaced by `new` in `file`, and the entry."""
    package = tmp_path / "sub" / "cs336_basics"
    shutil.copytree(REPO / "cs336_basics", package, ignore=shutil.ignore_patterns("staff", "__pycache__", "data"))
    text = (package / file).read_text()
    assert old in text
    (package / file).write_text(text.replace(old, new))
    (tmp_path / "sub" / "leaderboard").mkdir()
    for name, data in entry.items():
        (tmp_path / "sub" / "leaderboard" / name).write_bytes(data)
    return tmp_path / "sub"


def test_leaderboard_grader_reports_a_model_that_raises(entry, tmp_path):
    sub = _changed_submission(tmp_path, entry, "nn/modules/transformer_lm.py",
                              "x = self.token_embeddings(in_indices)", "raise RuntimeError('my model is broken')")  # fmt: skip
    got = evaluate_entry(sub, GRADER)
    assert got.nats_per_token is None and "my model is broken" in got.message


def test_leaderboard_grader_refuses_a_model_that_sees_the_tokens_it_predicts(entry, tmp_path):
    sub = _changed_submission(tmp_path, entry, "nn/functional.py",
                              "mask = causal_mask(seq, k.shape[-2], device=x.device) if seq > 1 else None",
                              "mask = None")  # fmt: skip
    got = evaluate_entry(sub, GRADER)
    assert got.nats_per_token is None and "not causal" in got.message


def test_leaderboard_submission_without_entry_says_how_to_add_one(tmp_path):
    got = evaluate_entry(_zip(tmp_path, {}), GRADER)
    assert got.nats_per_token is None and "--checkpoint" in got.message


def test_leaderboard_unreadable_submission_adds_no_leaderboard_line(tmp_path):
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("__init__.py", "")  # no cs336_basics/ package: the grading itself says so
    assert evaluate_entry(bad, GRADER) is None
