"""`cs336 tokenizer-stats [--vocab-size N] [--documents N] [--text FILE ...] [--run DIR ...]`: trains
a tokenizer with your train_bpe on each corpus (the course corpus's training split, seeded template
stories, each --text file), timing pre-tokenization, counting and merging; then, on documents
sampled from each corpus (the course corpus's validation split), every tokenizer's bytes per token
(the cross-tokenizer table; a `cs336 train` run's tokenizer with --run), its encoding throughput in
bytes per CPU second and the time that gives for 825 GB, and its longest tokens."""

import sys
from dataclasses import dataclass
from pathlib import Path

PILE_BYTES = 825e9  # the Pile (Gao et al. 2020), the handout's example of a large corpus


@dataclass(frozen=True)
class Corpus:
    name: str
    train_text: str  # what its tokenizer is trained on
    docs: list[str]  # the documents measured


def corpora(texts: list[str], max_train_chars: int) -> list[Corpus]:
    import numpy as np

    from cs336_basics.corpus import read_split
    from cs336_basics.tokenizer_stats import measure as M
    from cs336_basics.train.toy_stories import toy_stories

    out = [Corpus("course", read_split("train"), M.documents(read_split("valid"))),
           Corpus("template", toy_stories(np.random.default_rng(0), 600),
                  M.documents(toy_stories(np.random.default_rng(1), 100)))]  # fmt: skip
    for path in map(Path, texts):
        if not path.is_file():
            raise FileNotFoundError(f"--text {str(path)!r}: no such file")
        text = path.read_text(encoding="utf-8")
        cut = len(text) * 9 // 10
        out.append(Corpus(path.stem, text[:cut], M.documents(text[cut:]) or M.documents(text)))
    return [Corpus(c.name, c.train_text[:max_train_chars] if max_train_chars else c.train_text, c.docs) for c in out]


def train_tokenizers(corpora: list[Corpus], vocab_size: int) -> tuple[dict, list[str], dict[str, str]]:
    """({name: Tokenizer}, report lines, {name: why it is short}): one tokenizer per corpus, its
    training timed by phase; a tokenizer short of vocab_size is named in the third with a line
    saying so (phases.short_of_vocabulary)."""
    from cs336_basics.corpus import EOT
    from cs336_basics.tokenizer.tokenizer import Tokenizer
    from cs336_basics.tokenizer_stats.phases import short_of_vocabulary, train_bpe_by_phase

    tokenizers, short, lines = {}, {}, [f"train_bpe by phase (CPU seconds, one process; vocab_size {vocab_size}):"]
    for c in corpora:
        run = train_bpe_by_phase(c.train_text, vocab_size, [EOT])
        phases = ", ".join(f"{k} {v:.2f} s" for k, v in run.seconds.items())
        lines.append(f"  {c.name}: {len(c.train_text.encode()):,} bytes, {run.pretokens:,} pre-tokens: {phases}")
        tokenizers[f"{c.name}-bpe"] = Tokenizer(run.vocab, run.merges, [EOT])
        if note := short_of_vocabulary(run):
            short[f"{c.name}-bpe"] = note
            lines.append(f"  {c.name}: {note}")
    return tokenizers, lines, short


def run_tokenizers(run_dirs: list[str]) -> dict:
    from cs336_basics.corpus import EOT
    from cs336_basics.tokenizer.tokenizer import Tokenizer
    from cs336_basics.train import tokens as T

    out = {}
    for d in map(Path, run_dirs):
        if not (d / T.VOCAB).is_file() or not (d / T.MERGES).is_file():
            raise FileNotFoundError(
                f"--run {str(d)!r}: no {T.VOCAB} and {T.MERGES} there (a cs336 train run directory)"
            )
        out[f"run {d.name}"] = Tokenizer.from_files(d / T.VOCAB, d / T.MERGES, [EOT])
    return out


