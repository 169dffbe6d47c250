"""Staff only: `cs336 train`, the given loop (cs336_basics/train/), on the reference: a resumed run
continues bit for bit; bad input is one line on stderr, exit 1, nothing written; under torchrun two
gloo processes (PyTorch's DistributedDataParallel) follow the one-process loss curve, and only
rank 0 writes. The student's test of the same loop is tests/test_train.py."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from cs336_basics.cli import main
from cs336_basics.serialization import read_checkpoint
from cs336_basics.train.loop import resolve_config, train
from cs336_basics.train.toy_stories import toy_stories

pytestmark = pytest.mark.slow  # second tier: training runs, torchrun

REPO = Path(__file__).resolve().parents[2]
TINY = {"vocab_size": "300", "context_length": "32", "d_model": "32", "num_layers": "1", "num_heads": "2",
        "d_ff": "64", "batch_size": "8", "warmup_steps": "2", "eval_batches": "2", "progress": "false",
        "threads": "1", "device": "cpu"}  # fmt: skip
# The largest difference between the logged training losses of 2 gloo processes and of 1 process
# over the first DDP_STEPS steps, measured (tests/staff/README.md, "Training"): 4.8e-7, one float32
# ulp of a loss between 4 and 8, at 9 of the 20 steps (0 at the others). The bound is 10x it.
DDP_STEPS = 20
DDP_LOSS_FLOOR = 4.8e-7


def _corpus(tmp_path: Path, n: int = 200) -> Path:
    path = tmp_path / "stories.txt"
    path.write_text(toy_stories(np.random.default_rng(0), n))
    return path


def _args(settings: dict) -> list[str]:
    return [f"--{k}={v}" for k, v in settings.items()]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _losses(run_dir: Path) -> list[tuple]:
    return [(r["step"], r["train_loss"], r["lr"], r["grad_norm"])
            for r in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines()) if "train_loss" in r]  # fmt: skip


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A run directory of 4 steps of a tiny model."""
    root = tmp_path_factory.mktemp("trained")
    settings = {**TINY, "corpus": _corpus(root), "out_dir": root / "run", "max_steps": "4", "eval_interval": "4"}
    train(resolve_config(None, settings, resume=False))
    return root / "run"


def test_train_resume_continues_bit_for_bit(tmp_path):
    settings = {**TINY, "corpus": _corpus(tmp_path), "max_steps": "20", "cosine_cycle_steps": "20",
                "log_interval": "1", "eval_interval": "10", "checkpoint_interval": "10"}  # fmt: skip
    train(resolve_config(None, {**settings, "out_dir": tmp_path / "whole"}, resume=False))
    train(resolve_config(None, {**settings, "out_dir": tmp_path / "split", "max_steps": "10"}, resume=False))
    train(resolve_config(None, {"out_dir": tmp_path / "split", "max_steps": "20"}, resume=True), resume=True)

    whole, split = (read_checkpoint(tmp_path / name / "checkpoint.pt") for name in ("whole", "split"))
    assert whole["iteration"] == split["iteration"] == 20
    for name, value in whole["model"].items():
        assert torch.equal(value, split["model"][name]), name
    for index, state in whole["optimizer"]["state"].items():
        for key, value in state.items():
            other = split["optimizer"]["state"][index][key]
            assert torch.equal(torch.as_tensor(value), torch.as_tensor(other)), (index, key)
    assert _losses(tmp_path / "whole") == _losses(tmp_path / "split")  # steps 11-20 logged again after resuming


def _bad_input(case: str, tmp_path: Path, trained: Path) -> tuple[list[str], Path, str]:
    """(argv, the directory that must be left as it was, what the message must say)."""
    corpus, out = _corpus(tmp_path), tmp_path / "out"
    fresh = ["train", *_args({**TINY, "out_dir": out, "max_steps": 2})]
    if case == "missing_corpus":
        return [*fresh, f"--corpus={tmp_path / 'nowhere.txt'}"], tmp_path, "no such file"
    if case == "empty_corpus":
        (tmp_path / "empty.txt").write_text("")
        return [*fresh, f"--corpus={tmp_path / 'empty.txt'}"], tmp_path, "holds no text"
    if case == "vocab_below_bytes_and_specials":
        return [*fresh, f"--corpus={corpus}", "--vocab_size=200"], tmp_path, "at least 256 bytes + 1 special"
    run = tmp_path / "run"
    run.mkdir()
    for name, data in _files(trained).items():
        (run / name).write_bytes(data)
    if case == "prompt_longer_than_context":
        return ["generate", "--checkpoint", str(run), "Once upon a time " * 40], run, "context_length=32"
    if case == "resume_with_another_configuration":
        return (
            ["train", "--resume", f"--out_dir={run}", "--d_model=64"],
            run,
            "another configuration (d_model=32 -> 64)",
        )
    assert case == "corrupt_file"
    data = (run / "checkpoint.pt").read_bytes()
    (run / "checkpoint.pt").write_bytes(data[: len(data) // 2])
    return ["train", "--resume", f"--out_dir={run}"], run, "is not a readable checkpoint"


@pytest.mark.parametrize("case", ["missing_corpus", "empty_corpus", "vocab_below_bytes_and_specials",
                                  "prompt_longer_than_context", "resume_with_another_configuration", "corrupt_file"])  # fmt: skip
def test_train_bad_input_is_one_line_exit_1_and_writes_nothing(case, tmp_path, trained, capsys):
    argv, watched, expected = _bad_input(case, tmp_path, trained)
    before = _files(watched)
    capsys.readouterr()
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expected in err, err
    assert _files(watched) == before


SITECUSTOMIZE = """import os, sys
if os.environ.get("WRITE_LOG"):
    _fd = os.open(f"{os.environ['WRITE_LOG']}.{os.environ.get('RANK', 'launcher')}", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    _root = os.environ["WATCHED_DIR"]
    def _hook(event, args):
        if event == "open" and not isinstance(args[0], int):
            mode, flags = args[1], args[2] or 0
            writes = any(c in mode for c in "wax+") if isinstance(mode, str) else bool(flags & (os.O_WRONLY | os.O_RDWR))
        else:
            writes = event in ("os.rename", "os.remove", "os.mkdir", "os.truncate", "shutil.rmtree")
        path = os.fsdecode(args[1] if event == "os.rename" else args[0]) if writes else ""
        if path.startswith(_root):
            os.write(_fd, (event + " " + path + "\\n").encode())
    sys.addaudithook(_hook)
if os.environ.get("THREADS_LOG"):
    import atexit
    def _threads():  # registered first, so it runs after every other atexit handler
        names = [open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")]
        with open(f"{os.environ['THREADS_LOG']}.{os.environ.get('RANK', 'launcher')}", "w") as f:
            f.write("\\n".join(names))
    atexit.register(_threads)
"""


@pytest.fixture(scope="module")
def distributed_run(tmp_path_factory) -> dict:
    """2 gloo processes under torchrun and 1 process, the same settings; the files each rank wrote
    (an audit hook, sys.addaudithook, logs every write under the run directory) and the threads
    each rank still ran when the interpreter began to shut down (after every atexit handler)."""
    root = tmp_path_factory.mktemp("ddp")
    settings = {**TINY, "corpus": _corpus(root), "max_steps": str(DDP_STEPS), "log_interval": "1",
                "eval_interval": "10", "checkpoint_interval": "10", "batch_size": "16"}  # fmt: skip
    (root / "hook").mkdir()
    (root / "hook" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root / "hook"), str(REPO)]), WRITE_LOG=str(root / "writes"),
               WATCHED_DIR=str(root / "two"), THREADS_LOG=str(root / "threads"))  # fmt: skip
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "-m", "cs336_basics", "train", *_args({**settings, "out_dir": root / "two"})]  # fmt: skip
    done = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    train(resolve_config(None, {**settings, "out_dir": root / "one"}, resume=False))
    writes = {rank: (root / f"writes.{rank}").read_text().splitlines() for rank in ("0", "1")}
    threads = {rank: (root / f"threads.{rank}").read_text().splitlines() for rank in ("0", "1")}
    return {"one": root / "one", "two": root / "two", "writes": writes, "threads": threads}


def test_train_two_gloo_processes_follow_the_one_process_loss_curve(distributed_run):
    one, two = _losses(distributed_run["one"]), _losses(distributed_run["two"])
    assert [r[0] for r in two] == [r[0] for r in one] == list(range(1, DDP_STEPS + 1))  # one record per step: rank 0's
    worst = max(abs(a[1] - b[1]) for a, b in zip(one, two, strict=True))
    assert worst <= 10 * DDP_LOSS_FLOOR, f"2 processes' training loss differs from 1 process's by up to {worst:.3g}"


def test_train_only_rank_0_writes_under_torchrun(distributed_run):
    rank0, rank1 = distributed_run["writes"]["0"], distributed_run["writes"]["1"]
    assert rank1 == []
    written = {Path(line.split(" ", 1)[1]).name for line in rank0}
    assert {"checkpoint.pt", "metrics.jsonl", "loss.png", "config.toml", "train.u16"} <= written, written


def test_train_under_torchrun_stops_every_collective_thread_before_the_interpreter_exits(distributed_run):
    """A gloo worker thread that outlives the interpreter's shutdown can free a tensor Python owns,
    which needs the GIL: the rank then aborts ("terminate called without an active exception")."""
    for rank, names in distributed_run["threads"].items():
        assert [name for name in names if "gloo" in name] == [], f"rank {rank} still runs {names}"


def test_train_run_writes_exactly_the_run_files(trained):
    from cs336_basics.train.run_dir import RUN_FILES

    assert sorted(p.name for p in trained.iterdir()) == sorted(RUN_FILES)


def test_train_run_files_are_each_named_in_the_handout_readme():
    from cs336_basics.train.run_dir import RUN_FILES

    section = (REPO / "handout" / "README.md").read_text().split("\n## Training your model\n")[1].split("\n## ")[0]
    assert [name for name in RUN_FILES if f"`{name}`" not in section] == []


def test_train_help_lists_every_setting_with_its_default_and_meaning(capsys):
    from dataclasses import fields

    from cs336_basics.train.config import TrainConfig, _toml_value

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    lines = capsys.readouterr().out.splitlines()
    for f in fields(TrainConfig):
        line = next((x for x in lines if x.split() and x.split()[0] == f"--{f.name}={_toml_value(f.default)}"), None)
        assert line is not None and len(line.split()) > 1, f"{f.name}: {line!r}"


@pytest.mark.parametrize("where", ["command line", "config file"])
def test_train_old_eps_setting_is_refused_naming_its_new_name(where, tmp_path, capsys):
    config = tmp_path / "run.toml"
    config.write_text("eps = 1e-5\n")
    args = ["--eps=1e-5"] if where == "command line" else ["--config", str(config)]
    assert main(["train", *args, f"--out_dir={tmp_path / 'run'}"]) == 1
    assert "'eps' is now called 'adamw_eps'" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_train_norm_eps_reaches_the_model_and_the_optimizer_keeps_its_own_eps():
    from cs336_basics.train.config import load_config

    config = load_config(overrides={"norm_eps": "1e-3", "adamw_eps": "1e-6"})
    assert config.model_config().eps == 1e-3 and config.adamw_eps == 1e-6