def ratio_lines(
    tokenizers: dict, samples: dict[str, list[str]], documents: int, seed: int, short: dict[str, str]
) -> list[str]:
    """The bytes-per-token table, then a line for each tokenizer short of the requested vocabulary."""
    from cs336_basics.tokenizer_stats import measure as M

    width = max(map(len, tokenizers)) + 2
    lines = [f"bytes per token ({documents} documents sampled per corpus, seed {seed}; rows: tokenizers):",
             " " * width + "".join(f"{name:>12}" for name in samples)]  # fmt: skip
    for name, tok in tokenizers.items():
        lines.append(
            f"{name:<{width}}" + "".join(f"{M.compression_ratio(tok, docs):12.3f}" for docs in samples.values())
        )
    return lines + [f"  note: {name} {note}" for name, note in short.items()]


def speed_lines(tokenizers: dict, samples: dict[str, list[str]], longest: int) -> list[str]:
    """Throughput of a fresh copy of each tokenizer (nothing cached from the ratios), its longest
    tokens other than the special ones."""
    from cs336_basics.tokenizer.tokenizer import Tokenizer
    from cs336_basics.tokenizer_stats import measure as M

    lines = ["encoding throughput on the course documents (bytes per CPU second) and longest tokens:"]
    for name, tok in tokenizers.items():
        speed = M.encode_throughput(Tokenizer(tok.vocab, tok.merges, tok.special_tokens), samples["course"])
        specials = {s.encode("utf-8") for s in tok.special_tokens}
        learned = {i: t for i, t in tok.vocab.items() if t not in specials}
        shown = ", ".join(
            f"{t.decode('utf-8', 'replace')!r} ({len(t)} B)" for _, t in M.longest_tokens(learned, longest)
        )
        lines += [f"  {name}: {speed / 1e6:.3f} MB/s, 825 GB in {PILE_BYTES / speed / 86400:.1f} days",
                  f"    longest: {shown}"]  # fmt: skip
    return lines


def run(args) -> int:
    from cs336_basics.tokenizer_stats import measure as M

    try:
        for name in ("documents", "longest", "vocab_size"):
            if getattr(args, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
        texts = corpora(args.text, args.max_train_chars)
        tokenizers, lines, short = train_tokenizers(texts, args.vocab_size)
        tokenizers.update(run_tokenizers(args.run_dirs))
        samples = {c.name: M.sample_documents(c.docs, args.documents, args.seed) for c in texts}
        lines += ratio_lines(tokenizers, samples, args.documents, args.seed, short) + speed_lines(
            tokenizers, samples, args.longest
        )
    except NotImplementedError as e:
        print(f"cs336 tokenizer-stats: a component it needs is not written yet: {e}", file=sys.stderr)
        return 1
    except (ValueError, FileNotFoundError) as e:
        print(f"cs336 tokenizer-stats: {e}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


def add_command(commands) -> None:
    from cs336_basics.cli_types import input_dir, input_file, int_at_least, non_negative_int, positive_int

    p = commands.add_parser("tokenizer-stats", help="tokenizer experiments: bytes/token, throughput, train_bpe phases")
    p.description = __doc__
    p.add_argument(
        "--vocab-size", type=int_at_least(257), default=2048, help="of each tokenizer trained (default %(default)s)"
    )
    p.add_argument(
        "--documents", type=positive_int, default=10, help="documents sampled per corpus (default %(default)s)"
    )
    p.add_argument("--seed", type=int, default=0, help="of the document sample (default %(default)s)")
    p.add_argument(
        "--text",
        action="append",
        type=input_file,
        default=[],
        help="another corpus: a UTF-8 file of <|endoftext|>-separated documents",
    )
    p.add_argument(
        "--run",
        dest="run_dirs",
        action="append",
        type=input_dir,
        default=[],
        help="a cs336 train run directory whose tokenizer to add",
    )
    p.add_argument(
        "--longest", type=non_negative_int, default=5, help="longest tokens shown per tokenizer (default %(default)s)"
    )
    p.add_argument(
        "--max-train-chars", type=non_negative_int, default=0, help="train on at most this many characters (0: all)"
    )
    p.set_defaults(run=run)
